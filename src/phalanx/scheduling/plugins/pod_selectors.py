"""Shared by PodTopologySpread and InterPodAffinity: label selectors over pods, affinity terms, and per-node counts
of the placed pods a selector matches, summed per topology domain with numpy.

Counts are kept per selector and brought up to date by replaying ``NodeTable.changes`` (only the rows whose pods
changed are recounted), so a selector costs O(changed rows) per pod after its first use, not O(pods).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec
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
    "namespace_labels",
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

    def key(self) -> bytes:
        if self.requirements is None:
            return b"nothing"
        return msgspec.json.encode([(k, op, sorted(v)) for k, op, v in self.requirements])


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

    def key(self) -> bytes:
        return msgspec.json.encode(
            (sorted(self.namespaces), self.namespace_selector.key(), self.selector.key(), self.skip_terminating)
        )


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
    take = col.codes >= 0 if eligible is None else eligible & (col.codes >= 0)
    sums = np.bincount(col.codes[take], weights=counts[take], minlength=len(col.values))
    return sums.astype(np.int64)


class PodCounts:
    """Per node, the number of placed pods (bound and assumed) each matcher matches, cached per matcher."""

    def __init__(self) -> None:
        self._entries: OrderedDict[bytes, tuple[IntArray, int, int, int]] = OrderedDict()

    def counts(self, nodes: NodeTable, matchers: Sequence[PodMatcher]) -> IntArray:
        """Pods matching every one of ``matchers`` (an empty list counts nothing)."""
        if not matchers:
            return np.zeros(len(nodes), dtype=np.int64)
        key = b"&".join(m.key() for m in matchers)
        entry = self._entries.get(key)
        log = nodes.changes
        if (
            entry is None
            or entry[1] != nodes.changes_base
            or entry[2] != nodes.generation
            or len(entry[0]) != len(nodes)
        ):
            values = self._full(nodes, matchers)
        else:
            values, pos = entry[0], entry[3]
            if pos < len(log):
                dirty = set(log[pos:])
                if len(dirty) * 4 > len(nodes):
                    values = self._full(nodes, matchers)
                else:
                    pods = nodes.node_pods
                    for row in dirty:
                        values[row] = sum(1 for pi in pods[row].values() if all(m.matches(pi, nodes) for m in matchers))
        self._entries[key] = (values, nodes.changes_base, nodes.generation, len(log))
        self._entries.move_to_end(key)
        if len(self._entries) > _CACHED_SELECTORS:
            self._entries.popitem(last=False)
        return values

    @staticmethod
    def _full(nodes: NodeTable, matchers: Sequence[PodMatcher]) -> IntArray:
        values = np.zeros(len(nodes), dtype=np.int64)
        for row, pods in enumerate(nodes.node_pods[: len(nodes)]):
            if pods:
                values[row] = sum(1 for pi in pods.values() if all(m.matches(pi, nodes) for m in matchers))
        return values
