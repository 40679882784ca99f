"""The node table: one row per node, numpy arrays for everything the filters and scores read.

Static columns (allocatable, labels, taints, unschedulable) change only when a node changes; usage columns
(requested, non-zero requested, pod count, host ports) change with every assume/forget. Rows are addressed by a
dense index; node names sort the rows, so the table does not depend on input order or on the history of node
events (``insert``/``delete`` keep the order, so an engine fed events decides like one loaded afresh).
"""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from phalanx.api.models import Node, Taint
from phalanx.arrays import BoolArray, IntArray
from phalanx.cluster.resources import ResourceIndex, allocatable_amount

if TYPE_CHECKING:
    from phalanx.cluster.pods import PodInfo

__all__ = ["AffinityGroup", "HostPort", "LabelColumn", "NodeTable"]


HostPort = tuple[str, str, int]  # (protocol, hostIP, port)
_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(slots=True)
class LabelColumn:
    """One label key over all nodes: ``codes[i]`` is the id of node i's value, -1 where the label is missing."""

    codes: npt.NDArray[np.int32]
    ids: dict[str, int]
    values: list[str]

    def mask_in(self, values: Sequence[str]) -> BoolArray:
        wanted = [self.ids[v] for v in values if v in self.ids]
        if not wanted:
            return np.zeros(len(self.codes), dtype=bool)
        if len(wanted) == 1:
            return np.equal(self.codes, wanted[0])
        return np.isin(self.codes, wanted)

    def present(self) -> BoolArray:
        return self.codes >= 0

    def integers(self) -> tuple[IntArray, BoolArray]:
        """Each node's value as an integer, and which nodes have an integer value (for Gt/Lt)."""
        parsed = np.zeros(len(self.values), dtype=np.int64)
        ok = np.zeros(len(self.values), dtype=bool)
        for i, v in enumerate(self.values):
            # kube-scheduler parses with strconv.ParseInt(v, 10, 64): ASCII digits only, and within int64.
            if _INTEGER.fullmatch(v):
                with contextlib.suppress(OverflowError):
                    parsed[i], ok[i] = int(v), True
        has = self.codes >= 0
        safe = np.where(has, self.codes, 0)
        if not self.values:
            return np.zeros(len(self.codes), dtype=np.int64), np.zeros(len(self.codes), dtype=bool)
        return parsed[safe], has & ok[safe]


@dataclass(slots=True)
class AffinityGroup:
    """Placed pods with the same namespace and inter-pod (anti-)affinity terms (``PodInfo.affinity_key``): the
    InterPodAffinity plugin evaluates the terms of one of them and applies the verdict to every node holding one."""

    pod: PodInfo
    count: IntArray  # [N]: members on each node
    total: int = 0


@dataclass
class NodeTable:
    """All nodes of the cluster as arrays. Built once per node set; usage arrays are mutated by assume/forget."""

    names: list[str]
    resources: ResourceIndex
    allocatable: IntArray  # [N, R]
    max_pods: IntArray  # [N]
    unschedulable: BoolArray  # [N]
    labels: list[dict[str, str]]
    taints: list[tuple[Taint, ...]]
    # usage
    requested: IntArray  # [N, R]
    nonzero_requested: IntArray  # [N, 2]: cpu, memory with 100m/200Mi defaults
    pod_count: IntArray  # [N]
    host_ports: list[list[HostPort]]
    index: dict[str, int] = field(default_factory=dict)
    # taint groups: nodes with the same taints share one toleration check
    taint_group: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    taint_sets: list[tuple[Taint, ...]] = field(default_factory=list)
    _label_columns: dict[str, LabelColumn] = field(default_factory=dict)
    generation: int = 0  # bumped on every static change, to invalidate caches keyed on it
    # Rows whose usage changed, in order: caches of usage-dependent filters and scores replay it to update only
    # those rows. ``changes_base`` is bumped when the log is cleared, which invalidates every cache.
    changes: list[int] = field(default_factory=list)
    changes_base: int = 0
    # Set by ClusterState, for plugins that count pods per topology domain: the pods on each row (bound and
    # assumed), and the placed pods that carry inter-pod (anti-)affinity grouped by their terms.
    node_pods: list[dict[str, PodInfo]] = field(default_factory=list)
    affinity_groups: dict[bytes, AffinityGroup] = field(default_factory=dict)
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # Namespace objects, when given
    # Extended resources a DeviceClass serves (extendedResourceName, DRAExtendedResource): on a node that does not
    # advertise one, DynamicResources checks it instead of NodeResourcesFit.
    dra_resources: frozenset[str] = frozenset()

    def touch(self, row: int) -> None:
        """Record that row ``row``'s usage changed."""
        if len(self.changes) >= 1 << 20:
            self.changes.clear()
            self.changes_base += 1
        self.changes.append(row)

    @classmethod
    def build(cls, nodes: Sequence[Node], resources: ResourceIndex) -> NodeTable:
        ordered = sorted(nodes, key=lambda n: n.metadata.name)
        for node in ordered:
            _add_resources(node, resources)
        n, r = len(ordered), len(resources)
        alloc = np.zeros((n, r), dtype=np.int64)
        max_pods = np.zeros(n, dtype=np.int64)
        for i, node in enumerate(ordered):
            alloc[i], max_pods[i] = _allocatable(node, resources)
        table = cls(
            names=[node.metadata.name for node in ordered],
            resources=resources,
            allocatable=alloc,
            max_pods=max_pods,
            unschedulable=np.array([node.spec.unschedulable for node in ordered], dtype=bool),
            labels=[dict(node.metadata.labels) for node in ordered],
            taints=[tuple(node.spec.taints) for node in ordered],
            requested=np.zeros((n, r), dtype=np.int64),
            nonzero_requested=np.zeros((n, 2), dtype=np.int64),
            pod_count=np.zeros(n, dtype=np.int64),
            host_ports=[[] for _ in ordered],
        )
        table.index = {name: i for i, name in enumerate(table.names)}
        table._group_taints()
        return table

    def __len__(self) -> int:
        return len(self.names)

    def _group_taints(self) -> None:
        groups: dict[tuple[tuple[str, str, str], ...], int] = {}
        self.taint_sets = []
        codes = np.zeros(len(self.names), dtype=np.int32)
        for i, taints in enumerate(self.taints):
            key = tuple((t.key, t.value, t.effect) for t in taints)
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(self.taint_sets)
                self.taint_sets.append(taints)
            codes[i] = g
        self.taint_group = codes

    def label(self, key: str) -> LabelColumn:
        """The column of label ``key`` (built on first use, cached until the nodes change)."""
        col = self._label_columns.get(key)
        if col is None:
            ids: dict[str, int] = {}
            codes = np.full(len(self.names), -1, dtype=np.int32)
            for i, labels in enumerate(self.labels):
                v = labels.get(key)
                if v is not None:
                    codes[i] = ids.setdefault(v, len(ids))
            col = LabelColumn(codes, ids, list(ids))
            self._label_columns[key] = col
        return col

    def ensure_resource(self, name: str) -> int:
        """The column of ``name``, widening the arrays if a pod asks for a resource no node has."""
        col = self.resources.add(name)
        self._widen()
        return col

    # --- node events (the engine's add_node, update_node, delete_node) ---------------------------------------------

    def insert(self, node: Node) -> int:
        """Add a row for ``node`` at its place in name order; returns the row. Rows at and after it shift by one
        (the caller remaps what it keeps by row). Every cache is invalidated: rows moved."""
        name = node.metadata.name
        if name in self.index:
            raise ValueError(f"node {name} is already in the table")
        _add_resources(node, self.resources)
        self._widen()
        row = bisect.bisect_left(self.names, name)
        alloc, max_pods = _allocatable(node, self.resources)
        self.allocatable = np.insert(self.allocatable, row, alloc, axis=0)
        self.max_pods = np.insert(self.max_pods, row, max_pods)
        self.unschedulable = np.insert(self.unschedulable, row, node.spec.unschedulable)
        self.requested = np.insert(self.requested, row, 0, axis=0)
        self.nonzero_requested = np.insert(self.nonzero_requested, row, 0, axis=0)
        self.pod_count = np.insert(self.pod_count, row, 0)
        self.names.insert(row, name)
        self.labels.insert(row, dict(node.metadata.labels))
        self.taints.insert(row, tuple(node.spec.taints))
        self.host_ports.insert(row, [])
        self.node_pods.insert(row, {})  # the list ClusterState shares: it sees the new row too
        for group in self.affinity_groups.values():
            group.count = np.insert(group.count, row, 0)
        self._rows_moved()
        return row

    def delete(self, row: int) -> None:
        """Drop row ``row``, which must hold no pods (the caller removes them first); later rows shift up."""
        if self.pod_count[row] or self.node_pods[row]:
            raise ValueError(f"node {self.names[row]} still has pods")
        self.allocatable = np.delete(self.allocatable, row, axis=0)
        self.max_pods = np.delete(self.max_pods, row)
        self.unschedulable = np.delete(self.unschedulable, row)
        self.requested = np.delete(self.requested, row, axis=0)
        self.nonzero_requested = np.delete(self.nonzero_requested, row, axis=0)
        self.pod_count = np.delete(self.pod_count, row)
        for column in (self.names, self.labels, self.taints, self.host_ports, self.node_pods):
            del column[row]
        for group in self.affinity_groups.values():
            group.count = np.delete(group.count, row)
        self._rows_moved()

    def update(self, row: int, node: Node) -> bool:
        """Apply a changed Node to its row; True when something a filter or score reads changed (allocatable,
        labels, taints, unschedulable), the NodeUpdate that may help unschedulable pods. Static changes bump
        ``generation``; an allocatable change only touches the row, as a usage change does."""
        _add_resources(node, self.resources)
        self._widen()
        alloc, max_pods = _allocatable(node, self.resources)
        changed = False
        if not np.array_equal(alloc, self.allocatable[row]) or max_pods != self.max_pods[row]:
            self.allocatable[row], self.max_pods[row] = alloc, max_pods
            self.touch(row)
            changed = True
        labels, taints, cordoned = dict(node.metadata.labels), tuple(node.spec.taints), node.spec.unschedulable
        if labels != self.labels[row] or taints != self.taints[row] or cordoned != self.unschedulable[row]:
            self.labels[row], self.taints[row], self.unschedulable[row] = labels, taints, cordoned
            self._static_changed()
            changed = True
        return changed

    def _widen(self) -> None:
        width = len(self.resources)
        if self.allocatable.shape[1] < width:
            pad = ((0, 0), (0, width - self.allocatable.shape[1]))
            self.allocatable = np.pad(self.allocatable, pad)
            self.requested = np.pad(self.requested, pad)

    def _static_changed(self) -> None:
        self.generation += 1
        self._label_columns.clear()
        self._group_taints()

    def _rows_moved(self) -> None:
        """Rows were added or removed: the index, label columns and taint groups are rebuilt, and the change log
        starts over (its row numbers are stale), which invalidates every usage cache."""
        self.index = {name: i for i, name in enumerate(self.names)}
        self._static_changed()
        self.changes.clear()
        self.changes_base += 1


def _add_resources(node: Node, resources: ResourceIndex) -> None:
    for name in node.status.allocatable or node.status.capacity:
        if name != "pods":
            resources.add(name)


def _allocatable(node: Node, resources: ResourceIndex) -> tuple[IntArray, int]:
    """The node's allocatable as a row over ``resources`` (columns already added), and its max pods."""
    row = np.zeros(len(resources), dtype=np.int64)
    max_pods = 0
    # kubelet always reports allocatable; fall back to capacity for hand-written snapshots
    source = node.status.allocatable or node.status.capacity
    for name, q in source.items():
        if name == "pods":
            max_pods = allocatable_amount(name, q)
        else:
            row[resources.column[name]] = allocatable_amount(name, q)
    return row, max_pods
