"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; scoring by the configured strategy
(LeastAllocated by default, MostAllocated, RequestedToCapacityRatio)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray, ScorePlugin
from phalanx.scheduling.plugins.resource_allocation import (
    ResourceSpec,
    ShapePoint,
    least_allocated,
    most_allocated,
    requested_and_allocatable,
    requested_to_capacity_ratio,
)

NAME = "NodeResourcesFit"
TOO_MANY_PODS = "Too many pods"
STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
_STANDARD = {"cpu", "memory", "ephemeral-storage"}


@dataclass
class NodeResourcesFitArgs:
    """NodeResourcesFitArgs (kubescheduler.config.k8s.io/v1)."""

    ignored_resources: list[str] = field(default_factory=list)
    ignored_resource_groups: list[str] = field(default_factory=list)
    strategy: str = "LeastAllocated"
    resources: list[ResourceSpec] = field(default_factory=lambda: [ResourceSpec("cpu"), ResourceSpec("memory")])
    shape: list[ShapePoint] = field(default_factory=list)


class NodeResourcesFit:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = False
    unresolvable: ClassVar[bool] = False

    def __init__(self, args: NodeResourcesFitArgs | None = None) -> None:
        self.args = args or NodeResourcesFitArgs()
        self._ignored = set(self.args.ignored_resources)
        self._ignored_groups = set(self.args.ignored_resource_groups)

    def checked(self, pod: PodInfo) -> tuple[IntArray, IntArray]:
        """Columns and amounts to check: every requested resource but the ignored extended ones."""
        if not self._ignored and not self._ignored_groups:
            return pod.req_cols, pod.req_vals
        keep = [i for i, name in enumerate(pod.requests) if not self._is_ignored(name)]
        return pod.req_cols[keep], pod.req_vals[keep]

    def _is_ignored(self, name: str) -> bool:
        if name in _STANDARD:
            return False
        return name in self._ignored or name.split("/", 1)[0] in self._ignored_groups

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        sel = slice(None) if rows is None else rows
        mask: BoolArray = nodes.pod_count[sel] < nodes.max_pods[sel]
        cols, vals = self.checked(pod)
        if len(cols):
            allocatable = nodes.allocatable[sel][:, cols]
            ok = allocatable - nodes.requested[sel][:, cols] >= vals
            mask &= (ok | self._by_dra(cols, nodes, allocatable)).all(axis=1)
        return mask

    @staticmethod
    def _by_dra(cols: IntArray, nodes: NodeTable, allocatable: IntArray) -> BoolArray:
        """Where a resource is left to DynamicResources: a DeviceClass serves it and the node does not advertise it."""
        if not nodes.dra_resources:
            return np.zeros(allocatable.shape, dtype=bool)
        served = np.array([nodes.resources.names[c] in nodes.dra_resources for c in cols.tolist()], dtype=bool)
        out: BoolArray = served & (allocatable == 0)
        return out

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[str]:
        out: Counter[str] = Counter()
        out[TOO_MANY_PODS] = int((nodes.pod_count[rejected] >= nodes.max_pods[rejected]).sum())
        cols, vals = self.checked(pod)
        for col, val in zip(cols.tolist(), vals.tolist(), strict=True):
            allocatable = nodes.allocatable[rejected, col]
            short = allocatable - nodes.requested[rejected, col] < val
            if nodes.resources.names[col] in nodes.dra_resources:
                short &= allocatable > 0
            out[f"Insufficient {nodes.resources.names[col]}"] = int(short.sum())
        return +out

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        a = self.args
        req, alloc, weights = requested_and_allocatable(pod, nodes, feasible, a.resources, use_requested=False)
        if not weights:
            return np.zeros(len(feasible), dtype=np.int64)
        if a.strategy == "MostAllocated":
            return most_allocated(req, alloc, weights)
        if a.strategy == "RequestedToCapacityRatio":
            return requested_to_capacity_ratio(req, alloc, weights, a.shape)
        return least_allocated(req, alloc, weights)

    def normalize(self, scores: IntArray) -> IntArray:
        return scores


_f: FilterPlugin = NodeResourcesFit()
_s: ScorePlugin = NodeResourcesFit()
