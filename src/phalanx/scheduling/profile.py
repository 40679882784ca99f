"""A scheduling profile: the ordered filters and weighted scores of one schedulerName, and the per-pod
algorithm (``schedulePod``: filter every node, score the feasible ones, select the best).

Static plugins (whose verdict depends only on the pod's signature and the nodes' labels and taints) are cached
per signature, so a gang's identical members, or a Deployment's replicas, pay for them once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.diagnosis import Diagnosis
from phalanx.scheduling.framework import BoolArray, CycleState, FilterPlugin, IntArray, ScorePlugin

__all__ = ["Placement", "Profile"]


@dataclass(frozen=True, slots=True)
class Placement:
    """The outcome of one pod's attempt: a node row, or a diagnosis of why none fits."""

    node: int | None
    diagnosis: Diagnosis | None = None
    feasible_nodes: int = 0


@dataclass
class Profile:
    scheduler_name: str
    filters: Sequence[FilterPlugin]
    scores: Sequence[tuple[ScorePlugin, int]]
    seed: int = 0
    _static_masks: dict[tuple[str, bytes], BoolArray] = field(default_factory=dict)
    _static_scores: dict[tuple[str, bytes], IntArray | None] = field(default_factory=dict)
    _generation: int = -1
    _node_hash: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def _sync(self, nodes: NodeTable) -> None:
        if self._generation != nodes.generation or len(self._node_hash) != len(nodes):
            self._static_masks.clear()
            self._static_scores.clear()
            self._generation = nodes.generation
            self._node_hash = np.array([_hash(self.seed, n) for n in nodes.names], dtype=np.int64)

    def feasible(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> BoolArray:
        """The AND of every filter's mask."""
        self._sync(nodes)
        mask = np.ones(len(nodes), dtype=bool)
        for plugin in self.filters:
            mask &= self._filter(plugin, state, pod, nodes)
        return mask

    def _filter(self, plugin: FilterPlugin, state: CycleState, pod: PodInfo, nodes: NodeTable) -> BoolArray:
        if not plugin.static:
            return plugin.filter(state, pod, nodes)
        key = (plugin.name, pod.signature)
        mask = self._static_masks.get(key)
        if mask is None:
            mask = self._static_masks[key] = plugin.filter(state, pod, nodes)
        return mask

    def schedule(self, pod: PodInfo, nodes: NodeTable) -> Placement:
        """Filter, score and select, as ``schedulePod`` does (every node is evaluated: percentageOfNodesToScore
        is effectively 100, which costs nothing extra when filters are vectorised)."""
        state = CycleState()
        mask = self.feasible(state, pod, nodes)
        rows = np.flatnonzero(mask)
        if len(rows) == 0:
            return Placement(None, self.diagnose(state, pod, nodes))
        if len(rows) == 1:
            return Placement(int(rows[0]), feasible_nodes=1)
        total = self.total_scores(state, pod, nodes, rows)
        return Placement(self.select(pod, rows, total), feasible_nodes=len(rows))

    def total_scores(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray) -> IntArray:
        total = np.zeros(len(rows), dtype=np.int64)
        for plugin, weight in self.scores:
            raw = self._score(plugin, state, pod, nodes, rows)
            if raw is not None:
                total += weight * plugin.normalize(raw)
        return total

    def _score(
        self, plugin: ScorePlugin, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray
    ) -> IntArray | None:
        if not plugin.static:
            return plugin.score(state, pod, nodes, rows)
        key = (plugin.name, pod.signature)
        if key not in self._static_scores:
            self._static_scores[key] = plugin.score(state, pod, nodes, np.arange(len(nodes)))
        full = self._static_scores[key]
        return None if full is None else full[rows]

    def select(self, pod: PodInfo, rows: IntArray, total: IntArray) -> int:
        """The highest total score; ties go to a seeded hash of node and pod names, so the choice is spread
        like kube-scheduler's random tie-break yet reproducible and independent of input order."""
        best = rows[total == total.max()]
        if len(best) == 1:
            return int(best[0])
        salt = _hash(self.seed, pod.key)
        return int(best[np.argmin(self._node_hash[best] ^ salt)])

    def diagnose(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> Diagnosis:
        """Each node is rejected by the first filter that fails it, as the framework's filter loop does."""
        diag = Diagnosis(len(nodes))
        remaining = np.ones(len(nodes), dtype=bool)
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


def _hash(seed: int, text: str) -> int:
    digest = hashlib.blake2b(f"{seed}:{text}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)
