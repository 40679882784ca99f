"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred terms score by their weights.

Requirements are evaluated as vector operations over label columns, so one term costs a few numpy operations
whatever the number of nodes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from phalanx.api.models import NodeAffinity as NodeAffinitySpec
from phalanx.cluster.node_selector import term_mask, terms_mask
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import (
    BoolArray,
    Code,
    CycleState,
    FilterPlugin,
    IntArray,
    PreFilterPlugin,
    ScorePlugin,
    Status,
    default_normalize,
)
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import PluginSpec, check_fields, decode, mapping
from phalanx.scheduling.reasons import FailureReason, Reason

__all__ = [
    "NAME",
    "PLUGIN",
    "REASON",
    "REASON_CONFLICT",
    "REASON_ENFORCED",
    "NodeAffinity",
    "NodeAffinityArgs",
    "parse_args",
]

NAME = "NodeAffinity"
REASON = Reason("node(s) didn't match Pod's node affinity/selector", unresolvable=True)
REASON_ENFORCED = Reason("node(s) didn't match scheduler-enforced node affinity", unresolvable=True)
REASON_CONFLICT = Reason("pod affinity terms conflict", unresolvable=True)


@dataclass
class NodeAffinityArgs:
    """NodeAffinityArgs.addedAffinity: affinity applied to every pod of the profile."""

    added_affinity: NodeAffinitySpec | None = None
    extra: dict[str, object] = field(default_factory=dict)


class NodeAffinity:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = True
    unresolvable: ClassVar[bool] = True

    def __init__(self, args: NodeAffinityArgs | None = None) -> None:
        self.added = (args or NodeAffinityArgs()).added_affinity

    def _affinities(self, pod: PodInfo) -> list[NodeAffinitySpec]:
        spec = pod.pod.spec
        out = [spec.affinity.node_affinity] if spec.affinity and spec.affinity.node_affinity else []
        return out + ([self.added] if self.added else [])

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> tuple[BoolArray | None, Status]:
        """Required terms that pin node names (``matchFields metadata.name In``) narrow the nodes up front, as
        for DaemonSet pods; every term must pin names, since terms are ORed."""
        spec = pod.pod.spec
        required = spec.affinity.node_affinity if spec.affinity and spec.affinity.node_affinity else None
        terms = required.required_during_scheduling_ignored_during_execution if required else None
        if terms is None or not terms.node_selector_terms:
            return None, Status()
        names: set[str] = set()
        for term in terms.node_selector_terms:
            pinned: set[str] | None = None
            for req in term.match_fields:
                if req.key == "metadata.name" and req.operator == "In":
                    pinned = set(req.values) if pinned is None else pinned & set(req.values)
            if pinned is None:
                return None, Status()
            names |= pinned
        if not names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_CONFLICT,), NAME)
        mask = np.zeros(len(nodes), dtype=bool)
        mask[[nodes.index[n] for n in names if n in nodes.index]] = True
        return mask, Status()

    def _added_mask(self, nodes: NodeTable) -> BoolArray:
        required = self.added.required_during_scheduling_ignored_during_execution if self.added else None
        if required is None:
            return np.ones(len(nodes), dtype=bool)
        return terms_mask(required.node_selector_terms, nodes)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        mask = self._added_mask(nodes)
        for key, value in pod.pod.spec.node_selector.items():
            mask &= nodes.label(key).mask_in([value])
        spec = pod.pod.spec
        if spec.affinity and spec.affinity.node_affinity:
            required = spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
            if required is not None:
                mask &= terms_mask(required.node_selector_terms, nodes)
        return mask

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        # The scheduler-enforced affinity (addedAffinity) is checked first and has its own reason.
        enforced = int((~self._added_mask(nodes)[rejected]).sum())
        out: Counter[FailureReason] = Counter({REASON_ENFORCED: enforced, REASON: len(rejected) - enforced})
        return +out

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        preferred = [
            p for aff in self._affinities(pod) for p in aff.preferred_during_scheduling_ignored_during_execution
        ]
        if not preferred:
            return None
        total = np.zeros(len(nodes), dtype=np.int64)
        for p in preferred:
            if p.weight:
                total += p.weight * term_mask(p.preference, nodes)
        return total[feasible]

    def normalize(self, scores: IntArray) -> IntArray:
        return default_normalize(scores)


_p: PreFilterPlugin = NodeAffinity()
_f: FilterPlugin = NodeAffinity()
_s: ScorePlugin = NodeAffinity()


def parse_args(raw: Any) -> NodeAffinityArgs:
    """NodeAffinityArgs: ``addedAffinity`` is a NodeAffinity, decoded with its field paths."""
    args = mapping(raw)
    check_fields(args, {"addedAffinity"})
    added = args.get("addedAffinity")
    if not added:
        return NodeAffinityArgs()
    return NodeAffinityArgs(decode(mapping(added, "addedAffinity"), NodeAffinitySpec, "addedAffinity"))


def _new(args: NodeAffinityArgs | None, handle: Handle) -> NodeAffinity:
    return NodeAffinity(args)


PLUGIN: PluginSpec[NodeAffinityArgs] = PluginSpec(
    NAME,
    _new,
    frozenset({"preFilter", "filter", "score"}),
    frozenset({ClusterEvent.NODE_ADD, ClusterEvent.NODE_UPDATE}),
    parse_args,
    default_weight=2,
)
