"""Sweep wall time per backend: the same runs in this process (--workers 1), in 2 local worker processes
(--workers 2) and on a local Ray started here (--ray local), with every backend's results checked identical.

    python benchmarks/sweep_perf.py [--sweep simulate|fragmentation] [--seeds 2] [--jobs 200]
                                    [--runner array|engine] [--backends 1,2,ray]

``simulate``: the default scenario's cluster with --jobs generated jobs, the four built-in policies, --seeds
seeds. ``fragmentation``: the openb default trace (/work/shared/data/openb or $OPENB_DATA; skipped when absent),
four policies, --seeds seeds, --runner. Each Ray sweep starts and stops its own local Ray; that start-up is
timed apart (a one-task sweep) and shown next to the total. Prints a table; never fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from phalanx.sim.runs import SweepPlan, plan
from phalanx.sim.simulator import POLICIES
from phalanx.sim.sweep import Backend, InProcess, LocalProcesses, RayCluster, Task, available_cpus, run_sweep

BACKENDS: dict[str, Backend] = {"1": InProcess(), "2": LocalProcesses(2), "ray": RayCluster("local")}
LABELS = {"1": "--workers 1 (in process)", "2": "--workers 2 (2 processes)", "ray": "--ray local"}


def simulate_tasks(jobs: int, seeds: int) -> list[Any]:
    runs, _ = plan(SweepPlan(jobs=jobs, seeds=seeds, preset="philly"), list(POLICIES))
    return runs


def fragmentation_tasks(seeds: int, engine: bool) -> list[Any] | None:
    from phalanx.sim.fragmentation.engine import ENGINE
    from phalanx.sim.fragmentation.experiment import FIRST_SEED
    from phalanx.sim.fragmentation.openb import load_nodes, load_pods
    from phalanx.sim.fragmentation.reference import REFERENCE
    from phalanx.sim.fragmentation.sweep import FragmentationRun

    data = Path(os.environ.get("OPENB_DATA", "/work/shared/data/openb"))
    if not (data / "openb_node_list_gpu_node.csv").exists():
        return None
    nodes = load_nodes(data / "openb_node_list_gpu_node.csv")
    pods = load_pods(data / "openb_pod_list_default.csv")
    policies = ("phalanx", "fgd", "bestfit", "random")
    runner = ENGINE if engine else REFERENCE
    return [FragmentationRun(nodes, pods, p, FIRST_SEED + k, runner) for p in policies for k in range(seeds)]


def fingerprint(results: Sequence[Any]) -> str:
    """What must be equal across backends, as JSON text: the summaries of simulate runs, the allocation and
    placements of experiment runs."""
    out = []
    for r in results:
        if r is None:
            continue
        if hasattr(r, "summary"):
            out.append(r.summary)
        else:
            out.append((r.policy, r.seed, r.used.tolist(), r.node.tolist()))
    return json.dumps(out)


def measure(tasks: Sequence[Task[Any]], backend: Backend) -> tuple[float, str]:
    start = time.perf_counter()
    outcome = run_sweep(tasks, backend)
    wall = time.perf_counter() - start
    if outcome.failures:
        raise SystemExit(f"runs failed: {outcome.failures}")
    return wall, fingerprint(outcome.results)


class _Nothing:
    label, weight = "start-up", 1

    def run(self, progress: Any) -> None:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", choices=["simulate", "fragmentation"], default="simulate")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--runner", choices=["array", "engine"], default="array")
    parser.add_argument("--backends", default="1,2,ray")
    args = parser.parse_args()
    if args.sweep == "simulate":
        tasks = simulate_tasks(args.jobs, args.seeds)
        what = f"simulate: {len(tasks)} runs ({args.jobs} jobs, 4 policies x {args.seeds} seeds)"
    else:
        found = fragmentation_tasks(args.seeds, args.runner == "engine")
        if found is None:
            print("openb data not found: set OPENB_DATA; skipped")
            return 0
        tasks = found
        what = f"experiment, {args.runner} runner: {len(tasks)} runs (openb default, 4 policies x {args.seeds} seeds)"
    print(what)
    print(f"{available_cpus()} CPU(s) available, load average {os.getloadavg()[0]:.1f}")
    print(f"{'backend':28} {'wall s':>8} {'speed-up':>9} {'load':>5}  same results")
    base: tuple[float, str] | None = None
    for name in args.backends.split(","):
        backend = BACKENDS[name]
        extra, load = "", os.getloadavg()[0]  # the machine's 1-minute load when the measurement started
        if isinstance(backend, RayCluster):
            startup, _ = measure([_Nothing()], backend)
            extra = f"  (of which ~{startup:.1f} s start Ray and stop it)"
        wall, prints = measure(tasks, backend)
        base = base or (wall, prints)
        same = "yes" if prints == base[1] else "NO"
        print(f"{LABELS[name]:28} {wall:8.1f} {base[0] / wall:8.2f}x {load:5.1f}  {same}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
