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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec
import numpy as np

from phalanx.api.models import (
    Affinity,
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
from phalanx.snapshot.schedule import peak_rss_bytes

ZONE = "topology.kubernetes.io/zone"
POD_REQUESTS: dict[str, str | int | float] = {"cpu": "100m", "memory": "500Mi"}


def make_nodes(
    n: int, zones: Sequence[str] = (), allocatable: dict[str, str | int | float] | None = None
) -> list[Node]:
    """node-default (or ``allocatable``); with ``zones``, labelNodePrepareStrategy's topology.kubernetes.io/zone
    values in turn."""
    return [
        Node(
            metadata=ObjectMeta(
                name=f"node-{i:05d}",
                labels={"kubernetes.io/hostname": f"node-{i:05d}"} | ({ZONE: zones[i % len(zones)]} if zones else {}),
            ),
            status=NodeStatus(allocatable=allocatable or {"cpu": "4", "memory": "32Gi", "pods": "110"}),
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


def with_terms(
    pod: Pod,
    labels: dict[str, str],
    spread: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
) -> Pod:
    """The pod with labels and raw topologySpreadConstraints or pod (anti-)affinity, as a template writes them."""
    meta = msgspec.structs.replace(pod.metadata, labels=labels)
    spec = msgspec.structs.replace(
        pod.spec,
        topology_spread_constraints=spread or [],
        affinity=msgspec.convert(affinity, Affinity) if affinity else None,
    )
    return msgspec.structs.replace(pod, metadata=meta, spec=spec)


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
    width: ClassVar[int] = 34  # the name column

    def row(self) -> str:
        c = np.array(self.cycles) * 1000 if self.cycles else np.zeros(1)
        p50, p90, p99 = np.percentile(c, [50, 90, 99])
        return (
            f"{self.name:<{self.width}} {self.pods:>8} {self.seconds:>8.2f} "
            f"{self.pods / self.seconds:>10.0f} "
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


def _measure(name: str, s: Scheduler, measured: list[Pod]) -> Result:
    for pod in measured:
        s.add_pod(pod)
    start = time.perf_counter()
    s.stats.cycle_seconds.clear()
    bound = s.run()
    return Result(name, bound, time.perf_counter() - start, s.stats.cycle_seconds)


def topology_spreading(
    nodes: int = 5000, init: int = 5000, measured: int = 5000, when: str = "DoNotSchedule"
) -> Result:
    """TopologySpreading: init pods are pod-default; measured pods pod-with-topology-spreading (color=blue, zone
    spread, maxSkew 5, DoNotSchedule) over nodes in 3 zones. PreferredTopologySpreading: ScheduleAnyway."""
    spread = [
        {
            "maxSkew": 5,
            "topologyKey": ZONE,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]
    s = Scheduler()
    s.load(make_nodes(nodes, ["moon-1", "moon-2", "moon-3"]), [make_pod(f"init-{i}") for i in range(init)])
    s.run()
    pods = [with_terms(make_pod(f"spreading-{i}"), {"color": "blue"}, spread=spread) for i in range(measured)]
    name = "TopologySpreading" if when == "DoNotSchedule" else "PreferredTopologySpreading"
    return _measure(f"{name} {nodes}/{init}/{measured}", s, pods)


def _pod_affinity_term(kind: str, labels: dict[str, str], key: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key, "namespaces": ["sched-1", "sched-0"]}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def pod_anti_affinity(nodes: int = 5000, init: int = 1000, measured: int = 2000) -> Result:
    """SchedulingPodAntiAffinity: pod-with-pod-anti-affinity (color=green, required hostname anti-affinity to
    color=green in sched-0 and sched-1), init pods in sched-0, measured pods in sched-1: one pod per node."""
    labels = {"color": "green", "name": "test"}
    affinity = _pod_affinity_term("podAntiAffinity", {"color": "green"}, "kubernetes.io/hostname")

    def pod(name: str, ns: str) -> Pod:
        return with_terms(make_pod(name, ns=ns), labels, affinity=affinity)

    s = Scheduler()
    s.load(make_nodes(nodes), [pod(f"init-{i}", "sched-0") for i in range(init)])
    s.run()
    return _measure(
        f"SchedulingPodAntiAffinity {nodes}/{init}/{measured}", s, [pod(f"m-{i}", "sched-1") for i in range(measured)]
    )


def pod_affinity(nodes: int = 5000, init: int = 5000, measured: int = 5000) -> Result:
    """SchedulingPodAffinity: pod-with-pod-affinity (foo="", required zone affinity to foo="" in sched-0 and
    sched-1) over nodes all in zone1; init pods in sched-0, measured pods in sched-1."""
    labels = {"foo": ""}
    affinity = _pod_affinity_term("podAffinity", {"foo": ""}, ZONE)

    def pod(name: str, ns: str) -> Pod:
        return with_terms(make_pod(name, ns=ns), labels, affinity=affinity)

    s = Scheduler()
    s.load(make_nodes(nodes, ["zone1"]), [pod(f"init-{i}", "sched-0") for i in range(init)])
    s.run()
    return _measure(
        f"SchedulingPodAffinity {nodes}/{init}/{measured}", s, [pod(f"m-{i}", "sched-1") for i in range(measured)]
    )


def preferred_pod_affinity(kind: str, labels: dict[str, str], nodes: int = 5000, pods: int = 5000) -> Result:
    """SchedulingPreferredPodAffinity / SchedulingPreferredPodAntiAffinity: pods with a weight-1 preferred term to
    their own labels per hostname (namespaces sched-0 and sched-1); init pods in sched-0, measured in sched-1."""
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
    term["namespaces"] = ["sched-1", "sched-0"]
    affinity = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]}}

    def pod(name: str, ns: str) -> Pod:
        return with_terms(make_pod(name, ns=ns), labels, affinity=affinity)

    s = Scheduler()
    s.load(make_nodes(nodes), [pod(f"init-{i}", "sched-0") for i in range(pods)])
    s.run()
    name = "SchedulingPreferredPodAffinity" if kind == "podAffinity" else "SchedulingPreferredPodAntiAffinity"
    return _measure(f"{name} {nodes}/{pods}/{pods}", s, [pod(f"m-{i}", "sched-1") for i in range(pods)])


SHAPES: dict[str, Callable[[], Result]] = {
    "SchedulingBasic": scheduling_basic,
    "GangScheduling-1000x3": lambda: gang_scheduling(1000, 3),
    "GangScheduling-10x1000": lambda: gang_scheduling(10, 1000),
    "TopologySpreading": topology_spreading,
    "SchedulingPodAntiAffinity": pod_anti_affinity,
    "SchedulingPodAffinity": pod_affinity,
    "PreferredTopologySpreading": lambda: topology_spreading(when="ScheduleAnyway"),
    "SchedulingPreferredPodAffinity": lambda: preferred_pod_affinity("podAffinity", {"foo": ""}),
    "SchedulingPreferredPodAntiAffinity": lambda: preferred_pod_affinity("podAntiAffinity", {"color": "yellow"}),
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
