"""The openb GPU-fragmentation experiment (FGD, ATC'23) on all five traces: unallocated GPU % at 100 % arrival per
policy, mean (sample SD) over seeds 42.., next to the artifact's published means, and what each run cost: CPU and
wall seconds per seed, and the CPU microseconds per pod spent scoring (the GpuShare plugin's Score through the
engine, the policy's evaluation on arrays). Also times one policy evaluation over all 1,213 nodes. Reads
/work/shared/data/openb (or $OPENB_DATA); skips when the data is absent.

    python benchmarks/fragmentation.py [--seeds 10] [--traces default,cpu250] [--policies phalanx,fgd]
        [--runner array|engine|both] [--json out.json]

CPU time, not wall time, is what to compare between versions: on the shared machine the load swings wall time
several fold (the `uptime` load is printed alongside).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phalanx.scheduling.plugins.gpu_share import GpuShare
from phalanx.scheduling.plugins.gpu_share import policy as gs
from phalanx.sim.fragmentation.engine import ENGINE
from phalanx.sim.fragmentation.experiment import PUBLISHED, Runner, RunResult, experiment, target_of
from phalanx.sim.fragmentation.openb import OpenbNodes, OpenbPods, load_nodes, load_pods
from phalanx.sim.fragmentation.reference import REFERENCE

TRACES = ["default", "multigpu50", "gpushare100", "gpuspec25", "cpu250"]


def score_timing(data: Path) -> None:
    """CPU milliseconds for one policy evaluation over every node of the empty cluster (median of 30)."""
    nodes, pods = load_nodes(data / "openb_node_list_gpu_node.csv"), load_pods(data / "openb_pod_list_default.csv")
    target = target_of(pods, nodes)
    slots = int(nodes.gpus.max())
    free = np.where(np.arange(slots)[None, :] < nodes.gpus[:, None], 1000, -1).astype(np.int64)
    view = gs.GpuView(nodes.cpu.copy(), nodes.mem.copy(), free, nodes.model.copy())
    rows = np.arange(len(nodes.names))
    for name in ("phalanx", "fgd", "bestfit"):
        for pod in (gs.GpuPod(3152, 30000, 1, 810), gs.GpuPod(12000, 50000, 1, 1000), gs.GpuPod(4000, 8000, 0, 0)):
            times = []
            for _ in range(30):
                start = time.process_time()
                gs.POLICIES[name](view, pod, rows, target)
                times.append(time.process_time() - start)
            kind = "cpu-only" if pod.num_gpu == 0 else ("sharing" if pod.sharing else "whole")
            ms = 1000 * statistics.median(times)
            print(f"one evaluation {name:8s} {kind:8s} over {len(rows)} nodes: {ms:.2f} ms CPU")


@dataclass
class Cost:
    """What the runs of one (trace, policy, runner) cost."""

    cpu: list[float] = field(default_factory=list)  # per seed, seconds
    wall: list[float] = field(default_factory=list)
    score_cpu: float = 0.0  # seconds, all seeds
    scored: int = 0  # pods scored, all seeds


@contextmanager
def score_meter(runner: str, policy: str, cost: Cost) -> Iterator[None]:
    """Count the CPU time of every score call: the plugin's through the engine, the policy's on arrays."""
    if runner == "engine":
        original = GpuShare.score

        def timed(self: GpuShare, *args: Any) -> Any:
            start = time.process_time()
            try:
                return original(self, *args)
            finally:
                cost.score_cpu += time.process_time() - start
                cost.scored += 1

        GpuShare.score = timed  # type: ignore[method-assign]
        try:
            yield
        finally:
            GpuShare.score = original  # type: ignore[method-assign]
        return
    policy_fn = gs.POLICIES[policy]

    def timed_policy(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return policy_fn(*args, **kwargs)
        finally:
            cost.score_cpu += time.process_time() - start

    gs.POLICIES[policy] = timed_policy
    try:
        yield
    finally:
        gs.POLICIES[policy] = policy_fn


def timed(runner: Runner, costs: dict[str, Cost]) -> Runner:
    def run(nodes: OpenbNodes, pods: OpenbPods, policy: str, seed: int) -> RunResult:
        cost = costs.setdefault(policy, Cost())
        cpu, wall = time.process_time(), time.perf_counter()
        with score_meter(runner.name, policy, cost):
            result = runner.run(nodes, pods, policy, seed)
        cost.cpu.append(time.process_time() - cpu)
        cost.wall.append(time.perf_counter() - wall)
        if runner.name != "engine":
            cost.scored += len(result.node)  # arrays: every attempt is scored (from its shape's cache)
        return result

    return Runner(runner.name, run)


def load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--policies", default="random,bestfit,fgd,phalanx")
    parser.add_argument("--json", default=None, help="Also write every result as JSON to this file.")
    parser.add_argument(
        "--runner",
        choices=["array", "engine", "both"],
        default="array",
        help="engine: through the scheduler with DRA devices; both: each, and check they agree",
    )
    parser.add_argument("--no-eval-timing", action="store_true", help="Skip the one-evaluation timings.")
    args = parser.parse_args()
    data = Path(os.environ.get("OPENB_DATA", "/work/shared/data/openb"))
    if not (data / "openb_node_list_gpu_node.csv").exists():
        print(f"skipped: no openb data in {data} (set OPENB_DATA)")
        return 0
    print(f"load {load()}")
    if not args.no_eval_timing:
        score_timing(data)
    nodes = load_nodes(data / "openb_node_list_gpu_node.csv")
    policies = args.policies.split(",")
    runners = [REFERENCE, ENGINE] if args.runner == "both" else [ENGINE if args.runner == "engine" else REFERENCE]
    results: dict[str, Any] = {}
    rows: list[str] = []
    cost_rows: list[str] = []
    for trace in args.traces.split(","):
        pods = load_pods(data / f"openb_pod_list_{trace}.csv")
        for runner in runners:
            costs: dict[str, Cost] = {}
            result = experiment(nodes, pods, trace, policies, args.seeds, timed(runner, costs))
            results[f"{trace}/{runner.name}"] = result.to_json()
            cells = []
            for p in policies:
                values = result.per_seed(p)
                sd = statistics.stdev(values) if len(values) > 1 else 0.0
                published = PUBLISHED[trace].get(p)
                known = f" [{published:.2f}]" if published else ""
                cells.append(f"{statistics.fmean(values):.2f} ({sd:.2f}){known}")
            rows.append(f"| {trace} | {runner.name} | " + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
            for p in policies:
                c = costs[p]
                per_pod = 1e6 * c.score_cpu / max(c.scored, 1)
                cost_rows.append(
                    f"| {trace} | {runner.name} | {p} | {statistics.fmean(c.cpu):.1f} | {statistics.fmean(c.wall):.1f}"
                    f" | {per_pod:.0f} | {load()} |"
                )
                print(cost_rows[-1], flush=True)
        if args.runner == "both":
            a, e = results[f"{trace}/array"]["perSeed"], results[f"{trace}/engine"]["perSeed"]
            # they agree when the policy picks GPUs inside a node as DRA does (first fit); FGD and random do not
            same = [p for p in policies if a[p] == e[p]]
            print(f"{trace}: engine and array runners give the same figures for {', '.join(same) or 'no policy'}")
    print()
    print("| trace | runner | " + " | ".join(f"{p} mean (sd) [published]" for p in policies) + " |")
    print("|---" * (len(policies) + 2) + "|")
    print("\n".join(rows))
    print()
    print("| trace | runner | policy | CPU s per seed | wall s per seed | score CPU µs per pod | load |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(cost_rows))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
