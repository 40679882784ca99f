"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import numpy as np

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


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

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[str]:
        return Counter({REASON: len(rejected)})


_: FilterPlugin = NodeName()
