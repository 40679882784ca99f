"""The cluster state the engine schedules against: the node table plus which pod sits where.

Assumed pods (tentative placements of the current cycle) are accounted exactly like bound ones, so later pods of
the same cycle see them; ``forget`` undoes an assume, ``bind`` makes it permanent. Node events insert or drop a row
and remap the rows kept here (``placement``); the other per-row lists live in the table and move with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from phalanx.api.models import Node
from phalanx.cluster.nodes import AffinityGroup, NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.cluster.resources import ResourceIndex

__all__ = ["ClusterState"]


class ClusterState:
    """Node table and pod placements. Not thread-safe: one engine owns it."""

    def __init__(self, nodes: Sequence[Node], resources: ResourceIndex | None = None) -> None:
        self.table = NodeTable.build(nodes, resources or ResourceIndex())
        self.placement: dict[str, int] = {}  # pod key -> node row, for bound and assumed pods
        self.assumed: set[str] = set()
        self.pods: dict[str, PodInfo] = {}  # pods that occupy a node
        self.node_pods: list[dict[str, PodInfo]] = [{} for _ in range(len(self.table))]  # row -> pods on it
        self.table.node_pods = self.node_pods

    def attach(self, pi: PodInfo) -> None:
        """Give ``pi`` its resource columns in this table (adding columns for resources no node has)."""
        cols = [self.table.ensure_resource(name) for name in pi.requests]
        pi.req_cols = np.array(cols, dtype=np.intp)
        pi.req_vals = np.array(list(pi.requests.values()), dtype=np.int64)

    def node_index(self, name: str) -> int | None:
        return self.table.index.get(name)

    def add_bound(self, pi: PodInfo, node: int) -> None:
        """Account a pod the input already shows on ``node``."""
        self._occupy(pi, node)

    def assume(self, pi: PodInfo, node: int) -> None:
        self._occupy(pi, node)
        self.assumed.add(pi.key)

    def forget(self, pi: PodInfo) -> None:
        """Undo an assume: the pod no longer occupies its node."""
        self.assumed.discard(pi.key)
        self.remove(pi)

    def bind(self, pi: PodInfo) -> None:
        self.assumed.discard(pi.key)

    def remove(self, pi: PodInfo) -> None:
        node = self.placement.pop(pi.key, None)
        if node is None:
            return
        del self.pods[pi.key]
        del self.node_pods[node][pi.key]
        t = self.table
        if pi.affinity_key is not None:
            group = t.affinity_groups[pi.affinity_key]
            group.count[node] -= 1
            group.total -= 1
            if group.total == 0:
                del t.affinity_groups[pi.affinity_key]
        t.requested[node, pi.req_cols] -= pi.req_vals
        t.nonzero_requested[node, 0] -= pi.nonzero_cpu
        t.nonzero_requested[node, 1] -= pi.nonzero_memory
        t.pod_count[node] -= 1
        t.touch(node)
        for port in pi.host_ports:
            t.host_ports[node].remove(port)

    # --- node events ---------------------------------------------------------------------------------------------

    def add_node(self, node: Node) -> int:
        """A node appeared: insert its row (name order) and shift the rows of the pods placed after it."""
        row = self.table.insert(node)
        self._remap(lambda r: r + 1 if r >= row else r)
        return row

    def update_node(self, node: Node) -> bool:
        """A node changed; True when a filter or score may now see it differently (see ``NodeTable.update``)."""
        row = self.table.index[node.metadata.name]
        return self.table.update(row, node)

    def delete_node(self, name: str) -> list[PodInfo]:
        """A node is gone: its pods (bound and assumed) leave the cache with it and are returned, so the caller
        decides their fate; the rows after it shift up."""
        row = self.table.index[name]
        gone = list(self.node_pods[row].values())
        for pi in gone:
            self.forget(pi)
        self.table.delete(row)
        self._remap(lambda r: r - 1 if r > row else r)
        return gone

    def _remap(self, move: Callable[[int], int]) -> None:
        # node_pods is the table's own list, already shifted; only the pod -> row map is ours to fix.
        for key, r in self.placement.items():
            self.placement[key] = move(r)

    def _occupy(self, pi: PodInfo, node: int) -> None:
        if pi.key in self.placement:
            raise RuntimeError(f"pod {pi.key} is already placed on {self.table.names[self.placement[pi.key]]}")
        if len(pi.req_cols) != len(pi.requests):
            self.attach(pi)
        self.placement[pi.key] = node
        self.pods[pi.key] = pi
        self.node_pods[node][pi.key] = pi
        t = self.table
        if pi.affinity_key is not None:
            group = t.affinity_groups.get(pi.affinity_key)
            if group is None:
                group = t.affinity_groups[pi.affinity_key] = AffinityGroup(pi, np.zeros(len(t), dtype=np.int64))
            group.count[node] += 1
            group.total += 1
        t.requested[node, pi.req_cols] += pi.req_vals
        t.nonzero_requested[node, 0] += pi.nonzero_cpu
        t.nonzero_requested[node, 1] += pi.nonzero_memory
        t.pod_count[node] += 1
        t.touch(node)
        t.host_ports[node].extend(pi.host_ports)
