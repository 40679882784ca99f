"""InterPodAffinity: required pod affinity and anti-affinity of the incoming pod, and the required anti-affinity of
placed pods against it, filter; preferred terms of both sides (and placed pods' required affinity, weighted by
hardPodAffinityWeight) score.

The incoming pod's terms count matching placed pods per node (``PodCounts``) and sum them per domain with a
bincount; placed pods' terms are evaluated once per ``AffinityGroup`` (pods with the same namespace and terms), whose
per-node member counts say where they sit. A node's verdict depends on its whole domain, so the profile recomputes
the plugin for every pod (``incremental = False``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec
import numpy as np

from phalanx.api.errors import FieldError
from phalanx.api.models import PodAffinity
from phalanx.cluster.nodes import AffinityGroup, NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import POD_PLACEMENT_EVENTS
from phalanx.scheduling.framework import (
    MAX_NODE_SCORE,
    BoolArray,
    CycleState,
    FilterPlugin,
    IntArray,
    ScorePlugin,
)
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import ArgsError, PluginSpec, boolean, check_fields, integer, mapping
from phalanx.scheduling.plugins.pod_selectors import AffinityTerm, PodCounts, domain_totals, node_totals
from phalanx.scheduling.reasons import FailureReason, Reason

__all__ = [
    "EVENTS",
    "NAME",
    "PLUGIN",
    "REASON_AFFINITY",
    "REASON_ANTI_AFFINITY",
    "REASON_EXISTING_ANTI_AFFINITY",
    "InterPodAffinity",
    "InterPodAffinityArgs",
    "PodTerms",
    "parse_args",
]

NAME = "InterPodAffinity"
# The pod's own required affinity unmet is UnschedulableAndUnresolvable; anti-affinity can be preempted away.
REASON_AFFINITY = Reason("node(s) didn't match pod affinity rules", unresolvable=True)
REASON_ANTI_AFFINITY = Reason("node(s) didn't match pod anti-affinity rules")
REASON_EXISTING_ANTI_AFFINITY = Reason("node(s) didn't satisfy existing pods anti-affinity rules")
_CACHED_PODS = 1 << 16


@dataclass
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A pod's decoded inter-pod affinity (``framework.PodInfo`` terms)."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[tuple[int, AffinityTerm], ...] = ()
    preferred_anti_affinity: tuple[tuple[int, AffinityTerm], ...] = ()

    @classmethod
    def of(cls, pi: PodInfo) -> PodTerms:
        affinity = pi.pod.spec.affinity
        if affinity is None:
            return cls()
        pos, neg = _decode(affinity.pod_affinity), _decode(affinity.pod_anti_affinity)
        return cls(
            tuple(AffinityTerm.of(t, pi) for t in pos.required_during_scheduling_ignored_during_execution),
            tuple(AffinityTerm.of(t, pi) for t in neg.required_during_scheduling_ignored_during_execution),
            tuple(
                (w.weight, AffinityTerm.of(w.pod_affinity_term, pi))
                for w in pos.preferred_during_scheduling_ignored_during_execution
            ),
            tuple(
                (w.weight, AffinityTerm.of(w.pod_affinity_term, pi))
                for w in neg.preferred_during_scheduling_ignored_during_execution
            ),
        )


def _decode(raw: dict[str, Any] | None) -> PodAffinity:
    try:
        return msgspec.convert(raw or {}, PodAffinity)
    except msgspec.ValidationError:
        return PodAffinity()  # validation reports it; unvalidated input is read as far as it can be


class InterPodAffinity:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = False
    unresolvable: ClassVar[bool] = False
    per_reason: ClassVar[bool] = True  # see REASON_AFFINITY
    incremental: ClassVar[bool] = False

    def __init__(self, args: InterPodAffinityArgs | None = None) -> None:
        args = args or InterPodAffinityArgs()
        self.hard_weight = args.hard_pod_affinity_weight
        self.ignore_existing_preferred = args.ignore_preferred_terms_of_existing_pods
        self._counts = PodCounts()
        self._terms: dict[str, tuple[object, PodTerms]] = {}
        self._group_terms: dict[bytes, PodTerms] = {}

    def terms(self, pi: PodInfo) -> PodTerms:
        cached = self._terms.get(pi.key)
        if cached is not None and cached[0] is pi.pod:
            return cached[1]
        out = PodTerms.of(pi)
        if len(self._terms) >= _CACHED_PODS:
            self._terms.clear()  # pods come and go in a long simulation
        self._terms[pi.key] = (pi.pod, out)
        return out

    def _groups(self, nodes: NodeTable) -> Iterator[tuple[AffinityGroup, PodTerms]]:
        for key, group in nodes.affinity_groups.items():
            terms = self._group_terms.get(key)
            if terms is None:
                terms = self._group_terms[key] = PodTerms.of(group.pod)
            yield group, terms

    # --- Filter ------------------------------------------------------------------------------------------------

    def skips(self, pod: PodInfo, nodes: NodeTable) -> bool:
        """PreFilter Skip: no required terms of its own and no placed pod with terms that could concern it."""
        terms = self.terms(pod)
        return not (terms.required_affinity or terms.required_anti_affinity or nodes.affinity_groups)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        if self.skips(pod, nodes):
            return np.ones(len(nodes) if rows is None else len(rows), dtype=bool)
        affinity, anti, existing = self._verdicts(pod, nodes)
        mask = affinity & anti & existing
        return mask if rows is None else mask[rows]

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        affinity, anti, existing = (m[rejected] for m in self._verdicts(pod, nodes))
        out: Counter[FailureReason] = Counter(
            {
                REASON_AFFINITY: int((~affinity).sum()),
                REASON_ANTI_AFFINITY: int((affinity & ~anti).sum()),
                REASON_EXISTING_ANTI_AFFINITY: int((affinity & anti & ~existing).sum()),
            }
        )
        return +out

    def _verdicts(self, pod: PodInfo, nodes: NodeTable) -> tuple[BoolArray, BoolArray, BoolArray]:
        """Which nodes satisfy the pod's required affinity, its required anti-affinity, and placed pods'
        required anti-affinity, checked in that order by kube-scheduler."""
        terms = self.terms(pod)
        everywhere = np.ones(len(nodes), dtype=bool)
        affinity = self._affinity(pod, terms, nodes) if terms.required_affinity else everywhere
        anti = everywhere.copy()
        for t in terms.required_anti_affinity:
            anti &= ~_in_domain_with(nodes, t.topology_key, self._counts.counts(nodes, [t.matcher]))
        existing = everywhere.copy()
        for group, group_terms in self._groups(nodes):
            for t in group_terms.required_anti_affinity:
                if t.matches(pod, nodes):
                    existing &= ~_in_domain_with(nodes, t.topology_key, group.count)
        return affinity, anti, existing

    def _affinity(self, pod: PodInfo, terms: PodTerms, nodes: NodeTable) -> BoolArray:
        """A node passes when it has every term's topology label and each term's domain holds a pod matching all
        the terms. If no such pod exists anywhere and the pod matches its own terms, it may start the group on
        any node with the labels (the first pod of a series with affinity to itself)."""
        required = terms.required_affinity
        counts = self._counts.counts(nodes, [t.matcher for t in required])
        has_all = np.ones(len(nodes), dtype=bool)
        populated = np.ones(len(nodes), dtype=bool)
        anywhere = False
        for t in required:
            totals = domain_totals(nodes, t.topology_key, counts)
            anywhere |= bool(totals.any())
            has_all &= nodes.label(t.topology_key).codes >= 0
            populated &= node_totals(nodes, t.topology_key, totals) > 0
        if not anywhere and all(t.matches(pod, nodes) for t in required):
            return has_all
        return populated

    # --- Score -------------------------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        """Per topology domain, the weights of the matching terms on both sides; a node scores the sum over the
        topology keys it carries. None (Skip) when no term matched anywhere."""
        terms = self.terms(pod)
        if self.ignore_existing_preferred and not (terms.preferred_affinity or terms.preferred_anti_affinity):
            return None
        by_key: dict[str, IntArray] = {}

        def add(key: str, per_node: IntArray, weight: int) -> None:
            totals = domain_totals(nodes, key, per_node)
            if totals.any():
                by_key[key] = by_key.get(key, 0) + weight * totals

        for weight, t in terms.preferred_affinity:
            add(t.topology_key, self._counts.counts(nodes, [t.matcher]), weight)
        for weight, t in terms.preferred_anti_affinity:
            add(t.topology_key, self._counts.counts(nodes, [t.matcher]), -weight)
        for group, group_terms in self._groups(nodes):
            if self.hard_weight > 0:
                for t in group_terms.required_affinity:
                    if t.matches(pod, nodes):
                        add(t.topology_key, group.count, self.hard_weight)
            for weight, t in group_terms.preferred_affinity:
                if t.matches(pod, nodes):
                    add(t.topology_key, group.count, weight)
            for weight, t in group_terms.preferred_anti_affinity:
                if t.matches(pod, nodes):
                    add(t.topology_key, group.count, -weight)
        if not by_key:
            return None
        out = np.zeros(len(feasible), dtype=np.int64)
        for key, totals in by_key.items():
            out += node_totals(nodes, key, totals)[feasible]
        return out

    def normalize(self, scores: IntArray) -> IntArray:
        """Min-max scaling to 0..100 over the scored nodes (all 0 when they are equal)."""
        if len(scores) == 0:
            return scores
        low, high = int(scores.min()), int(scores.max())
        if high == low:
            return np.zeros(len(scores), dtype=np.int64)
        return (MAX_NODE_SCORE * ((scores - low) / (high - low))).astype(np.int64)


def _in_domain_with(nodes: NodeTable, key: str, per_node: IntArray) -> BoolArray:
    """Nodes carrying label ``key`` whose domain holds at least one of the counted pods."""
    return node_totals(nodes, key, domain_totals(nodes, key, per_node)) > 0


_f: FilterPlugin = InterPodAffinity()
_s: ScorePlugin = InterPodAffinity()


def parse_args(raw: Any) -> InterPodAffinityArgs:
    """InterPodAffinityArgs from a pluginConfig entry, validated as ``ValidateInterPodAffinityArgs`` does."""
    args = mapping(raw)
    check_fields(args, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
    weight = integer(args.get("hardPodAffinityWeight"), "hardPodAffinityWeight", 1)
    if not 0 <= weight <= 100:
        raise ArgsError([FieldError.invalid("hardPodAffinityWeight", weight, "not in valid range [0-100]")])
    ignore = boolean(args.get("ignorePreferredTermsOfExistingPods"), "ignorePreferredTermsOfExistingPods", False)
    return InterPodAffinityArgs(weight, ignore)


def _new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(args)


EVENTS = POD_PLACEMENT_EVENTS
PLUGIN: PluginSpec[InterPodAffinityArgs] = PluginSpec(
    NAME, _new, frozenset({"preFilter", "filter", "preScore", "score"}), EVENTS, parse_args, default_weight=2
)
