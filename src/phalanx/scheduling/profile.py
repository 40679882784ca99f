"""A scheduling profile: the ordered filters and weighted scores of one schedulerName, and the per-pod
algorithm (``schedulePod``: filter every node, score the feasible ones, select the best).

Two caches make a pod cost a few vector operations instead of a full evaluation:
  - static plugins (verdicts that depend only on the pod's signature and the nodes' labels and taints) are
    computed once per signature;
  - usage-dependent plugins keep a full-length result per pod shape (signature plus requests) and, for the next
    pod of that shape, recompute only the rows whose usage changed since (``NodeTable.changes``). A gang's
    identical members, or a Deployment's replicas, therefore cost O(changed rows) each;
  - plugins whose verdict on a node depends on other nodes (``incremental = False``: PodTopologySpread,
    InterPodAffinity) are not cached here; they keep their own per-selector pod counts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.diagnosis import Diagnosis
from phalanx.scheduling.framework import (
    BoolArray,
    CountingPlugin,
    CycleState,
    FilterPlugin,
    IntArray,
    PreFilterPlugin,
    ResolvingPlugin,
    ScorePlugin,
    SkippingPlugin,
    Status,
)
from phalanx.scheduling.plugins.resource_allocation import ResourceSpec
from phalanx.scheduling.reasons import Reason
from phalanx.scheduling.ties import seeded_hash

__all__ = ["BEYOND_V136_SCORES", "Attempt", "Profile", "nodes_to_find"]

_CACHE_SHAPES = 256  # usage-dependent results kept per plugin (LRU by pod shape)
_MIN_FEASIBLE_NODES_TO_FIND = 100  # kube-scheduler's minFeasibleNodesToFind
_MIN_FEASIBLE_NODES_PERCENTAGE = 5  # minFeasibleNodesPercentageToFind
BEYOND_V136_SCORES = frozenset({"GpuShare"})  # phalanx's own score plugins (Rules.gpu_share_scoring)


@dataclass(frozen=True, slots=True)
class Attempt:
    """The outcome of one pod's attempt: a node row, or a diagnosis of why none fits. ``candidates``: the rows
    kube-scheduler could have chosen instead (a random tie-break, or a sample of percentageOfNodesToScore), when
    the profile reports them and there is more than one."""

    node: int | None
    diagnosis: Diagnosis | None = None
    feasible_nodes: int = 0
    candidates: tuple[int, ...] = ()
    rules: tuple[str, ...] = ()  # beyond-v1.36 rules (Rules field names) that changed the choice of node


def nodes_to_find(percentage: int, num_nodes: int) -> int:
    """``numFeasibleNodesToFind``: how many feasible nodes kube-scheduler looks for before it stops filtering
    (``percentage`` 0 is the adaptive default, 50 % minus one per 125 nodes, at least 5 %; never under 100)."""
    if num_nodes < _MIN_FEASIBLE_NODES_TO_FIND:
        return num_nodes
    if percentage == 0:
        percentage = max(50 - num_nodes // 125, _MIN_FEASIBLE_NODES_PERCENTAGE)
    return max(num_nodes * percentage // 100, _MIN_FEASIBLE_NODES_TO_FIND)


@dataclass
class _Incremental:
    """A full-length per-node result and the point of the change log it reflects."""

    values: Any
    base: int
    pos: int


@dataclass
class Profile:
    scheduler_name: str
    filters: Sequence[FilterPlugin]
    scores: Sequence[tuple[ScorePlugin, int]]
    seed: int = 0
    # Topology-aware PodGroup placement (scheduling/placement.py)
    tas: bool = True
    placement_scores: Sequence[tuple[str, int]] = (("PodGroupPodsCount", 1), ("NodeResourcesFit", 1))
    topology_levels: Sequence[str] = ()
    fit_resources: Sequence[ResourceSpec] = (ResourceSpec("cpu"), ResourceSpec("memory"))
    preemption: bool = True  # DefaultPreemption's PostFilter (scheduling/preemption/)
    incremental: bool = True  # False recomputes everything for every pod (the reference the caches are tested against)
    # Ties between equally scored nodes go to the first node in name order for every pod (the FGD experiment's
    # simulator: node names carry a random per-seed prefix, so this is a static random priority) instead of a
    # seeded order drawn per pod.
    static_ties: bool = False
    # Compatibility mode (Rules.seeded_tie_break off): report the tied nodes as candidates. Rules.all_nodes_scored
    # off: kube-scheduler scores only a sample of percentageOfNodesToScore (0: adaptive) feasible nodes; the nodes
    # a sample could have chosen are reported as candidates. None: every feasible node is scored.
    report_ties: bool = False
    percentage_of_nodes_to_score: int | None = None
    _static: dict[tuple[str, bytes], Any] = field(default_factory=dict)
    _dynamic: OrderedDict[tuple[str, bytes], _Incremental] = field(default_factory=OrderedDict)
    _generation: int = -1
    _node_hash: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Optional abilities, sorted out once by type (the per-pod loops never ask a plugin what it can do).
    pre_filters: list[PreFilterPlugin] = field(init=False)
    skipping: dict[int, SkippingPlugin] = field(init=False)
    resolving: dict[int, ResolvingPlugin] = field(init=False)
    counting: list[CountingPlugin] = field(init=False)
    _cached: set[int] = field(init=False)

    def __post_init__(self) -> None:
        self.pre_filters = [p for p in self.filters if isinstance(p, PreFilterPlugin)]
        self.skipping = {id(p): p for p in self.filters if isinstance(p, SkippingPlugin)}
        self.resolving = {id(p): p for p in self.filters if isinstance(p, ResolvingPlugin)}
        self.counting = [p for p in self.filters if isinstance(p, CountingPlugin)]
        plugins: list[FilterPlugin | ScorePlugin] = [*self.filters, *(p for p, _ in self.scores)]
        self._cached = {id(p) for p in plugins if _incremental_plugin(p)}

    def _sync(self, nodes: NodeTable) -> None:
        if self._generation != nodes.generation or len(self._node_hash) != len(nodes):
            self._static.clear()
            self._dynamic.clear()
            self._generation = nodes.generation
            self._node_hash = np.array([_hash(self.seed, n) for n in nodes.names], dtype=np.int64)

    # --- filters ---------------------------------------------------------------------------------------------

    def feasible(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> BoolArray:
        """The nodes PreFilter allows, AND every filter's mask."""
        self._sync(nodes)
        allowed, status, _ = self._pre_filter(state, pod, nodes)
        if not status.ok:
            return np.zeros(len(nodes), dtype=bool)
        mask = np.ones(len(nodes), dtype=bool) if allowed is None else allowed.copy()
        for plugin in self.filters:
            mask &= self._filter(plugin, state, pod, nodes)
        return mask

    def _pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> tuple[BoolArray | None, Status, str]:
        """The intersection of the PreFilter node sets, the first rejection, and the plugins that narrowed."""
        key = ("PreFilter", pod.signature)
        if key not in self._static:
            allowed: BoolArray | None = None
            narrowing: list[str] = []
            verdict = Status()
            for plugin in self.pre_filters:
                mask, status = plugin.pre_filter(state, pod, nodes)
                if not status.ok:
                    verdict = status
                    break
                if mask is not None:
                    allowed = mask if allowed is None else allowed & mask
                    narrowing.append(plugin.name)
            self._static[key] = (allowed, verdict, " ".join(sorted(narrowing)))
        return self._static[key]  # type: ignore[no-any-return]

    def _filter(self, plugin: FilterPlugin, state: CycleState, pod: PodInfo, nodes: NodeTable) -> BoolArray:
        if plugin.static:
            key = ("Filter" + plugin.name, pod.signature)
            if key not in self._static:
                self._static[key] = plugin.filter(state, pod, nodes)
            return self._static[key]  # type: ignore[no-any-return]
        if id(plugin) not in self._cached:
            return plugin.filter(state, pod, nodes)

        def compute(rows: IntArray | None) -> BoolArray:
            return plugin.filter(state, pod, nodes, rows)

        return self._incremental("Filter" + plugin.name, pod, nodes, compute)  # type: ignore[no-any-return]

    def _incremental(self, name: str, pod: PodInfo, nodes: NodeTable, compute: Callable[[IntArray | None], Any]) -> Any:
        """The cached full-length result for ``pod``'s shape, with the rows changed since brought up to date.
        ``name`` is extension point + plugin name, so a plugin's filter and score never share an entry."""
        if not self.incremental:
            return compute(None)
        key = (name, pod.shape)
        entry = self._dynamic.get(key)
        log = nodes.changes
        if entry is None or entry.base != nodes.changes_base:
            entry = _Incremental(compute(None), nodes.changes_base, len(log))
            self._dynamic[key] = entry
            if len(self._dynamic) > _CACHE_SHAPES:
                self._dynamic.popitem(last=False)
        elif entry.pos < len(log):
            dirty = np.unique(np.asarray(log[entry.pos :], dtype=np.intp))
            if entry.values is None:
                pass  # the plugin skips this shape whatever the usage
            elif len(dirty) * 4 > len(nodes):
                entry.values = compute(None)
            else:
                entry.values[dirty] = compute(dirty)
            entry.pos = len(log)
        self._dynamic.move_to_end(key)
        return entry.values

    # --- scores ----------------------------------------------------------------------------------------------

    def schedule(
        self, pod: PodInfo, nodes: NodeTable, within: BoolArray | None = None, nominated: int | None = None
    ) -> Attempt:
        """Filter, score and select, as ``schedulePod`` does (every node is evaluated: percentageOfNodesToScore
        is effectively 100, which costs nothing extra when filters are vectorised). ``within`` restricts the
        visible nodes to one topology placement, as ``AssumePlacement`` does. A pod ``nominated`` to a row after
        its preemption goes there if it passes Filter there, unscored (``evaluateNominatedNode``)."""
        state = CycleState()
        mask = self.feasible(state, pod, nodes)
        if within is not None:
            mask &= within
        if nominated is not None and 0 <= nominated < len(mask) and mask[nominated]:
            return Attempt(nominated, feasible_nodes=1)
        rows = np.flatnonzero(mask)
        if len(rows) == 0:
            return Attempt(None, self.diagnose(state, pod, nodes, within))
        if len(rows) == 1:
            return Attempt(int(rows[0]), feasible_nodes=1)
        own: list[IntArray] = []
        total = self.total_scores(state, pod, nodes, rows, own)
        row = self.select(pod, rows, total)
        rules: tuple[str, ...] = ()
        if own:
            # Would v1.36's plugins alone have chosen this node (or one tied with it)?
            v136 = total - sum(own)
            if v136[rows == row][0] != v136.max():
                rules = ("gpu_share_scoring",)
        candidates: tuple[int, ...] = ()
        if self.report_ties or self.percentage_of_nodes_to_score is not None:
            candidates = self._candidates(state, pod, nodes, within, rows, total)
            candidates = candidates if len(candidates) > 1 else ()
        return Attempt(row, feasible_nodes=len(rows), candidates=candidates, rules=rules)

    def _candidates(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        within: BoolArray | None,
        rows: IntArray,
        total: IntArray,
    ) -> tuple[int, ...]:
        """The rows kube-scheduler might choose: the best-scored ones (a random tie-break), or, when it scores a
        sample of ``k`` feasible nodes only, every node that is best in some sample of ``k``, i.e. scored no lower
        than the k-th lowest (scores as computed over all feasible nodes: normalisation over a sample can differ)."""
        if self.percentage_of_nodes_to_score is not None:
            allowed, _, _ = self._pre_filter(state, pod, nodes)
            visible = np.ones(len(nodes), dtype=bool) if allowed is None else allowed.copy()
            if within is not None:
                visible &= within
            k = nodes_to_find(self.percentage_of_nodes_to_score, int(visible.sum())) if self.scores else 1
            if k < len(rows):
                floor = np.partition(total, k - 1)[k - 1]
                return tuple(int(r) for r in rows[total >= floor])
        if not self.report_ties:
            return ()
        return tuple(int(r) for r in rows[total == total.max()])

    def total_scores(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray, own: list[IntArray] | None = None
    ) -> IntArray:
        """The weighted sum of every score plugin over ``rows``. ``own`` collects the part of phalanx's own score
        plugins (beyond v1.36: GpuShare), to tell whether they changed the pick."""
        total = np.zeros(len(rows), dtype=np.int64)
        for plugin, weight in self.scores:
            if id(plugin) in self._cached:
                full = self._score(plugin, state, pod, nodes)
                raw = None if full is None else full[rows]
            else:
                raw = plugin.score(state, pod, nodes, rows)  # may depend on the feasible set (PreScore's nodes)
            if raw is not None:
                part = weight * plugin.normalize(raw)
                total += part
                if own is not None and plugin.name in BEYOND_V136_SCORES:
                    own.append(part)
        return total

    def _score(self, plugin: ScorePlugin, state: CycleState, pod: PodInfo, nodes: NodeTable) -> IntArray | None:
        """The plugin's raw scores over every node (None when it skips the pod)."""
        if plugin.static:
            key = ("Score" + plugin.name, pod.signature)
            if key not in self._static:
                self._static[key] = plugin.score(state, pod, nodes, np.arange(len(nodes)))
            return self._static[key]  # type: ignore[no-any-return]

        def compute(rows: IntArray | None) -> IntArray | None:
            return plugin.score(state, pod, nodes, np.arange(len(nodes)) if rows is None else rows)

        return self._incremental("Score" + plugin.name, pod, nodes, compute)  # type: ignore[no-any-return]

    def select(self, pod: PodInfo, rows: IntArray, total: IntArray) -> int:
        """The highest total score; ties go to a seeded hash of node and pod names, so the choice is spread
        like kube-scheduler's random tie-break yet reproducible and independent of input order."""
        best = rows[total == total.max()]
        if len(best) == 1:
            return int(best[0])
        if self.static_ties:
            return int(best.min())  # rows are in node name order
        salt = _hash(self.seed, pod.key)
        return int(best[np.argmin(self._node_hash[best] ^ salt)])

    def diagnose(self, state: CycleState, pod: PodInfo, nodes: NodeTable, within: BoolArray | None = None) -> Diagnosis:
        """Each node is rejected by the first filter that fails it, as the framework's filter loop does; nodes a
        PreFilter left out count as not satisfying that plugin. Only the nodes ``within`` are counted."""
        visible = np.ones(len(nodes), dtype=bool) if within is None else within
        diag = Diagnosis(int(visible.sum()))
        allowed, status, narrowing = self._pre_filter(state, pod, nodes)
        if not status.ok:
            diag.pre_filter_message = status.message
            diag.rejected_by[status.plugin] += diag.num_nodes
            diag.unresolvable_nodes = diag.num_nodes
            return diag
        remaining = visible.copy() if allowed is None else allowed & visible
        if allowed is not None and (excluded := int((~allowed & visible).sum())):
            diag.reasons[Reason(f"node(s) didn't satisfy plugin(s) [{narrowing}]", unresolvable=True)] += excluded
            for name in narrowing.split():
                diag.rejected_by[name] += excluded
            diag.unresolvable_nodes += excluded
        for plugin in self.filters:
            mask = self._filter(plugin, state, pod, nodes)
            rejected = np.flatnonzero(remaining & ~mask)
            if len(rejected):
                diag.reasons.update(plugin.reasons(state, pod, nodes, rejected))
                diag.rejected_by[plugin.name] += len(rejected)
                if plugin.unresolvable:
                    diag.unresolvable_nodes += len(rejected)
                remaining &= mask
        return diag

    # --- preemption ------------------------------------------------------------------------------------------

    def resolvable(self, pod: PodInfo, nodes: NodeTable, devices: bool = True) -> BoolArray:
        """The nodes whose first failing filter is one preemption could satisfy (status Unschedulable, not
        UnschedulableAndUnresolvable): ``NodesForStatusCode(Unschedulable)``. ``devices``: ask plugins that can
        tell whether freeing victims' devices helps (``Rules.dra_aware_preemption``)."""
        state = CycleState()
        allowed, status, _ = self._pre_filter(state, pod, nodes)
        out = np.zeros(len(nodes), dtype=bool)
        if not status.ok:
            return out
        remaining = np.ones(len(nodes), dtype=bool) if allowed is None else allowed.copy()
        for plugin in self.filters:
            mask = self._filter(plugin, state, pod, nodes)
            resolving = self.resolving.get(id(plugin)) if devices else None
            if resolving is not None:
                # A plugin that can tell which of its rejections preemption would resolve (DynamicResources).
                out |= resolving.resolvable_rows(state, pod, nodes, remaining & ~mask)
            elif getattr(plugin, "per_reason", False):
                # The code depends on the reason (own affinity unmet, a missing topology label): each node's
                # reason records say it. Such plugins reject few nodes, so they are asked node by node.
                for row in np.flatnonzero(remaining & ~mask):
                    one = np.array([row], dtype=np.intp)
                    if not any(r.unresolvable for r in plugin.reasons(state, pod, nodes, one)):
                        out[row] = True
            elif not plugin.unresolvable:
                out |= remaining & ~mask
            remaining &= mask
        return out

    def rejecting_filter(self, pod: PodInfo, nodes: NodeTable, row: int) -> FilterPlugin | None:
        """The first filter that rejects ``pod`` on ``row`` as the node is now (None: it fits), evaluating
        usage-dependent filters for that row only: the reprieve check of preemption."""
        state = CycleState()
        rows = np.array([row], dtype=np.intp)
        for plugin in self.filters:
            if plugin.static:
                ok = bool(self._filter(plugin, state, pod, nodes)[row])
            else:
                ok = bool(plugin.filter(state, pod, nodes, rows)[0])
            if not ok:
                return plugin
        return None


def _incremental_plugin(plugin: FilterPlugin | ScorePlugin) -> bool:
    """False for plugins whose verdict on a node depends on other nodes (pods counted per topology domain): they
    declare ``incremental = False`` and are recomputed for every pod over all nodes."""
    return getattr(plugin, "incremental", True) is not False


def _hash(seed: int, text: str) -> int:
    return seeded_hash(seed, text, signed=True)
