"""Node events in the engine: the cost of add_node, update_node and delete_node on a loaded cluster, next to the
cost of the full ``load`` they replace (what ``serve`` did on every Node event before).

    python benchmarks/node_events.py [--nodes 5000] [--pods 20] [--events 200]

Each node holds ``--pods`` bound pods. Every event is timed separately; the table prints the median and p99.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import msgspec

from phalanx.api.models import Node, NodeSpec, NodeStatus, Pod, Taint
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.workload import ClusterSpec, Pool, nodes_of


def bound_pods(nodes: list[Node], per_node: int) -> list[Pod]:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    return [
        msgspec.convert(
            {
                **template,
                "metadata": {"name": f"{n.metadata.name}-{k}", "namespace": "default"},
                "spec": {**template["spec"], "nodeName": n.metadata.name},
            },
            Pod,
        )
        for n in nodes
        for k in range(per_node)
    ]


def timed(fn: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--events", type=int, default=200)
    args = parser.parse_args()
    nodes = nodes_of(ClusterSpec([Pool("cpu", args.nodes, {"cpu": "64", "memory": "256Gi", "pods": 110}, 20, 5)]))
    pods = bound_pods(nodes, args.pods)
    s = Scheduler()
    load = timed(lambda: s.load(nodes, pods))
    costs: dict[str, list[float]] = {
        "update_node (allocatable)": [],
        "update_node (taint)": [],
        "delete_node": [],
        "add_node": [],
    }
    for k in range(args.events):
        node = nodes[(k * 7919) % len(nodes)]
        bigger = msgspec.structs.replace(node, status=NodeStatus(allocatable={**node.status.allocatable, "cpu": "65"}))
        tainted = msgspec.structs.replace(node, spec=NodeSpec(taints=[Taint(key="maintenance", effect="NoSchedule")]))
        costs["update_node (allocatable)"].append(timed(s.update_node, bigger))
        costs["update_node (taint)"].append(timed(s.update_node, tainted))
        costs["delete_node"].append(timed(s.delete_node, node.metadata.name))
        costs["add_node"].append(timed(s.add_node, node))
    print(f"nodes {args.nodes}, bound pods {len(pods)}, {args.events} events of each kind")
    print(f"{'operation':<28}{'median ms':>12}{'p99 ms':>12}")
    print(f"{'load (full rebuild)':<28}{load * 1000:>12.1f}{'':>12}")
    for name, values in costs.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"{name:<28}{statistics.median(values) * 1000:>12.3f}{p99 * 1000:>12.3f}")


if __name__ == "__main__":
    main()
