"""Shared by PodTopologySpread and InterPodAffinity: label selectors over pods, affinity terms, and per-node counts
of the placed pods a selector matches, summed per topology domain with numpy.

Counts are kept per selector and brought up to date by replaying ``NodeTable.changes`` (only the rows whose pods
changed are recounted), so a selector costs O(changed rows) per pod after its first use, not O(pods).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from phalanx.api.models import LabelSelector, PodAffinityTerm
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import BoolArray, IntArray

__all__ = [
    "NAMESPACE_NAME_LABEL",
    "AffinityTerm",
    "PodCounts",
    "PodMatcher",
    "Selector",
    "domain_totals",
    "label_key_requirements",
    "namespace_labels",
    "node_totals",
]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by kube-apiserver on every Namespace
_CACHED_SELECTORS = 512

Requirement = tuple[str, str, frozenset[str]]  # (key, operator, values)


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled ``metav1.LabelSelector``; ``requirements`` None is ``labels.Nothing()`` (a nil selector)."""

    requirements: tuple[Requirement, ...] | None

    @classmethod
    def of(cls, selector: LabelSelector | None, extra: Sequence[Requirement] = ()) -> Selector:
        if selector is None:
            return cls(None)
        reqs = [(k, "In", frozenset([v])) for k, v in selector.match_labels.items()]
        reqs += [(r.key, r.operator, frozenset(r.values)) for r in selector.match_expressions]
        return cls(tuple(sorted([*reqs, *extra], key=lambda r: (r[0], r[1], sorted(r[2])))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.requirements is None:
            return False
        for key, op, values in self.requirements:
            value = labels.get(key)
            if op == "In":
                if value is None or value not in values:
                    return False
            elif op == "NotIn":
                if value is not None and value in values:
                    return False
            elif op == "Exists":
                if value is None:
                    return False
            elif op == "DoesNotExist":
                if value is not None:
                    return False
            else:
                return False
        return True


def label_key_requirements(
    labels: Mapping[str, str], match_keys: Sequence[str], mismatch_keys: Sequence[str] = ()
) -> list[Requirement]:
    """matchLabelKeys (``key In [own value]``) and mismatchLabelKeys (``key NotIn [own value]``), as kube-apiserver
    merges them into the selector; keys the pod does not carry are ignored."""
    reqs = [(k, "In", frozenset([labels[k]])) for k in match_keys if k in labels]
    return reqs + [(k, "NotIn", frozenset([labels[k]])) for k in mismatch_keys if k in labels]


def namespace_labels(nodes: NodeTable, namespace: str) -> Mapping[str, str]:
    """A namespace's labels: from its Namespace object when the snapshot has one, else just the name label that
    kube-apiserver puts on every namespace."""
    return nodes.namespace_labels.get(namespace) or {NAMESPACE_NAME_LABEL: namespace}


@dataclass(frozen=True, slots=True)
class PodMatcher:
    """Which placed pods count: a namespace set or namespace selector, and a label selector."""

    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    skip_terminating: bool = False  # PodTopologySpread ignores pods being deleted

    def matches(self, pi: PodInfo, nodes: NodeTable) -> bool:
        meta = pi.pod.metadata
        if self.skip_terminating and meta.deletion_timestamp is not None:
            return False
        ns = meta.namespace
        if ns not in self.namespaces and (
            self.namespace_selector.requirements is None
            or not self.namespace_selector.matches(namespace_labels(nodes, ns))
        ):
            return False
        return self.selector.matches(meta.labels)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A decoded ``PodAffinityTerm`` of a pod (``framework.AffinityTerm``): without namespaces and namespaceSelector
    it covers the pod's own namespace; matchLabelKeys and mismatchLabelKeys are merged into the selector."""

    matcher: PodMatcher
    topology_key: str

    @classmethod
    def of(cls, term: PodAffinityTerm, pod: PodInfo) -> AffinityTerm:
        meta = pod.pod.metadata
        namespaces = frozenset(term.namespaces)
        if not namespaces and term.namespace_selector is None:
            namespaces = frozenset([meta.namespace])
        extra = label_key_requirements(meta.labels, term.match_label_keys, term.mismatch_label_keys)
        selector = Selector.of(term.label_selector, extra) if term.label_selector is not None else Selector(None)
        return cls(PodMatcher(namespaces, Selector.of(term.namespace_selector), selector), term.topology_key)

    def matches(self, pi: PodInfo, nodes: NodeTable) -> bool:
        return self.matcher.matches(pi, nodes)


def domain_totals(nodes: NodeTable, key: str, counts: IntArray, eligible: BoolArray | None = None) -> IntArray:
    """Per domain of topology ``key`` (its LabelColumn codes), the sum of ``counts`` over the ``eligible`` nodes
    that carry the label."""
    col = nodes.label(key)
    weights = counts if eligible is None else np.where(eligible, counts, 0)
    # Shifting the codes by one sends nodes without the label (-1) to bin 0, which is dropped: no masking needed.
    sums = np.bincount(col.codes + 1, weights=weights, minlength=len(col.values) + 1)
    return sums[1:].astype(np.int64)


def node_totals(nodes: NodeTable, key: str, totals: IntArray) -> IntArray:
    """Each node's value of the per-domain ``totals`` of topology ``key``; 0 for nodes without the label."""
    col = nodes.label(key)
    return np.concatenate((np.zeros(1, dtype=np.int64), totals))[col.codes + 1]


@dataclass(slots=True)
class _Counts:
    table: NodeTable  # held, so a new table (a new snapshot) is never mistaken for this one
    values: IntArray
    base: int
    generation: int
    pos: int  # how much of the table's change log ``values`` reflects

    def current(self, nodes: NodeTable) -> bool:
        return (
            self.table is nodes
            and self.base == nodes.changes_base
            and self.generation == nodes.generation
            and len(self.values) == len(nodes)
        )


class PodCounts:
    """Per node, the number of placed pods (bound and assumed) each matcher matches, cached per matcher."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[PodMatcher, ...], _Counts] = OrderedDict()

    def counts(self, nodes: NodeTable, matchers: Sequence[PodMatcher]) -> IntArray:
        """Pods matching every one of ``matchers`` (an empty list counts nothing). The array is the cache's own:
        read it before the next call."""
        if not matchers:
            return np.zeros(len(nodes), dtype=np.int64)
        key = tuple(matchers)
        entry = self._entries.get(key)
        log = nodes.changes
        if entry is None or not entry.current(nodes):
            entry = _Counts(nodes, self._recount(nodes, matchers, range(len(nodes))), 0, 0, 0)
            self._entries[key] = entry
            if len(self._entries) > _CACHED_SELECTORS:
                self._entries.popitem(last=False)
        elif entry.pos < len(log):
            dirty = set(log[entry.pos :])
            if len(dirty) * 4 > len(nodes):
                entry.values = self._recount(nodes, matchers, range(len(nodes)))
            else:
                rows = sorted(dirty)
                entry.values[rows] = self._recount(nodes, matchers, rows)
        entry.base, entry.generation, entry.pos = nodes.changes_base, nodes.generation, len(log)
        self._entries.move_to_end(key)
        return entry.values

    @staticmethod
    def _recount(nodes: NodeTable, matchers: Sequence[PodMatcher], rows: Sequence[int]) -> IntArray:
        out = np.zeros(len(rows), dtype=np.int64)
        node_pods = nodes.node_pods
        if len(node_pods) < len(nodes):
            return out  # a table without ClusterState: no pods anywhere
        for i, row in enumerate(rows):
            pods = node_pods[row]
            if pods:
                out[i] = sum(1 for pi in pods.values() if all(m.matches(pi, nodes) for m in matchers))
        return out
