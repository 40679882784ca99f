"""NodeUnschedulable: nodes marked ``spec.unschedulable`` accept only pods tolerating the unschedulable taint."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import numpy as np

from phalanx.api.models import Taint
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import PluginSpec
from phalanx.scheduling.plugins.taint_toleration import tolerates
from phalanx.scheduling.reasons import FailureReason, Reason

__all__ = ["NAME", "PLUGIN", "REASON", "NodeUnschedulable"]

NAME = "NodeUnschedulable"
REASON = Reason("node(s) were unschedulable", unresolvable=True)
_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class NodeUnschedulable:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = True
    unresolvable: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        if any(tolerates(t, _TAINT) for t in pod.tolerations):
            return np.ones(len(nodes), dtype=bool)
        return ~nodes.unschedulable

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        out: Counter[FailureReason] = Counter({REASON: len(rejected)})
        return out


_: FilterPlugin = NodeUnschedulable()


def _new(args: None, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()


PLUGIN: PluginSpec[None] = PluginSpec(
    NAME, _new, frozenset({"filter"}), frozenset({ClusterEvent.NODE_ADD, ClusterEvent.NODE_UPDATE}), default_weight=0
)
