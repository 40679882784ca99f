"""Preemption benchmarks shaped like kube-scheduler's scheduler_perf workload_preemption (GangPreemption*) and
PreemptionAsync workloads (spec/peers.md §1.3). Engine only, no API I/O.

    python benchmarks/preemption_perf.py                       # every shape
    python benchmarks/preemption_perf.py GangPreemptionBasic   # shapes whose name starts with this
    python benchmarks/preemption_perf.py --explain             # as `phalanx schedule` runs: rules named

GangPreemption: 100 nodes (4 CPU) filled by 1,000 low-priority pods (400m each), or by 5 to 50 low-priority gangs
of the same pods; the preemptor is one PodGroup of 100 pods or 10 PodGroups of 10 pods (400m each).
PreemptionAsync: 5,000 nodes filled by 20,000 low-priority pods (900m each), then a stream of high-priority pods
(1 CPU each) that each have to preempt.

The engine runs as serve and simulate run it, with a recorder that does not keep rule names; ``--explain`` gives it
``schedule``'s OutcomeLog, which does, so phalanx's mode also runs v1.37's single-run reprieve to name
``reprieve-by-rerun`` where v1.37 would evict others (scheduling/recorder.py, ``explains``).

Prints ms per preemption decision (the PostFilter work: victim selection, not the cycles around it) and pods/s
of the measured phase (preemptors bound / wall time, including their failed first cycles and the rebinds).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from phalanx.api.models import (
    AllDisruptionMode,
    Container,
    DisruptionMode,
    GangSchedulingPolicy,
    Node,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    PodSchedulingGroup,
    PodSpec,
    ResourceRequirements,
    SingleDisruptionMode,
)
from phalanx.scheduling.outcome import OutcomeLog
from phalanx.scheduling.scheduler import Scheduler
from phalanx.snapshot.schedule import peak_rss_bytes

LOW, HIGH = 0, 1000


def make_nodes(n: int) -> list[Node]:
    return [
        Node(
            metadata=ObjectMeta(name=f"node-{i:05d}", labels={"kubernetes.io/hostname": f"node-{i:05d}"}),
            status=NodeStatus(allocatable={"cpu": "4", "memory": "32Gi", "pods": "110"}),
        )
        for i in range(n)
    ]


def make_pod(name: str, cpu: str, priority: int, group: str | None = None, node: str = "") -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodSpec(
            node_name=node,
            priority=priority,
            containers=[Container(name="c", resources=ResourceRequirements(requests={"cpu": cpu, "memory": "500Mi"}))],
            scheduling_group=PodSchedulingGroup(pod_group_name=group) if group else None,
        ),
    )


def _mode(mode: str | None) -> DisruptionMode | None:
    """The shapes' "PodGroup" / "Pod" as v1.37's disruptionMode union ({all} / {single})."""
    if mode is None:
        return None
    return (
        DisruptionMode(all=AllDisruptionMode()) if mode == "PodGroup" else DisruptionMode(single=SingleDisruptionMode())
    )


def make_group(name: str, min_count: int, priority: int, mode: str | None = None) -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodGroupSpec(
            scheduling_policy=PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count)),
            priority=priority,
            disruption_mode=_mode(mode),
        ),
    )


@dataclass
class Result:
    name: str
    pods: int
    seconds: float
    decisions: list[float]
    evictions: int

    def row(self) -> str:
        d = np.array(self.decisions) * 1000 if self.decisions else np.zeros(1)
        return (
            f"{self.name:<44} {self.pods:>6} {self.evictions:>6} {len(self.decisions):>6} {d.mean():>9.2f} "
            f"{d.max():>9.2f} {self.seconds:>8.2f} {self.pods / self.seconds:>8.0f} {peak_rss_bytes() / 2**20:>8.0f}"
        )


class _Quiet(OutcomeLog):
    explains = False  # type: ignore[misc]


EXPLAIN = False


def _filled(nodes: int, per_node: int, cpu: str, gangs: int = 0, mode: str | None = None) -> Scheduler:
    """``nodes`` nodes each holding ``per_node`` low-priority pods, bound in the snapshot; with ``gangs``, the pods
    belong to that many low-priority PodGroups (members spread over the nodes, as a scheduled gang would be)."""
    s = Scheduler(recorder=OutcomeLog() if EXPLAIN else _Quiet())
    names = [f"node-{i:05d}" for i in range(nodes)]
    total = nodes * per_node
    groups = [make_group(f"low-{g}", max(1, total // gangs), LOW, mode) for g in range(gangs)]
    pods = [
        make_pod(f"low-{i}", cpu, LOW, f"low-{i % gangs}" if gangs else None, names[i % nodes]) for i in range(total)
    ]
    s.load(make_nodes(nodes), pods, groups)
    s.run()
    return s


def _measure(name: str, s: Scheduler, groups: list[PodGroup], pods: list[Pod]) -> Result:
    start = time.perf_counter()
    s.stats.preemption_seconds.clear()
    before = len(s.recorder.evictions)
    for pg in groups:
        s.add_pod_group(pg)
    for pod in pods:
        s.add_pod(pod)
    bound = s.run()
    return Result(
        name, bound, time.perf_counter() - start, s.stats.preemption_seconds, len(s.recorder.evictions) - before
    )


def gang_preemption(gangs: int, preemptors: int, size: int, mode: str | None = None) -> Result:
    s = _filled(100, 10, "400m", gangs, mode)
    groups = [make_group(f"high-{g}", size, HIGH) for g in range(preemptors)]
    pods = [make_pod(f"high-{g}-{i}", "400m", HIGH, f"high-{g}") for g in range(preemptors) for i in range(size)]
    low = f"{gangs} low gangs" + (f" ({mode})" if mode else "") if gangs else "1000 low pods"
    return _measure(f"GangPreemption {low}, {preemptors}x{size}", s, groups, pods)


def preemption_async(measured: int = 1000) -> Result:
    s = _filled(5000, 4, "900m")
    pods = [make_pod(f"high-{i}", "1", HIGH) for i in range(measured)]
    return _measure(f"PreemptionAsync 5000/20000/{measured}", s, [], pods)


SHAPES: dict[str, Callable[[], Result]] = {
    "GangPreemptionBasic/1x100": lambda: gang_preemption(0, 1, 100),
    "GangPreemptionBasic/10x10": lambda: gang_preemption(0, 10, 10),
    "GangPreemptionPodGroups/5/1x100": lambda: gang_preemption(5, 1, 100, "PodGroup"),
    "GangPreemptionPodGroups/50/10x10": lambda: gang_preemption(50, 10, 10, "PodGroup"),
    "GangPreemptionPodGroups/50/pod-mode/10x10": lambda: gang_preemption(50, 10, 10),
    "PreemptionAsync": preemption_async,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", help="shape name prefixes (default: all)")
    parser.add_argument("--explain", action="store_true", help="keep rule names, as `phalanx schedule` does")
    args = parser.parse_args(argv)
    global EXPLAIN
    EXPLAIN = args.explain
    chosen = [k for k in SHAPES if not args.shapes or any(k.startswith(p) for p in args.shapes)]
    print(
        f"{'shape':<44} {'bound':>6} {'evict':>6} {'decis':>6} {'ms/dec':>9} {'max ms':>9} {'seconds':>8} "
        f"{'pods/s':>8} {'RSS MiB':>8}"
    )
    for key in chosen:
        print(SHAPES[key]().row(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
