"""Engine benchmarks shaped like kube-scheduler's scheduler_perf (spec/peers.md §1.3). Engine only, no API I/O.

    python benchmarks/scheduler_perf.py                 # every shape
    python benchmarks/scheduler_perf.py SchedulingBasic # one shape

Prints pods/s of the measured phase, scheduling-cycle latency percentiles and the process's peak RSS.
Nodes follow scheduler_perf's node-default (4 CPU, 32Gi, 110 pods); pods its pod-default (100m CPU, 500Mi).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from phalanx.api.models import (
    Container,
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
)
from phalanx.scheduling.scheduler import Scheduler
from phalanx.scheduling.snapshot import peak_rss_bytes

POD_REQUESTS: dict[str, str | int | float] = {"cpu": "100m", "memory": "500Mi"}


def make_nodes(n: int) -> list[Node]:
    return [
        Node(
            metadata=ObjectMeta(name=f"node-{i:05d}", labels={"kubernetes.io/hostname": f"node-{i:05d}"}),
            status=NodeStatus(allocatable={"cpu": "4", "memory": "32Gi", "pods": "110"}),
        )
        for i in range(n)
    ]


def make_pod(name: str, group: str | None = None, ns: str = "default") -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=PodSpec(
            containers=[
                Container(name="c", resources=ResourceRequirements(requests={"cpu": "100m", "memory": "500Mi"}))
            ],
            scheduling_group=PodSchedulingGroup(pod_group_name=group) if group else None,
        ),
    )


def make_group(name: str, min_count: int, ns: str = "default") -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=PodGroupSpec(scheduling_policy=PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count))),
    )


@dataclass
class Result:
    name: str
    pods: int
    seconds: float
    cycles: list[float]

    def row(self) -> str:
        c = np.array(self.cycles) * 1000 if self.cycles else np.zeros(1)
        p50, p90, p99 = np.percentile(c, [50, 90, 99])
        return (
            f"{self.name:<34} {self.pods:>8} {self.seconds:>8.2f} {self.pods / self.seconds:>10.0f} "
            f"{p50:>8.3f} {p90:>8.3f} {p99:>8.3f} {peak_rss_bytes() / 2**20:>9.0f}"
        )


def scheduling_basic(nodes: int = 5000, init: int = 1000, measured: int = 10000) -> Result:
    s = Scheduler()
    s.load(make_nodes(nodes), [make_pod(f"init-{i}") for i in range(init)])
    s.run()
    for i in range(measured):
        s.add_pod(make_pod(f"measured-{i}"))
    start = time.perf_counter()
    s.stats.cycle_seconds.clear()
    bound = s.run()
    return Result(
        f"SchedulingBasic {nodes}/{init}/{measured}", bound, time.perf_counter() - start, s.stats.cycle_seconds
    )


def gang_scheduling(gangs: int, size: int, nodes: int = 5000) -> Result:
    s = Scheduler()
    s.load(make_nodes(nodes), [])
    for g in range(gangs):
        s.add_pod_group(make_group(f"gang-{g}", size))
        for i in range(size):
            s.add_pod(make_pod(f"gang-{g}-{i}", f"gang-{g}"))
    start = time.perf_counter()
    bound = s.run()
    return Result(
        f"GangScheduling {nodes} nodes {gangs}x{size}", bound, time.perf_counter() - start, s.stats.cycle_seconds
    )


SHAPES: dict[str, Callable[[], Result]] = {
    "SchedulingBasic": scheduling_basic,
    "GangScheduling-1000x3": lambda: gang_scheduling(1000, 3),
    "GangScheduling-10x1000": lambda: gang_scheduling(10, 1000),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", choices=[[], *SHAPES], default=[])
    args = parser.parse_args()
    columns = [("pods", 8), ("seconds", 8), ("pods/s", 10), ("p50 ms", 8), ("p90 ms", 8), ("p99 ms", 8), ("RSS MiB", 9)]
    print(f"{'shape':<34} " + " ".join(f"{h:>{w}}" for h, w in columns))
    for name in args.shapes or list(SHAPES):
        print(SHAPES[name]().row(), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
