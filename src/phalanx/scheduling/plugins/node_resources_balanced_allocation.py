"""NodeResourcesBalancedAllocation: prefer nodes whose resource balance the pod improves most (v1.36: the score
compares the balance of the requested fractions with and without the pod)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import CycleState, IntArray, ScorePlugin
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import PluginSpec, check_fields, mapping
from phalanx.scheduling.plugins.resource_allocation import (
    ResourceSpec,
    balanced_improvement_score,
    parse_resources,
    requested_allocated_allocatable,
)

__all__ = ["NAME", "PLUGIN", "BalancedAllocationArgs", "NodeResourcesBalancedAllocation", "parse_args"]

NAME = "NodeResourcesBalancedAllocation"


@dataclass
class BalancedAllocationArgs:
    resources: list[ResourceSpec] = field(default_factory=lambda: [ResourceSpec("cpu"), ResourceSpec("memory")])


class NodeResourcesBalancedAllocation:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = False

    def __init__(self, args: BalancedAllocationArgs | None = None) -> None:
        self.resources = (args or BalancedAllocationArgs()).resources

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        # Best-effort pods skip this score (kubernetes#129138): they would otherwise pile onto one node.
        if not any(pod.requests.get(r.name, 0) for r in self.resources):
            return None
        req, allocated, alloc, _ = requested_allocated_allocatable(
            pod, nodes, feasible, self.resources, use_requested=True
        )
        return balanced_improvement_score(req, allocated, alloc)

    def normalize(self, scores: IntArray) -> IntArray:
        return scores


_s: ScorePlugin = NodeResourcesBalancedAllocation()


def parse_args(raw: Any) -> BalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs: the resources to balance, with their weights."""
    args = mapping(raw)
    check_fields(args, {"resources"})
    return BalancedAllocationArgs(parse_resources(args.get("resources"), "resources"))


def _new(args: BalancedAllocationArgs | None, handle: Handle) -> NodeResourcesBalancedAllocation:
    return NodeResourcesBalancedAllocation(args)


PLUGIN: PluginSpec[BalancedAllocationArgs] = PluginSpec(
    NAME, _new, frozenset({"score"}), parse_args=parse_args, default_weight=1
)
