"""DynamicResources: a pod's ResourceClaims must be allocatable on the node (Filter), and nodes that give a
claim its preferred ``firstAvailable`` alternative score higher (Score, the prioritized list).

Filter: an allocated claim restricts the pod to its allocation's nodeSelector; the unallocated claims must be
allocatable together on the node (``phalanx.dra.allocator``). Allocation outcomes (the devices chosen, by
position; results are built only where Score or slot counting asks) are cached per claim spec (pods from one
template share them) over the full node table, and only the rows whose devices changed since are recomputed
(``NodeTable.changes``; allocations that are not node-local invalidate everything). Reserve and
Unreserve live in ``scheduling/resource_claims.py``.

Beyond v1.36 (whose Filter rejections are always UnschedulableAndUnresolvable): ``resolvable_rows`` names the nodes
where freeing the devices of claims held only by lower-priority pods would let the claims be allocated, so
preemption considers them (docs/preemption.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import msgspec
import numpy as np

from phalanx.api import dra
from phalanx.cluster.node_selector import terms_mask
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.dra.allocator import AllocationError
from phalanx.dra.inventory import DeviceInventory
from phalanx.dra.outcomes import Outcome
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import MAX_NODE_SCORE, BoolArray, CycleState, IntArray, StateKey
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import PluginSpec
from phalanx.scheduling.reasons import FailureReason, Reason
from phalanx.scheduling.resource_claims import ClaimBinding

__all__ = [
    "EVENTS",
    "NAME",
    "PLUGIN",
    "REASON_CANNOT_ALLOCATE",
    "REASON_INVALID_POOLS",
    "REASON_NOT_AVAILABLE",
    "DynamicResources",
]

NAME = "DynamicResources"
REASON_CANNOT_ALLOCATE = "cannot allocate all claims"
REASON_NOT_AVAILABLE = "resourceclaim not available on the node"
REASON_INVALID_POOLS = "invalid resource pools were encountered"
# Devices come back when a pod (and its claims) goes, a claim is deallocated, or slices or classes change.
EVENTS = frozenset(
    {
        ClusterEvent.POD_DELETE,
        ClusterEvent.NODE_ADD,
        ClusterEvent.RESOURCE_CLAIM_CHANGE,
        ClusterEvent.RESOURCE_SLICE_CHANGE,
    }
)
_MAX_CACHED = 256
# statusUnschedulable always uses UnschedulableAndUnresolvable.
_CANNOT_ALLOCATE = Reason(REASON_CANNOT_ALLOCATE, unresolvable=True)
_NOT_AVAILABLE = Reason(REASON_NOT_AVAILABLE, unresolvable=True)
_INVALID_POOLS = Reason(REASON_INVALID_POOLS, unresolvable=True)
_PRIORITY_BASE = 8  # the prioritized-list score gives 8 - index for the chosen firstAvailable alternative


@dataclass
class _View:
    """One pod's claims as Filter sees them now."""

    waiting: str = ""
    in_use: str = ""
    selectors: list[dra.AllocationResult] = field(default_factory=list)  # allocated claims' node restrictions
    todo: list[dra.ResourceClaim] = field(default_factory=list)  # claims to allocate
    extended: list[str] = field(default_factory=list)  # extended resources a DeviceClass serves (DRAExtendedResource)


@dataclass
class _Entry:
    ok: BoolArray
    outcomes: dict[int, Outcome | None]  # results are built from them only where asked (``_results``)
    base: int
    pos: int
    epoch: int
    generation: int
    error: str = ""
    invalid: set[int] = field(default_factory=set)  # rows with no solution where invalid pools were seen


_VIEW: StateKey[_View] = StateKey("PreFilter" + NAME)


class DynamicResources:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = False
    unresolvable: ClassVar[bool] = True  # statusUnschedulable always uses UnschedulableAndUnresolvable
    incremental: ClassVar[bool] = False  # keeps its own per-claim-spec cache (below)

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        self._bound: ClaimBinding | None = None
        self._cache: dict[bytes, _Entry] = {}
        self._local: tuple[DeviceInventory, int, bool] | None = None  # see _node_local

    @property
    def binding(self) -> ClaimBinding | None:
        """The engine's claims (None without a handle); a new one (a snapshot loaded) empties the caches."""
        binding = self.handle.claims if self.handle is not None else None
        if binding is not self._bound:
            self._bound = binding
            self._cache.clear()
        return binding

    def skips(self, pod: PodInfo, nodes: NodeTable) -> bool:
        return not self._concerns(pod)

    def _concerns(self, pod: PodInfo) -> bool:
        """The pod has claims, or asks for an extended resource a DeviceClass serves."""
        if pod.pod.spec.resource_claims:
            return True
        return self.binding is not None and bool(self.binding.extended_requests(pod))

    # --- Filter ---------------------------------------------------------------------------------------------------

    def _view(self, state: CycleState, pod: PodInfo) -> _View:
        try:
            return state.read(_VIEW)
        except KeyError:
            pass
        view = _View()
        if self.binding is not None:
            view.extended = sorted({name for name, *_ in self.binding.extended_requests(pod)})
            resolved = self.binding.claims(pod)
            tracker = self.binding.tracker
            if resolved.waiting:
                view.waiting = resolved.waiting
            else:
                view.in_use = tracker.full(pod.pod, resolved.claims)
                for pc in resolved.claims:
                    record = tracker.records[pc.key]
                    if record.allocation is not None and record.allocation.node_selector is not None:
                        view.selectors.append(record.allocation)
                view.todo = tracker.unallocated(resolved.claims)
        state.write(_VIEW, view)
        return view

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        size = len(nodes) if rows is None else len(rows)
        if self.binding is None or not self._concerns(pod):
            return np.ones(size, dtype=bool)
        view = self._view(state, pod)
        if view.waiting or view.in_use:
            return np.zeros(size, dtype=bool)
        mask = self._selected(view, nodes) & self._claims_mask(view, pod, nodes)
        return mask if rows is None else mask[rows]

    def _claims_mask(self, view: _View, pod: PodInfo, nodes: NodeTable) -> BoolArray:
        """Where the unallocated claims can be allocated together, with, on each node that does not advertise
        an extended resource the pod asks for, the claim the scheduler would create for it."""
        if not view.extended:
            return self._allocatable(view.todo, pod, nodes).ok if view.todo else np.ones(len(nodes), dtype=bool)
        assert self.binding is not None
        pattern = np.zeros(len(nodes), dtype=np.int64)
        for bit, name in enumerate(view.extended):
            col = nodes.resources.column.get(name)
            lacks = np.ones(len(nodes), dtype=bool) if col is None else nodes.allocatable[:, col] == 0
            pattern |= lacks.astype(np.int64) << bit
        out = np.zeros(len(nodes), dtype=bool)
        for code in np.unique(pattern).tolist():
            rows = pattern == code
            lacking = frozenset(name for bit, name in enumerate(view.extended) if code >> bit & 1)
            claim = self.binding.extended_claim(pod, lacking)
            todo = [*view.todo, claim] if claim is not None else view.todo
            out[rows] = self._allocatable(todo, pod, nodes).ok[rows] if todo else True
        return out

    def _selected(self, view: _View, nodes: NodeTable) -> BoolArray:
        mask = np.ones(len(nodes), dtype=bool)
        for allocation in view.selectors:
            assert allocation.node_selector is not None
            mask &= terms_mask(allocation.node_selector.node_selector_terms, nodes)
        return mask

    def _allocatable(self, todo: list[dra.ResourceClaim], pod: PodInfo, nodes: NodeTable) -> _Entry:
        """Which nodes can allocate ``todo`` together: cached per claim spec, dirty rows recomputed."""
        assert self.binding is not None
        tracker = self.binding.tracker
        key = msgspec.json.encode([pod.namespace, *(c.spec for c in todo)])
        entry = self._cache.get(key)
        log = nodes.changes
        fresh = (
            entry is not None
            and entry.base == nodes.changes_base
            and entry.epoch == tracker.epoch
            and entry.generation == nodes.generation
            and len(entry.ok) == len(nodes)
        )
        if entry is None or not fresh:
            entry = _Entry(
                np.zeros(len(nodes), dtype=bool), {}, nodes.changes_base, len(log), tracker.epoch, nodes.generation
            )
            self._compute(entry, todo, range(len(nodes)))
            self._cache[key] = entry
            if len(self._cache) > _MAX_CACHED:
                self._cache.pop(next(iter(self._cache)))
        elif entry.pos < len(log):
            dirty = sorted(set(log[entry.pos :]))
            entry.pos = len(log)
            self._compute(entry, todo, dirty)
        return entry

    def _compute(self, entry: _Entry, todo: list[dra.ResourceClaim], rows: range | list[int]) -> None:
        assert self.binding is not None
        allocator = self.binding.tracker.allocator
        prepared = allocator.prepare(todo)
        for row in rows:
            try:
                found = allocator.solve(row, todo, prepared)
            except AllocationError as exc:
                # Fatal for the attempt (a broken selector or class): no node is feasible, and the reason says why.
                entry.error = str(exc)
                entry.ok[:] = False
                entry.outcomes.clear()
                return
            entry.outcomes[row] = found
            entry.ok[row] = found is not None
            if found is None and allocator.invalid_pools:
                entry.invalid.add(row)
            else:
                entry.invalid.discard(row)

    def _results(self, entry: _Entry, row: int, todo: list[dra.ResourceClaim]) -> list[dra.AllocationResult] | None:
        """The allocation results on ``row`` for ``todo`` (claims of the entry's spec) from the entry's outcome."""
        assert self.binding is not None
        return self.binding.tracker.allocator.results(row, todo, entry.outcomes.get(row))

    def resolvable_rows(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: BoolArray) -> BoolArray:
        """Of the ``rejected`` nodes, those where the pod's claims could be allocated once the claims reserved only
        by pods of lower priority are freed. Missing claims, a full reservedFor, an allocated claim pinned
        elsewhere and fatal allocation errors stay unresolvable."""
        out = np.zeros(len(nodes), dtype=bool)
        view = self._view(state, pod)
        if self.binding is None or view.waiting or view.in_use or not view.todo:
            return out
        if self._allocatable(view.todo, pod, nodes).error:
            return out
        freeable = self.binding.freeable(pod.priority)
        rows = np.flatnonzero(rejected & self._selected(view, nodes) & self._served(freeable, nodes))
        tracker = self.binding.tracker
        with tracker.without(freeable):
            for row in rows:
                try:
                    out[row] = tracker.allocator.allocate(int(row), view.todo) is not None
                except AllocationError:
                    return np.zeros(len(nodes), dtype=bool)
        return out

    def _served(self, allocations: list[dra.AllocationResult], nodes: NodeTable) -> BoolArray:
        """The nodes that can use some device of ``allocations`` (freeing them changes nothing elsewhere)."""
        assert self.binding is not None
        inventory = self.binding.tracker.inventory
        mask = np.zeros(len(nodes), dtype=bool)
        for allocation in allocations:
            for r in allocation.devices.results:
                device = inventory.lookup(r.driver, r.pool, r.device)
                if device is None or r.admin_access:
                    continue  # never counted as allocated: freeing it frees nothing
                scope = inventory.scope_mask(device)
                if scope is None:
                    return np.ones(len(nodes), dtype=bool)
                mask |= scope
        return mask

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        view = self._view(state, pod)
        if view.waiting or view.in_use:
            return Counter({Reason(view.waiting or view.in_use, unresolvable=True): len(rejected)})
        selected = self._selected(view, nodes)
        out: Counter[FailureReason] = Counter()
        error = ""
        invalid: set[int] = set()
        if view.todo:
            entry = self._allocatable(view.todo, pod, nodes)
            error, invalid = entry.error, entry.invalid
        # One reason per row, counted with arrays (a full cluster rejects every node for every pod that comes);
        # the reasons enter the Counter in the order their first row comes, as a loop over the rows would.
        rows = np.asarray(rejected, dtype=np.intp)
        kind = np.where(selected[rows], 2, 0)
        if invalid:
            kind[(kind == 2) & np.isin(rows, np.fromiter(invalid, dtype=np.intp, count=len(invalid)))] = 1
        failed = Reason(error, unresolvable=True, error=True) if error else _CANNOT_ALLOCATE
        reasons = [_NOT_AVAILABLE, _INVALID_POOLS, failed]
        counts = np.bincount(kind, minlength=3)
        present = np.flatnonzero(counts)
        for k in present[np.argsort([int(np.argmax(kind == k)) for k in present])].tolist():
            out[reasons[k]] += int(counts[k])  # ErrFailedAllocationOnNode for the rows of invalid pools
        return out

    # --- slots (topology placement and preemption count a gang's members per node) -------------------------------

    def countable(self, pod: PodInfo, nodes: NodeTable) -> bool:
        """Whether pods like ``pod`` can be counted node by node (``device_slots``): every claim is the pod's own
        (generated from a template, not yet allocated, not a PodGroup claim) and every device is node-local with
        its pool's counters on that node, so an allocation on one node never changes another node's answer."""
        if self.binding is None or not pod.pod.spec.resource_claims:
            return False
        view = self._view(CycleState(), pod)
        if view.waiting or view.in_use or view.selectors or getattr(view, "extended", None) or not view.todo:
            return False
        tracker = self.binding.tracker
        resolved = self.binding.claims(pod).claims
        if len({pc.key for pc in resolved}) != len(resolved) or len(view.todo) != len(resolved):
            return False
        if any(pc.group is not None or tracker.records[pc.key].generated_from is None for pc in resolved):
            return False
        return self._node_local(tracker.inventory)

    def _node_local(self, inventory: DeviceInventory) -> bool:
        """Every device is node-local and every pool on one node (cached per inventory and device count)."""
        known = self._local
        if known is not None and known[0] is inventory and known[1] == len(inventory.devices):
            return known[2]
        pool_rows: dict[int, int] = {}
        local = all(
            info.row >= 0 and pool_rows.setdefault(info.pool_id, info.row) == info.row for info in inventory.devices
        )
        self._local = (inventory, len(inventory.devices), local)
        return local

    def device_slots(self, pod: PodInfo, nodes: NodeTable, caps: IntArray) -> IntArray | None:
        """How many more pods like ``pod`` the devices of each node take, counted up to ``caps[row]`` (the other
        filters' slots): the allocator run on the node again and again, each result applied, as the PodGroup
        cycle would do member after member. None when not ``countable`` or on a fatal allocation error."""
        if not self.countable(pod, nodes):
            return None
        assert self.binding is not None
        tracker = self.binding.tracker
        todo = self._view(CycleState(), pod).todo
        entry = self._allocatable(todo, pod, nodes)
        if entry.error:
            return None
        out = np.zeros(len(nodes), dtype=np.int64)
        for row in np.flatnonzero(entry.ok & (caps > 0)):
            added: list[dra.AllocationResult] = []
            try:
                found = self._results(entry, int(row), todo)
                while found is not None:
                    for allocation in found:
                        tracker.allocated.add(allocation)
                        added.append(allocation)
                    out[row] += 1
                    found = tracker.allocator.allocate(int(row), todo) if out[row] < caps[row] else None
            except AllocationError:
                return None
            finally:
                for allocation in added:
                    tracker.allocated.remove(allocation)
        return out

    # --- Score (prioritized list) ---------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        if not pod.pod.spec.resource_claims or self.binding is None:
            return None
        view = self._view(state, pod)
        if not any(r.first_available for c in view.todo for r in c.spec.devices.requests):
            return None  # without firstAvailable, DRA does not score nodes
        entry = self._allocatable(view.todo, pod, nodes)
        out = np.zeros(len(feasible), dtype=np.int64)
        for i, row in enumerate(feasible):
            results = self._results(entry, int(row), view.todo)
            if results is not None:
                out[i] = sum(_preference(claim, result) for claim, result in zip(view.todo, results, strict=True))
        return out

    def normalize(self, scores: IntArray) -> IntArray:
        lo, hi = (int(scores.min()), int(scores.max())) if len(scores) else (0, 0)
        if hi == lo:
            return np.zeros(len(scores), dtype=np.int64)
        return (scores - lo) * MAX_NODE_SCORE // (hi - lo)


def _preference(claim: dra.ResourceClaim, result: dra.AllocationResult) -> int:
    """Σ over the claim's firstAvailable requests of 8 - the index of the chosen subrequest."""
    chosen: dict[str, str] = {}
    for r in result.devices.results:
        parent, _, sub = r.request.partition("/")
        if sub:
            chosen[parent] = sub
    total = 0
    for request in claim.spec.devices.requests:
        if request.first_available and request.name in chosen:
            names = [s.name for s in request.first_available]
            if chosen[request.name] in names:
                total += _PRIORITY_BASE - names.index(chosen[request.name])
    return total


def _new(args: None, handle: Handle) -> DynamicResources:
    return DynamicResources(handle)


# DynamicResourceAllocation (GA) appends DynamicResources to the multi-point plugins.
PLUGIN: PluginSpec[None] = PluginSpec(
    NAME,
    _new,
    frozenset({"preEnqueue", "preFilter", "filter", "score", "reserve", "preBind"}),
    EVENTS,
    default_weight=1,
)
