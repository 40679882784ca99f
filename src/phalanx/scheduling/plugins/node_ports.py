"""NodePorts: a pod's host ports must be free on the node (same protocol and port, overlapping host IPs)."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import numpy as np

from phalanx.cluster.nodes import HostPort, NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import PluginSpec
from phalanx.scheduling.reasons import FailureReason, Reason

__all__ = ["NAME", "PLUGIN", "REASON", "NodePorts", "conflicts"]

NAME = "NodePorts"
REASON = Reason("node(s) didn't have free ports for the requested pod ports")
_ANY = "0.0.0.0"


def conflicts(wanted: HostPort, used: HostPort) -> bool:
    """Same protocol and port, and host IPs that overlap (0.0.0.0 overlaps every address)."""
    return wanted[0] == used[0] and wanted[2] == used[2] and (wanted[1] == used[1] or _ANY in (wanted[1], used[1]))


class NodePorts:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = False
    unresolvable: ClassVar[bool] = False

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        selected = range(len(nodes)) if rows is None else rows.tolist()
        mask = np.ones(len(selected), dtype=bool)
        if not pod.host_ports:
            return mask
        for j, i in enumerate(selected):
            used = nodes.host_ports[i]
            if used and any(conflicts(w, u) for w in pod.host_ports for u in used):
                mask[j] = False
        return mask

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        out: Counter[FailureReason] = Counter({REASON: len(rejected)})
        return out


_: FilterPlugin = NodePorts()


def _new(args: None, handle: Handle) -> NodePorts:
    return NodePorts()


PLUGIN: PluginSpec[None] = PluginSpec(
    NAME, _new, frozenset({"filter"}), frozenset({ClusterEvent.POD_DELETE, ClusterEvent.NODE_ADD}), default_weight=0
)
