"""Topology-aware PodGroup placement: which topology domains a gang may use, how much of it each can hold, and
which one to choose.

Two sources of intent:
  - v1.36 (``spec.schedulingConstraints.topology[0].key``): one candidate placement per value of the label,
    nodes without it excluded, bound members pinning the domain; feasible placements are scored by the placement
    scorers PodGroupPodsCount and NodeResourcesFit (MostAllocated over the placement, bin packing between domains).
  - phalanx annotations on the PodGroup (``docs/topology.md``) over the levels configured for
    TopologyPlacementGenerator: ``topology-required`` (one domain of that level), ``topology-preferred`` (the
    tightest domain of that level, else climb a level, else anywhere) and ``topology-unconstrained`` (packed into
    the fewest domains of the finest level it fits). Domains are chosen BestFit: the one the gang fills most
    tightly, so large domains stay free for large gangs.

Capacity is counted in slots: how many more pods of the gang's shape a node holds (``slots``), devices included
when the members' claims are their own and their devices node-local (``device_room``). For a gang whose members
share one shape and whose filters are all per-node, a domain fits exactly when its slots cover the gang, because
greedy placement of identical pods is optimal; other gangs are evaluated by running the cycle in each domain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phalanx.api.models import PodGroup
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import MAX_NODE_SCORE, BoolArray, CountingPlugin, CycleState, IntArray
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit
from phalanx.scheduling.profile import Profile
from phalanx.scheduling.ties import seeded_hash

__all__ = [
    "ANNOTATION_PREFERRED",
    "ANNOTATION_REQUIRED",
    "ANNOTATION_UNCONSTRAINED",
    "Domain",
    "Intent",
    "PlacementError",
    "best_fit",
    "device_room",
    "domains",
    "intent_of",
    "per_domain",
    "per_node_only",
    "pinned_domain",
    "score_v136",
    "slots",
    "tie_break",
]

ANNOTATION_REQUIRED = "scheduling.phalanx.dev/topology-required"
ANNOTATION_PREFERRED = "scheduling.phalanx.dev/topology-preferred"
ANNOTATION_UNCONSTRAINED = "scheduling.phalanx.dev/topology-unconstrained"
HOSTNAME = "kubernetes.io/hostname"
# Filters whose verdict for a node depends on that node alone: with only these, slot counting is exact.
_PER_NODE_FILTERS = {
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
}


_UNDETERMINED = "cannot determine domain for already scheduled pods"


class PlacementError(Exception):
    """The group's bound members contradict its topology (``more than 1 domain found for pod group``)."""


@dataclass(frozen=True, slots=True)
class Domain:
    """One candidate placement: a label value and the nodes carrying it."""

    key: str
    value: str
    code: int  # the value's id in the label column
    nodes: NodeTable

    @property
    def mask(self) -> BoolArray:
        return np.equal(self.nodes.label(self.key).codes, self.code)


@dataclass(frozen=True, slots=True)
class Intent:
    """How a PodGroup wants its topology: ``v136`` (the API constraint), ``required``, ``preferred`` or
    ``unconstrained``; ``levels`` are the label keys to try, tightest first."""

    mode: str
    levels: tuple[str, ...]


def intent_of(pg: PodGroup, profile: Profile, annotations: bool = True) -> Intent | None:
    """The group's topology intent, or None for no placement step (one placement of all nodes). ``annotations``
    (``Rules.topology_annotations``): read the phalanx annotations; off, only v1.36's API field counts."""
    if not profile.tas:
        return None
    notes = pg.metadata.annotations if annotations else {}
    levels = [lvl for lvl in profile.topology_levels if lvl != HOSTNAME]
    if ANNOTATION_REQUIRED in notes:
        return Intent("required", (notes[ANNOTATION_REQUIRED],))
    if ANNOTATION_PREFERRED in notes:
        key = notes[ANNOTATION_PREFERRED]
        climb = levels[: levels.index(key) + 1][::-1] if key in levels else [key]
        return Intent("preferred", tuple(climb))
    if notes.get(ANNOTATION_UNCONSTRAINED, "").lower() == "true" and levels:
        return Intent("unconstrained", tuple(levels[::-1]))
    constraints = pg.spec.scheduling_constraints if pg.spec else None
    if constraints is not None and constraints.topology:
        return Intent("v136", (constraints.topology[0].key,))
    return None


def pinned_domain(nodes: NodeTable, key: str, bound: Sequence[tuple[str, int]]) -> str | None:
    """The domain the group's bound members (pod key, node row) already occupy (None when none is bound).
    Raises PlacementError with TopologyPlacementGenerator's message when they contradict the topology."""
    col = nodes.label(key)
    values: list[str] = []
    for pod, row in sorted(bound):
        code = int(col.codes[row])
        if code < 0:
            raise PlacementError(f"{_UNDETERMINED}: no topology domain found for pod {pod}")
        if col.values[code] not in values:
            values.append(col.values[code])
    if len(values) > 1:
        # kube-scheduler names the first two domains it meets (in an order of its own); phalanx sorts them.
        first, second = sorted(values)[:2]
        raise PlacementError(f"{_UNDETERMINED}: more than 1 domain found for pod group: {first}, {second}")
    return values[0] if values else None


def domains(nodes: NodeTable, key: str, pinned: str | None = None) -> list[Domain]:
    """One domain per value of ``key``, sorted by value (v1.36 iterates a map; sorting makes runs repeatable)."""
    col = nodes.label(key)
    return [Domain(key, v, col.ids[v], nodes) for v in sorted(col.ids) if pinned is None or v == pinned]


def per_domain(nodes: NodeTable, key: str, values: IntArray) -> IntArray:
    """Sum ``values`` (one per node) over each value of label ``key``, indexed by the value's code."""
    col = nodes.label(key)
    has = col.codes >= 0
    out = np.bincount(col.codes[has], weights=values[has], minlength=len(col.values))
    return out.astype(np.int64)


def per_node_only(profile: Profile, pod: PodInfo, nodes: NodeTable) -> bool:
    """Whether every filter that applies to ``pod`` judges each node by itself (so slot counting is exact).
    A filter with nothing to check for the pod says so with ``skips(pod, nodes)`` (PreFilter's Skip)."""
    for plugin in profile.filters:
        if plugin.name in _PER_NODE_FILTERS:
            continue
        skipping = profile.skipping.get(id(plugin))
        if skipping is not None and skipping.skips(pod, nodes):
            continue
        # DynamicResources counts pods whose claims are their own and whose devices are node-local.
        if not (isinstance(plugin, CountingPlugin) and plugin.countable(pod, nodes)):
            return False
    return True


def slots(profile: Profile, pod: PodInfo, nodes: NodeTable) -> IntArray:
    """How many more pods shaped like ``pod`` each node can take (0 where a filter rejects it)."""
    mask = profile.feasible(CycleState(), pod, nodes)
    count = np.maximum(nodes.max_pods - nodes.pod_count, 0)
    fit = next((p for p in profile.filters if isinstance(p, NodeResourcesFit)), None)
    if fit is not None:
        cols, vals = fit.checked(pod)
        if len(cols):
            free = nodes.allocatable[:, cols] - nodes.requested[:, cols]
            count = np.minimum(count, (np.maximum(free, 0) // vals).min(axis=1))
    if pod.host_ports:
        count = np.minimum(count, 1)
    return device_room(profile, pod, nodes, np.where(mask, count, 0))


def device_room(profile: Profile, pod: PodInfo, nodes: NodeTable, caps: IntArray) -> IntArray:
    """``caps`` (slots by the other filters) lowered to what each node's devices take for pods like ``pod``, when
    DynamicResources can count them node by node; otherwise ``caps`` as given."""
    if not pod.pod.spec.resource_claims:
        return caps
    for plugin in profile.counting:
        devices = plugin.device_slots(pod, nodes, caps)
        if devices is not None:
            caps = np.minimum(caps, devices)
    return caps


def score_v136(
    profile: Profile, nodes: NodeTable, doms: Sequence[Domain], proposed: Sequence[Sequence[PodInfo]], bound: int
) -> IntArray:
    """Total placement scores: PodGroupPodsCount (scheduled + proposed, normalised by the maximum) and
    NodeResourcesFit (MostAllocated over the placement's nodes including the proposed pods), times weights."""
    total = np.zeros(len(doms), dtype=np.int64)
    codes = np.array([d.code for d in doms], dtype=np.intp)
    for name, weight in profile.placement_scores:
        if name == "PodGroupPodsCount":
            raw = np.array([bound + len(p) for p in proposed], dtype=np.int64)
            top = int(raw.max()) if len(raw) else 0
            total += weight * (raw * MAX_NODE_SCORE // top if top else raw)
        elif name == "NodeResourcesFit" and doms:
            total += weight * _most_allocated(profile, nodes, doms[0].key, codes, proposed)
    return total


def _most_allocated(
    profile: Profile, nodes: NodeTable, key: str, codes: IntArray, proposed: Sequence[Sequence[PodInfo]]
) -> IntArray:
    num = np.zeros(len(codes), dtype=np.int64)
    den = np.zeros(len(codes), dtype=np.int64)
    for spec in profile.fit_resources:
        col = nodes.resources.column.get(spec.name)
        if col is None:
            continue
        alloc = per_domain(nodes, key, nodes.allocatable[:, col])[codes]
        extra = np.array([sum(p.requests.get(spec.name, 0) for p in pods) for pods in proposed], dtype=np.int64)
        used = per_domain(nodes, key, nodes.requested[:, col])[codes] + extra
        has = alloc > 0
        num += np.where(has, np.minimum(used, alloc) * MAX_NODE_SCORE // np.maximum(alloc, 1) * spec.weight, 0)
        den += np.where(has, spec.weight, 0)
    return np.where(den > 0, num // np.maximum(den, 1), 0)


def best_fit(free: IntArray, need: int) -> list[int] | None:
    """The domains (codes) to use for ``need`` pods given each domain's free slots, as Kueue's BestFit picks
    them: the fullest-capacity domains first, with the last one swapped for the tightest domain that still covers
    the remainder. None when all domains together cannot hold ``need``."""
    order = sorted(range(len(free)), key=lambda d: (-int(free[d]), d))
    picked: list[int] = []
    covered = 0
    for d in order:
        if covered >= need or free[d] <= 0:
            break
        picked.append(d)
        covered += int(free[d])
    if covered < need or not picked:
        return None
    rest = need - (covered - int(free[picked[-1]]))
    candidates = [d for d in order if d not in picked[:-1] and free[d] >= rest]
    picked[-1] = min(candidates, key=lambda d: (int(free[d]), d))
    return picked


def tie_break(seed: int, dom: Domain) -> int:
    return seeded_hash(seed, f"{dom.key}={dom.value}")
