"""PodTopologySpread: DoNotSchedule constraints filter (skew = matching pods in the node's domain + self-match -
global minimum must not exceed maxSkew), ScheduleAnyway constraints score (fewer matching pods is better).

Matching pods are counted per node (``PodCounts``) and summed per domain with one bincount over the topology
label's codes, so a pod costs a few vector operations per constraint whatever the number of nodes. The verdict on a
node depends on the other nodes of its domain, so the profile recomputes this plugin for every pod
(``incremental = False``); pods assumed earlier in the same PodGroup cycle are counted like bound ones.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec
import numpy as np

from phalanx.api.errors import FieldError
from phalanx.api.models import LabelSelector, Pod, TopologySpreadConstraint
from phalanx.cluster.node_selector import terms_mask
from phalanx.cluster.nodes import NodeTable
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
from phalanx.scheduling.plugin import ArgsError, PluginSpec, check_fields, decode, mapping, sequence, string
from phalanx.scheduling.plugins.pod_selectors import (
    PodCounts,
    PodMatcher,
    Selector,
    domain_totals,
    label_key_requirements,
    node_totals,
)
from phalanx.scheduling.plugins.taint_toleration import tolerates
from phalanx.scheduling.reasons import FailureReason, Reason

__all__ = [
    "EVENTS",
    "NAME",
    "PLUGIN",
    "REASON",
    "REASON_MISSING_LABEL",
    "SYSTEM_DEFAULTS",
    "Constraint",
    "PodConstraints",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "compile_constraint",
    "parse_args",
    "required_node_affinity",
]

NAME = "PodTopologySpread"
REASON = Reason("node(s) didn't match pod topology spread constraints")
# A node without the topology label stays without it whatever is evicted.
REASON_MISSING_LABEL = Reason(REASON.message + " (missing required label)", unresolvable=True)
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
# Workload kinds whose pods get the cluster-level default constraints (kube-scheduler also counts Services).
DEFAULTED_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})
_COMPILED_CACHE = 4096
_PARSED_CACHE = 1 << 16
SYSTEM_DEFAULTS = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME, when_unsatisfiable="ScheduleAnyway"),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE, when_unsatisfiable="ScheduleAnyway"),
)


@dataclass
class PodTopologySpreadArgs:
    """PodTopologySpreadArgs: ``defaultingType`` System uses SYSTEM_DEFAULTS; List uses ``defaultConstraints``."""

    default_constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    defaulting_type: str = "System"


@dataclass(frozen=True, slots=True)
class Constraint:
    """One constraint as the plugin uses it (``topologySpreadConstraint``), its selector merged and compiled."""

    max_skew: int
    topology_key: str
    hard: bool
    matcher: PodMatcher
    self_match: bool
    min_domains: int | None
    honor_affinity: bool
    honor_taints: bool


@dataclass(frozen=True, slots=True)
class PodConstraints:
    constraints: tuple[Constraint, ...]
    own: bool  # from the pod's spec (not cluster defaults)

    def hard(self) -> list[Constraint]:
        return [c for c in self.constraints if c.hard]

    def soft(self) -> list[Constraint]:
        return [c for c in self.constraints if not c.hard]


_NONE = PodConstraints((), False)


def compile_constraint(c: TopologySpreadConstraint, pod: Pod, selector: LabelSelector | None) -> Constraint:
    labels = pod.metadata.labels
    compiled = Selector.of(selector, label_key_requirements(labels, c.match_label_keys))
    matcher = PodMatcher(frozenset([pod.metadata.namespace]), Selector(None), compiled, skip_terminating=True)
    return Constraint(
        max_skew=c.max_skew,
        topology_key=c.topology_key,
        hard=c.when_unsatisfiable == "DoNotSchedule",
        matcher=matcher,
        self_match=compiled.matches(labels),
        min_domains=c.min_domains,
        honor_affinity=c.node_affinity_policy != "Ignore",
        honor_taints=c.node_taints_policy == "Honor",
    )


class PodTopologySpread:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = False
    unresolvable: ClassVar[bool] = False
    per_reason: ClassVar[bool] = True  # a skew can be fixed by preemption; a missing label cannot
    incremental: ClassVar[bool] = False

    def __init__(self, args: PodTopologySpreadArgs | None = None) -> None:
        args = args or PodTopologySpreadArgs()
        self.system_defaulted = args.defaulting_type == "System"
        self.defaults: Sequence[TopologySpreadConstraint] = (
            SYSTEM_DEFAULTS if self.system_defaulted else args.default_constraints
        )
        self._counts = PodCounts()
        self._parsed: dict[str, tuple[Pod, PodConstraints]] = {}  # per pod, for its Filter and Score
        self._compiled: dict[bytes, PodConstraints] = {}  # per distinct (namespace, labels, constraints, owned)

    def constraints(self, pi: PodInfo) -> PodConstraints:
        """The pod's own constraints, or the cluster defaults for a pod a workload controller owns."""
        cached = self._parsed.get(pi.key)
        if cached is not None and cached[0] is pi.pod:
            return cached[1]
        pod = pi.pod
        meta, raw = pod.metadata, pod.spec.topology_spread_constraints
        if not raw and not meta.owner_references:
            return _NONE  # the common case, without building a cache key
        owned = any(ref.controller and ref.kind in DEFAULTED_OWNERS for ref in meta.owner_references)
        content = msgspec.json.encode((meta.namespace, meta.labels, raw, owned))
        out = self._compiled.get(content)
        if out is None:
            if len(self._compiled) >= _COMPILED_CACHE:
                self._compiled.clear()
            out = self._compiled[content] = self._compile(pod, owned)
        if len(self._parsed) >= _PARSED_CACHE:
            self._parsed.clear()  # pods come and go in a long simulation
        self._parsed[pi.key] = (pod, out)
        return out

    def _compile(self, pod: Pod, owned: bool) -> PodConstraints:
        try:
            own = msgspec.convert(pod.spec.topology_spread_constraints, list[TopologySpreadConstraint])
        except msgspec.ValidationError:
            own = []  # validation reports it; an engine fed unvalidated objects ignores what it cannot read
        if own:
            return PodConstraints(tuple(compile_constraint(c, pod, c.label_selector) for c in own), True)
        return PodConstraints(tuple(self._defaults(pod, owned)), False)

    def _defaults(self, pod: Pod, owned: bool) -> list[Constraint]:
        # kube-scheduler selects the pods of the same Services/ReplicaSets/StatefulSets/ReplicationControllers; a
        # snapshot has no such objects, so the pod's own labels stand for its owner's selector.
        if not owned or not pod.metadata.labels or not self.defaults:
            return []
        selector = LabelSelector(match_labels=dict(pod.metadata.labels))
        return [compile_constraint(c, pod, selector) for c in self.defaults]

    # --- Filter ------------------------------------------------------------------------------------------------

    def skips(self, pod: PodInfo, nodes: NodeTable) -> bool:
        """PreFilter Skip: the pod has no DoNotSchedule constraint (its own or a default)."""
        return not self.constraints(pod).hard()

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        mask = np.ones(len(nodes), dtype=bool)
        for has_key, within_skew in self._verdicts(pod, nodes):
            mask &= has_key & within_skew
        return mask if rows is None else mask[rows]

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        # A node is rejected by its first failing constraint: a missing label, else the skew.
        out: Counter[FailureReason] = Counter()
        pending = np.ones(len(rejected), dtype=bool)
        for has_key, within_skew in self._verdicts(pod, nodes):
            missing = pending & ~has_key[rejected]
            skewed = pending & has_key[rejected] & ~within_skew[rejected]
            out[REASON_MISSING_LABEL] += int(missing.sum())
            out[REASON] += int(skewed.sum())
            pending &= ~(missing | skewed)
        return +out

    def _verdicts(self, pod: PodInfo, nodes: NodeTable) -> list[tuple[BoolArray, BoolArray]]:
        """Per DoNotSchedule constraint: which nodes have its topology label, and which stay within maxSkew."""
        hard = self.constraints(pod).hard()
        if not hard:
            return []
        has_all = _has_all_keys(nodes, hard)
        out = []
        for c in hard:
            eligible = has_all & self._inclusion(c, pod, nodes)
            counts = self._counts.counts(nodes, [c.matcher])
            out.append((nodes.label(c.topology_key).codes >= 0, _within_skew(c, nodes, counts, eligible)))
        return out

    def _inclusion(self, c: Constraint, pod: PodInfo, nodes: NodeTable) -> BoolArray:
        """nodeAffinityPolicy (Honor: the pod's nodeSelector and required node affinity) and nodeTaintsPolicy
        (Honor: NoSchedule/NoExecute taints the pod tolerates) decide which nodes' pods count."""
        mask = np.ones(len(nodes), dtype=bool)
        if c.honor_affinity:
            mask &= required_node_affinity(pod, nodes)
        if c.honor_taints:
            tolerations = pod.tolerations
            ok = [
                all(
                    any(tolerates(t, taint) for t in tolerations)
                    for taint in taints
                    if taint.effect != "PreferNoSchedule"
                )
                for taints in nodes.taint_sets
            ]
            mask &= np.array(ok, dtype=bool)[nodes.taint_group]
        return mask

    # --- Score -------------------------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        """Raw scores for ``feasible`` (PreScore's filtered nodes): per constraint, the matching pods in the
        node's domain times log(domains + 2), plus maxSkew - 1. Nodes ignored by PreScore score -1."""
        pc = self.constraints(pod)
        soft = pc.soft()
        if not soft:
            return None
        require_all = pc.own or not self.system_defaulted
        has_all = _has_all_keys(nodes, soft) if require_all else np.ones(len(nodes), dtype=bool)
        valid = has_all[feasible]
        considered = feasible[valid]
        total = np.zeros(len(feasible), dtype=np.float64)
        for c in soft:
            codes = nodes.label(c.topology_key).codes
            counts = self._counts.counts(nodes, [c.matcher])
            if c.topology_key == HOSTNAME:
                size, per_node = len(considered), counts[feasible]
            else:
                size, per_node = self._domain_counts(c, pod, nodes, counts, considered, has_all)
                per_node = per_node[feasible]
            contribution = per_node * math.log(size + 2) + (c.max_skew - 1)
            total += np.where(codes[feasible] >= 0, contribution, 0.0)
        raw = np.floor(total + 0.5).astype(np.int64)
        raw[~valid] = -1
        return raw

    def _domain_counts(
        self, c: Constraint, pod: PodInfo, nodes: NodeTable, counts: IntArray, considered: IntArray, has_all: BoolArray
    ) -> tuple[int, IntArray]:
        """The number of domains among the considered nodes (a node without the label is in the "" domain), and
        per node the matching pods of its domain, counted over every node that passes the inclusion policies."""
        col = nodes.label(c.topology_key)
        missing = col.ids.get("", len(col.values))
        codes = np.where(col.codes >= 0, col.codes, missing)
        present = np.zeros(len(col.values) + 1, dtype=bool)
        present[codes[considered]] = True
        counted = has_all & self._inclusion(c, pod, nodes) & present[codes]
        totals = np.bincount(codes[counted], weights=counts[counted], minlength=len(present)).astype(np.int64)
        return int(present.sum()), totals[codes]

    def normalize(self, scores: IntArray) -> IntArray:
        """Fewer matching pods is better: ``100 * (max + min - s) / max`` over the scored nodes; ignored nodes 0."""
        out = np.zeros(len(scores), dtype=np.int64)
        valid = scores >= 0
        if not valid.any():
            return out
        low, high = int(scores[valid].min()), int(scores[valid].max())
        if high == 0:
            out[valid] = MAX_NODE_SCORE
        else:
            out[valid] = MAX_NODE_SCORE * (high + low - scores[valid]) // high
        return out


def required_node_affinity(pod: PodInfo, nodes: NodeTable) -> BoolArray:
    """``GetRequiredNodeAffinity``: the pod's nodeSelector and required node affinity terms (no addedAffinity)."""
    mask = np.ones(len(nodes), dtype=bool)
    spec = pod.pod.spec
    for key, value in spec.node_selector.items():
        mask &= nodes.label(key).mask_in([value])
    required = (
        spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if (spec.affinity and spec.affinity.node_affinity)
        else None
    )
    if required is not None:
        mask &= terms_mask(required.node_selector_terms, nodes)
    return mask


def _has_all_keys(nodes: NodeTable, constraints: Sequence[Constraint]) -> BoolArray:
    mask = np.ones(len(nodes), dtype=bool)
    for c in constraints:
        mask &= nodes.label(c.topology_key).codes >= 0
    return mask


def _within_skew(c: Constraint, nodes: NodeTable, counts: IntArray, eligible: BoolArray) -> BoolArray:
    """Nodes where matching pods in the domain + self-match - global minimum <= maxSkew. Domains are the label
    values of eligible nodes; with fewer than minDomains of them the global minimum is 0."""
    has = nodes.label(c.topology_key).codes >= 0
    totals = domain_totals(nodes, c.topology_key, counts, eligible)
    present = domain_totals(nodes, c.topology_key, eligible.astype(np.int64)) > 0
    domains = int(present.sum())
    if domains == 0:
        return has  # no eligible domain: the minimum is unbounded and every labelled node passes
    minimum = int(totals[present].min())
    if c.min_domains is not None and domains < c.min_domains:
        minimum = 0
    matching = node_totals(nodes, c.topology_key, totals)
    return has & (matching + int(c.self_match) - minimum <= c.max_skew)


_f: FilterPlugin = PodTopologySpread()
_s: ScorePlugin = PodTopologySpread()


def parse_args(raw: Any) -> PodTopologySpreadArgs:
    """PodTopologySpreadArgs from a pluginConfig entry, validated as ``ValidatePodTopologySpreadArgs`` does."""
    args = mapping(raw)
    check_fields(args, {"defaultConstraints", "defaultingType"})
    kind = string(args.get("defaultingType"), "defaultingType", "System")
    if kind not in ("System", "List"):
        raise ArgsError([FieldError.unsupported("defaultingType", kind, ["List", "System"])])
    entries = sequence(args.get("defaultConstraints"), "defaultConstraints")
    constraints = decode(entries, list[TopologySpreadConstraint], "defaultConstraints")
    if kind == "System" and constraints:
        raise ArgsError(
            [FieldError("defaultConstraints", 'Invalid value: when .defaultingType is "System", it must be empty')]
        )
    errors: list[FieldError] = []
    for i, c in enumerate(constraints):
        at = f"defaultConstraints[{i}]"
        if c.max_skew <= 0:
            errors.append(FieldError.invalid(f"{at}.maxSkew", c.max_skew, "must be greater than zero"))
        if not c.topology_key:
            errors.append(FieldError.required(f"{at}.topologyKey", "can not be empty"))
        if c.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
            errors.append(
                FieldError.unsupported(
                    f"{at}.whenUnsatisfiable", c.when_unsatisfiable, ["DoNotSchedule", "ScheduleAnyway"]
                )
            )
        if c.label_selector is not None:
            errors.append(
                FieldError.forbidden(
                    f"{at}.labelSelector", "constraint must not define a selector, as they deduced for each pod"
                )
            )
    if errors:
        raise ArgsError(errors)
    return PodTopologySpreadArgs(constraints, kind)


def _new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args)


EVENTS = POD_PLACEMENT_EVENTS
PLUGIN: PluginSpec[PodTopologySpreadArgs] = PluginSpec(
    NAME, _new, frozenset({"preFilter", "filter", "preScore", "score"}), EVENTS, parse_args, default_weight=2
)
