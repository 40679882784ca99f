"""The openb GPU-fragmentation experiment (FGD, ATC'23) on all five traces: unallocated GPU % at 100 % arrival per
policy, mean (sample SD) over seeds 42.., next to the artifact's published means. Also times one phalanx score
over all 1,213 nodes. Reads /work/shared/data/openb (or $OPENB_DATA); skips when the data is absent.

    python benchmarks/fragmentation.py [--seeds 10] [--traces default,cpu250] [--policies phalanx,fgd]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from phalanx.scheduling.plugins.gpu_share.policy import POLICIES, GpuPod, GpuView
from phalanx.sim.fragmentation.engine import ENGINE
from phalanx.sim.fragmentation.experiment import PUBLISHED, experiment, target_of
from phalanx.sim.fragmentation.openb import load_nodes, load_pods
from phalanx.sim.fragmentation.reference import REFERENCE

TRACES = ["default", "multigpu50", "gpushare100", "gpuspec25", "cpu250"]


def score_timing(data: Path) -> None:
    """CPU milliseconds for one policy evaluation over every node of the empty cluster (median of 30). CPU time,
    not wall time: the shared machine's load otherwise swings the figure tenfold."""
    nodes, pods = load_nodes(data / "openb_node_list_gpu_node.csv"), load_pods(data / "openb_pod_list_default.csv")
    target = target_of(pods, nodes)
    slots = int(nodes.gpus.max())
    free = np.where(np.arange(slots)[None, :] < nodes.gpus[:, None], 1000, -1).astype(np.int64)
    view = GpuView(nodes.cpu.copy(), nodes.mem.copy(), free, nodes.model.copy())
    rows = np.arange(len(nodes.names))
    for name in ("phalanx", "fgd", "bestfit"):
        for pod in (GpuPod(3152, 30000, 1, 810), GpuPod(12000, 50000, 1, 1000), GpuPod(4000, 8000, 0, 0)):
            times = []
            for _ in range(30):
                start = time.process_time()
                POLICIES[name](view, pod, rows, target)
                times.append(time.process_time() - start)
            kind = "cpu-only" if pod.num_gpu == 0 else ("sharing" if pod.sharing else "whole")
            print(f"score {name:8s} {kind:8s} over {len(rows)} nodes: {1000 * statistics.median(times):.2f} ms CPU")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--policies", default="phalanx,fgd,bestfit,random")
    parser.add_argument("--json", default=None, help="Also write every result as JSON to this file.")
    parser.add_argument(
        "--runner", choices=["array", "engine"], default="array", help="engine: through the scheduler with DRA devices"
    )
    args = parser.parse_args()
    data = Path(os.environ.get("OPENB_DATA", "/work/shared/data/openb"))
    if not (data / "openb_node_list_gpu_node.csv").exists():
        print(f"skipped: no openb data in {data} (set OPENB_DATA)")
        return 0
    score_timing(data)
    nodes = load_nodes(data / "openb_node_list_gpu_node.csv")
    policies = args.policies.split(",")
    print("| trace | " + " | ".join(f"{p} (published)" for p in policies) + " |")
    print("|---" * (len(policies) + 1) + "|")
    results = {}
    for trace in args.traces.split(","):
        start = time.perf_counter()
        pods = load_pods(data / f"openb_pod_list_{trace}.csv")
        runner = ENGINE if args.runner == "engine" else REFERENCE
        result = experiment(nodes, pods, trace, policies, args.seeds, runner)
        results[trace] = result.to_json()
        cells = []
        for p in policies:
            values = result.per_seed(p)
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            published = PUBLISHED[trace].get(p)
            cells.append(f"{statistics.fmean(values):.2f} ({sd:.2f})" + (f" ({published:.2f})" if published else ""))
        print(f"| {trace} | " + " | ".join(cells) + f" |  <!-- {time.perf_counter() - start:.0f} s -->", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
