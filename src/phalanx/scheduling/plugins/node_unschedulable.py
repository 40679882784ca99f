"""NodeUnschedulable: nodes marked ``spec.unschedulable`` accept only pods tolerating the unschedulable taint."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import numpy as np

from phalanx.api.models import Taint
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray
from phalanx.scheduling.plugins.taint_toleration import tolerates

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"
_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class NodeUnschedulable:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = True
    unresolvable: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        if any(tolerates(t, _TAINT) for t in pod.tolerations):
            return np.ones(len(nodes), dtype=bool)
        return ~nodes.unschedulable

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[str]:
        return Counter({REASON: len(rejected)})


_: FilterPlugin = NodeUnschedulable()
