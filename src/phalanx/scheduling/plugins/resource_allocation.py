"""Shared resource-allocation scoring (``noderesources/resource_allocation.go``): the requested and allocatable
amounts per scored resource, over the feasible nodes, and the scorers of each strategy.

All arithmetic is integer and truncating like Go's, so scores match kube-scheduler's exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from phalanx.api.errors import FieldError
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.cluster.resources import CPU, MEMORY
from phalanx.scheduling.framework import MAX_NODE_SCORE, IntArray
from phalanx.scheduling.plugin import ArgsError, integer, join, mapping, sequence, string

__all__ = [
    "ResourceSpec",
    "ShapePoint",
    "balanced_improvement_score",
    "balanced_score",
    "least_allocated",
    "most_allocated",
    "parse_resources",
    "requested_allocated_allocatable",
    "requested_and_allocatable",
    "requested_to_capacity_ratio",
]

_STANDARD = {"cpu", "memory", "ephemeral-storage"}


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class ShapePoint:
    utilization: int
    score: int


def parse_resources(raw: Any, path: str) -> list[ResourceSpec]:
    """A ``resources`` list of plugin args (cpu and memory, weight 1, when absent), weights in 1-100 as
    ``validateResources`` checks them."""
    if raw is None:
        return [ResourceSpec("cpu"), ResourceSpec("memory")]
    out = []
    errors: list[FieldError] = []
    for i, entry in enumerate(sequence(raw, path)):
        at = join(path, f"[{i}]")
        try:
            item = mapping(entry, at)
            name = string(item.get("name"), f"{at}.name")
            weight = integer(item.get("weight"), f"{at}.weight", 1)
        except ArgsError as exc:
            errors += exc.errors
            continue
        if not name:
            errors.append(FieldError.required(f"{at}.name"))
            continue
        if not 1 <= weight <= 100:
            errors.append(
                FieldError.invalid(f"{at}.weight", weight, f"resource weight of {name} not in valid range [1, 100]")
            )
            continue
        out.append(ResourceSpec(name, weight))
    if errors:
        raise ArgsError(errors)
    return out


def requested_and_allocatable(
    pod: PodInfo, nodes: NodeTable, rows: IntArray, resources: Sequence[ResourceSpec], use_requested: bool
) -> tuple[IntArray, IntArray, list[int]]:
    """``[n, k]`` requested-after-placement and allocatable for the scored resources, and their weights.

    An extended resource the pod does not request is left out (kube-scheduler returns 0/0 for it, which every
    scorer skips). Without ``use_requested``, CPU and memory use the non-zero requests (100m/200Mi defaults).
    """
    req, _, alloc, weights = requested_allocated_allocatable(pod, nodes, rows, resources, use_requested)
    return req, alloc, weights


def requested_allocated_allocatable(
    pod: PodInfo, nodes: NodeTable, rows: IntArray, resources: Sequence[ResourceSpec], use_requested: bool
) -> tuple[IntArray, IntArray, IntArray, list[int]]:
    """``requested_and_allocatable`` with the requests before placement too: (requested with the pod, requested
    without it, allocatable, weights), as kube-scheduler's ``calculateNodeAllocatableRequest``."""
    pod_amounts: list[int] = []
    req_cols: list[IntArray] = []
    alloc_cols: list[IntArray] = []
    weights: list[int] = []
    for spec in resources:
        name = spec.name
        if name in ("cpu", "memory") and not use_requested:
            col = CPU if name == "cpu" else MEMORY
            pod_amount = pod.nonzero_cpu if name == "cpu" else pod.nonzero_memory
            node_amount = nodes.nonzero_requested[rows, col]
        else:
            pod_amount = pod.requests.get(name, 0)
            if pod_amount == 0 and name not in _STANDARD:
                continue
            col = nodes.resources.column.get(name, -1)
            if col < 0:
                continue
            node_amount = nodes.requested[rows, col]
        req_cols.append(node_amount + pod_amount)
        pod_amounts.append(pod_amount)
        alloc_cols.append(nodes.allocatable[rows, nodes.resources.column[name]])
        weights.append(spec.weight)
    n = len(rows)
    if not weights:
        empty = np.zeros((n, 0), dtype=np.int64)
        return empty, empty, empty, []
    req = np.stack(req_cols, axis=1)
    return req, req - np.asarray(pod_amounts, dtype=np.int64)[None, :], np.stack(alloc_cols, axis=1), weights


def _weighted(per_resource: IntArray, alloc: IntArray, weights: list[int], keep: npt.NDArray[np.bool_]) -> IntArray:
    w = np.asarray(weights, dtype=np.int64)[None, :]
    valid = (alloc > 0) & keep
    num = np.where(valid, per_resource * w, 0).sum(axis=1)
    den = np.where(valid, w, 0).sum(axis=1)
    return np.where(den > 0, num // np.maximum(den, 1), 0)


def least_allocated(req: IntArray, alloc: IntArray, weights: list[int]) -> IntArray:
    """(allocatable - requested) * 100 / allocatable per resource, 0 when over-committed; weighted mean."""
    safe = np.maximum(alloc, 1)
    per = np.where(req > alloc, 0, (alloc - req) * MAX_NODE_SCORE // safe)
    return _weighted(per, alloc, weights, np.ones_like(alloc, dtype=bool))


def most_allocated(req: IntArray, alloc: IntArray, weights: list[int]) -> IntArray:
    """requested * 100 / allocatable per resource (requested capped at allocatable); weighted mean."""
    safe = np.maximum(alloc, 1)
    per = np.minimum(req, alloc) * MAX_NODE_SCORE // safe
    return _weighted(per, alloc, weights, np.ones_like(alloc, dtype=bool))


def _trunc_div(a: IntArray, b: IntArray | int) -> IntArray:
    """Go's integer division (truncates toward zero)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (np.asarray(b) < 0), -q, q)


def requested_to_capacity_ratio(
    req: IntArray, alloc: IntArray, weights: list[int], shape: Sequence[ShapePoint]
) -> IntArray:
    """A broken-linear function of utilisation (shape scores 0..10 scaled to 0..100); resources scoring 0 are
    left out of the weighted mean, which is rounded."""
    points = [(p.utilization, p.score * (MAX_NODE_SCORE // 10)) for p in shape]
    safe = np.maximum(alloc, 1)
    util = np.where((alloc == 0) | (req > alloc), 100, req * 100 // safe)
    per = np.full(util.shape, points[-1][1], dtype=np.int64)
    done = np.zeros(util.shape, dtype=bool)
    for i, (u, s) in enumerate(points):
        hit = ~done & (util <= u)
        if i == 0:
            value = np.full(util.shape, s, dtype=np.int64)
        else:
            u0, s0 = points[i - 1]
            value = s0 + _trunc_div((s - s0) * (util - u0), u - u0)
        per = np.where(hit, value, per)
        done |= hit
    w = np.asarray(weights, dtype=np.int64)[None, :]
    valid = (alloc > 0) & (per > 0)
    num = np.where(valid, per * w, 0).sum(axis=1)
    den = np.where(valid, w, 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(den > 0, num / np.maximum(den, 1), 0.0)
    # Go's math.Round rounds half away from zero; scores are non-negative here.
    return np.floor(mean + 0.5).astype(np.int64)


def balanced_improvement_score(req: IntArray, allocated: IntArray, alloc: IntArray) -> IntArray:
    """kube-scheduler v1.36's ``balancedResourceScorer``: how much placing the pod improves the node's balance,
    ``50 + (50 + with - without) / 2`` with ``with``/``without`` the ``balanced_score`` after and before placement
    (integer arithmetic, Go's division truncating toward zero; the difference is at least -50, so the numerator is
    never negative)."""
    half = MAX_NODE_SCORE // 2
    return half + (half + balanced_score(req, alloc) - balanced_score(allocated, alloc)) // 2


def balanced_score(req: IntArray, alloc: IntArray) -> IntArray:
    """(1 - standard deviation of the requested fractions) * 100, fractions capped at 1."""
    n, k = req.shape
    valid = alloc > 0
    frac = np.where(valid, np.minimum(req / np.maximum(alloc, 1), 1.0), 0.0)
    count = valid.sum(axis=1)
    std = np.zeros(n)
    if k >= 2:
        two = count == 2
        if two.any():
            # With two resources kube-scheduler uses |f1 - f2| / 2 exactly.
            first = np.argmax(valid, axis=1)
            last = k - 1 - np.argmax(valid[:, ::-1], axis=1)
            rows = np.arange(n)
            std = np.where(two, np.abs((frac[rows, first] - frac[rows, last]) / 2), std)
        many = count > 2
        if many.any():
            mean = frac.sum(axis=1) / np.maximum(count, 1)
            var = np.where(valid, (frac - mean[:, None]) ** 2, 0.0).sum(axis=1) / np.maximum(count, 1)
            std = np.where(many, np.sqrt(var), std)
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
