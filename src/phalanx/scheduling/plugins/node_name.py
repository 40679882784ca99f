"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import numpy as np

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import PluginSpec
from phalanx.scheduling.reasons import FailureReason, Reason

__all__ = ["NAME", "PLUGIN", "REASON", "NodeName"]

NAME = "NodeName"
REASON = Reason("node(s) didn't match the requested node name", unresolvable=True)


class NodeName:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = True
    unresolvable: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return np.ones(len(nodes), dtype=bool)
        mask = np.zeros(len(nodes), dtype=bool)
        if wanted in nodes.index:
            mask[nodes.index[wanted]] = True
        return mask

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        out: Counter[FailureReason] = Counter({REASON: len(rejected)})
        return out


_: FilterPlugin = NodeName()


def _new(args: None, handle: Handle) -> NodeName:
    return NodeName()


PLUGIN: PluginSpec[None] = PluginSpec(
    NAME, _new, frozenset({"filter"}), frozenset({ClusterEvent.NODE_ADD}), default_weight=0
)
