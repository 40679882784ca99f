"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; scoring by the configured strategy
(LeastAllocated by default, MostAllocated, RequestedToCapacityRatio)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from phalanx.api.errors import FieldError
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray, ScorePlugin
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import (
    ArgsError,
    PluginSpec,
    check_fields,
    integer,
    join,
    mapping,
    sequence,
    string,
    string_list,
)
from phalanx.scheduling.plugins.resource_allocation import (
    ResourceSpec,
    ShapePoint,
    least_allocated,
    most_allocated,
    parse_resources,
    requested_and_allocatable,
    requested_to_capacity_ratio,
)
from phalanx.scheduling.reasons import TOO_MANY_PODS, FailureReason, InsufficientResource

__all__ = ["NAME", "PLUGIN", "STRATEGIES", "TOO_MANY_PODS", "NodeResourcesFit", "NodeResourcesFitArgs", "parse_args"]

NAME = "NodeResourcesFit"
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

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        """One InsufficientResource per short resource (``pods`` for full pod slots), counting the nodes short of
        it; the record's used and capacity are those of the first such node."""
        out: Counter[FailureReason] = Counter()
        full = nodes.pod_count[rejected] >= nodes.max_pods[rejected]
        if full.any():
            row = int(rejected[full][0])
            record = InsufficientResource("pods", 1, int(nodes.pod_count[row]), int(nodes.max_pods[row]))
            out[record] = int(full.sum())
        cols, vals = self.checked(pod)
        for col, val in zip(cols.tolist(), vals.tolist(), strict=True):
            allocatable = nodes.allocatable[rejected, col]
            short = allocatable - nodes.requested[rejected, col] < val
            name = nodes.resources.names[col]
            if name in nodes.dra_resources:
                short &= allocatable > 0
            if short.any():
                row = int(rejected[short][0])
                used, capacity = int(nodes.requested[row, col]), int(nodes.allocatable[row, col])
                out[InsufficientResource(name, int(val), used, capacity)] = int(short.sum())
        return out

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


def parse_args(raw: Any) -> NodeResourcesFitArgs:
    """NodeResourcesFitArgs, validated as ``ValidateNodeResourcesFitArgs`` does."""
    args = mapping(raw)
    check_fields(args, {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"})
    strategy = mapping(args.get("scoringStrategy"), "scoringStrategy")
    check_fields(strategy, {"type", "resources", "requestedToCapacityRatio"}, "scoringStrategy")
    kind = string(strategy.get("type"), "scoringStrategy.type", "LeastAllocated")
    if kind not in STRATEGIES:
        raise ArgsError([FieldError.unsupported("scoringStrategy.type", kind, list(STRATEGIES))])
    shape = _shape(strategy) if kind == "RequestedToCapacityRatio" else []
    return NodeResourcesFitArgs(
        ignored_resources=string_list(args.get("ignoredResources"), "ignoredResources"),
        ignored_resource_groups=string_list(args.get("ignoredResourceGroups"), "ignoredResourceGroups"),
        strategy=kind,
        resources=parse_resources(strategy.get("resources"), "scoringStrategy.resources"),
        shape=shape,
    )


def _shape(strategy: Any) -> list[ShapePoint]:
    where = "scoringStrategy.requestedToCapacityRatio"
    ratio = mapping(strategy.get("requestedToCapacityRatio"), where)
    path = f"{where}.shape"
    points = sequence(ratio.get("shape"), path)
    if not points:
        raise ArgsError([FieldError.required(path, "at least one point must be specified")])
    shape: list[ShapePoint] = []
    errors: list[FieldError] = []
    for i, raw in enumerate(points):
        at = join(path, f"[{i}]")
        point = mapping(raw, at)
        u = integer(point.get("utilization"), f"{at}.utilization", 0)
        s = integer(point.get("score"), f"{at}.score", 0)
        if not 0 <= u <= 100:
            errors.append(FieldError.invalid(f"{at}.utilization", u, "not in valid range [0, 100]"))
        if not 0 <= s <= 10:
            errors.append(FieldError.invalid(f"{at}.score", s, "not in valid range [0, 10]"))
        if shape and u <= shape[-1].utilization:
            errors.append(
                FieldError.invalid(f"{at}.utilization", u, "utilization values must be sorted in increasing order")
            )
        shape.append(ShapePoint(u, s))
    if errors:
        raise ArgsError(errors)
    return shape


def _new(args: NodeResourcesFitArgs | None, handle: Handle) -> NodeResourcesFit:
    return NodeResourcesFit(args)


PLUGIN: PluginSpec[NodeResourcesFitArgs] = PluginSpec(
    NAME,
    _new,
    frozenset({"filter", "score"}),
    frozenset({ClusterEvent.POD_DELETE, ClusterEvent.NODE_ADD, ClusterEvent.NODE_UPDATE}),
    parse_args,
    default_weight=1,
)
