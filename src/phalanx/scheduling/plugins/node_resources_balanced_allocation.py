"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay balanced after placing the pod."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import CycleState, IntArray, ScorePlugin
from phalanx.scheduling.plugins.resource_allocation import ResourceSpec, balanced_score, requested_and_allocatable

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
        req, alloc, _ = requested_and_allocatable(pod, nodes, feasible, self.resources, use_requested=True)
        return balanced_score(req, alloc)

    def normalize(self, scores: IntArray) -> IntArray:
        return scores


_s: ScorePlugin = NodeResourcesBalancedAllocation()
