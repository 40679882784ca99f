"""The structured-parameters DRA allocator (spec dra.md §3): all claims of a pod on one node, or no solution.

``Allocator.allocate`` validates the claims against the classes and gates (§3.4), prepares each request's
candidates and the interchangeable-device classes, runs the bounded first-fit search of :mod:`phalanx.dra.search`
and assembles one AllocationResult per claim (:mod:`phalanx.dra.results`). It never changes the AllocatedState.
Nodes that look alike to the search share its outcome (:mod:`phalanx.dra.outcomes`), and selector verdicts are
shared by devices that agree on what the selector reads (:mod:`phalanx.dra.projection`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from phalanx.api import dra
from phalanx.api.dra_defaults import ALL, EXACT_COUNT, defaulted
from phalanx.dra.capacity import Amount, amount, consumed_capacity, requested_fits
from phalanx.dra.constraints import Tracker, attribute_value, new_tracker
from phalanx.dra.errors import MAX_RESULTS, AllocationError
from phalanx.dra.fast import FastRows, Prepared, SelectorFailed, fast_solve, node_devices, simple_claim
from phalanx.dra.features import DEFAULT_FEATURES, Features
from phalanx.dra.inventory import DeviceInfo, DeviceInventory, NodePool
from phalanx.dra.outcomes import Outcome, OutcomeCache, shape_key
from phalanx.dra.results import Pick, RequestRef, build_allocation, share_id
from phalanx.dra.search import AllocatorStats, Req, Search, tolerated
from phalanx.dra.selection import CompileFn, SelectorError, Selectors
from phalanx.dra.state import AllocatedState

__all__ = ["AllocationError", "Allocator", "AllocatorStats", "Prepared"]

Request = dra.ExactDeviceRequest | dra.DeviceSubRequest


@dataclass(slots=True)
class _Call:
    """What one allocate call knows about the node: its pools and visible devices by local position."""

    row: int
    pools: list[NodePool]
    infos: list[DeviceInfo]
    pos_of: dict[int, int]


class Allocator:
    """Allocates claims on one node at a time over a fixed inventory; CEL verdicts are cached across calls."""

    def __init__(
        self,
        inventory: DeviceInventory,
        state: AllocatedState,
        classes: Mapping[str, dra.DeviceClass],
        features: Features = DEFAULT_FEATURES,
        compile: CompileFn | None = None,  # default: phalanx.api.cel.compile_selector
        prune: bool = True,
        fast: bool = True,
    ) -> None:
        """``prune=False`` runs upstream's plain search (no symmetry, memo or lookahead): tests and benchmarks use
        it to show that pruning never changes the answer and what it saves. ``fast=False`` turns off the fast path
        for simple claims (:mod:`phalanx.dra.fast`), so tests can compare it with the search."""
        self.inventory = inventory
        self.state = state
        self.classes = classes
        self.features = features
        self._prune = prune
        self._fast = fast
        self._fast_rows = FastRows()
        self._selectors = Selectors(compile, features)
        self.stats = AllocatorStats()
        self._outcomes = OutcomeCache()
        # Pools that were invalid on the node of the last allocate() that found no solution: kube-scheduler then
        # reports "invalid resource pools were encountered" for that node instead of "cannot allocate all claims".
        self.invalid_pools: list[str] = []

    def allocate(self, row: int, claims: Sequence[dra.ResourceClaim]) -> list[dra.AllocationResult] | None:
        """Allocate every (unallocated) claim for node ``row`` together: one AllocationResult per claim in
        ResourceClaim.status.allocation shape (results, config, nodeSelector), or None when there is no solution on
        this node. Pure: never changes ``state``; the caller applies a chosen result with state.add(). Raises
        AllocationError for fatal errors. Deterministic: identical inputs give identical results (shareID is a
        UUID derived from a hash of claim namespace/name/uid, request and device, not random)."""
        return self.results(row, claims, self.solve(row, claims))

    def prepare(self, claims: Sequence[dra.ResourceClaim]) -> Prepared:
        """What ``solve`` can work out once for ``claims`` and reuse on every node (Filter asks it once per pod)."""
        if not (self._prune and self._fast):
            return Prepared(None)
        simple = simple_claim(claims, self.classes, self.features, self._fast_rows.simple)
        return Prepared(simple, _who(claims[0]) if simple is not None else "")

    def solve(self, row: int, claims: Sequence[dra.ResourceClaim], prepared: Prepared | None = None) -> Outcome | None:
        """``allocate`` without building the results: the devices chosen by position on the node, or None when
        there is no solution (``invalid_pools`` set as by allocate). Filter asks this of every node and builds
        results (``results``) only for the few it needs; ``prepared`` (from ``prepare`` on the same claims) saves
        redoing the per-claims work on each node."""
        self.stats.calls += 1
        if prepared is None:
            prepared = self.prepare(claims)
        if prepared.simple is not None:
            found, outcome = self._fast_solve(row, prepared)
            if found:
                self.stats.fast += 1
                self._invalid(row, outcome)
                return outcome
        key = None
        if self._prune:
            key = shape_key(self.inventory, self.state, row, claims, self.classes, self._selection(claims))
        if key is not None:
            known, outcome = self._outcomes.get(key)
            if known:
                self.stats.shape_hits += 1
                self._invalid(row, outcome)
                return outcome
        outcome = self._search(row, claims)
        if key is not None:
            self._outcomes.put(key, outcome)
        self._invalid(row, outcome)
        return outcome

    def _fast_solve(self, row: int, prepared: Prepared) -> tuple[bool, Outcome | None]:
        """(True, the answer) from the fast path, or (False, None) when the node needs the general search."""
        simple = prepared.simple
        assert simple is not None
        rows = self._fast_rows
        key = (simple.key, row)
        devices = rows.devices.get(key, False)
        if devices is False:
            rows.bound()
            devices = rows.devices[key] = node_devices(
                simple, self.inventory, row, self.features, self._selectable_in, rows
            )
        if devices is None:
            return False, None
        try:
            return True, fast_solve(simple.count, devices, self.state)  # type: ignore[arg-type]
        except SelectorFailed as failed:
            info = self.inventory.devices[failed.index]
            name = simple.device_class.metadata.name
            verdict = self._selectable_in(name, simple.class_exprs, prepared.who, simple.request_exprs, info)
            assert isinstance(verdict, SelectorError)
            raise AllocationError(verdict.message) from None

    def _selectable_in(
        self, class_name: str, class_exprs: list[str], who: str, request_exprs: list[str], info: DeviceInfo
    ) -> bool | SelectorError:
        if not self.features.binding_conditions and info.device.binding_conditions:
            return False
        verdict = self._selectors.check(f"class {class_name}", class_exprs, info)
        if verdict is not True:
            return verdict
        return self._selectors.check(f"claim {who}", request_exprs, info)

    def _invalid(self, row: int, outcome: Outcome | None) -> None:
        if outcome is not None:
            self.invalid_pools = []
            return
        self.invalid_pools = [p.pool_id_text for p in self.inventory.node_pools(row) if p.invalid]

    def _selection(self, claims: Sequence[dra.ResourceClaim]) -> Callable[[DeviceInfo], Hashable]:
        """Per device, what the claims' selectors and constraints see of it (for the shape key)."""
        expressions: set[str] = set()
        attributes: set[str] = set()
        for claim in claims:
            attributes.update(c.match_attribute or c.distinct_attribute or "" for c in claim.spec.devices.constraints)
            for request in claim.spec.devices.requests:
                subs: list[Request] = [*request.first_available, *([request.exactly] if request.exactly else [])]
                for sub in subs:
                    device_class = self.classes.get(sub.device_class_name)
                    listed = [*sub.selectors, *(device_class.spec.selectors if device_class else [])]
                    expressions.update(s.cel.expression for s in listed if s.cel is not None)
        ordered, names = sorted(expressions), sorted(attributes)
        list_mode, selectors = self.features.list_type_attributes, self._selectors

        def key(info: DeviceInfo) -> Hashable:
            verdicts = tuple(selectors.selection_key(e, info) for e in ordered)
            return verdicts, tuple(attribute_value(info, a, list_mode) for a in names)

        return key

    def _search(self, row: int, claims: Sequence[dra.ResourceClaim]) -> Outcome | None:
        visible = list(self.inventory.visible(row))
        infos = [self.inventory.devices[d] for d in visible]
        call = _Call(row, self.inventory.node_pools(row), infos, {d: i for i, d in enumerate(visible)})
        reqs: list[list[list[Req]]] = []
        trackers: list[list[Tracker]] = []
        for ci, claim in enumerate(claims):
            claim_reqs, claim_trackers = self._prepare_claim(call, ci, claim)
            reqs.append(claim_reqs)
            trackers.append(claim_trackers)
        attributes = sorted({t.attribute for ts in trackers for t in ts})
        list_mode = self.features.list_type_attributes
        values = {a: [attribute_value(info, a, list_mode) for info in infos] for a in attributes}
        # An All request under a constraint fails with an error at whichever device breaks the constraint first,
        # so where upstream raises depends on the exact branches it explores: search those calls unpruned.
        prune = self._prune and not any(r.mode_all and r.scoped for claim in reqs for subs in claim for r in subs)
        classes = _device_classes(reqs, infos, values, self.state) if prune else None
        search = Search(claims, reqs, trackers, infos, self.state, self.features, classes, values, self.stats)
        search.lookahead = prune
        if not search.run():
            return None
        return Outcome(
            choices=tuple(tuple(picks) for picks in search.picks),
            subrequests=tuple(
                tuple(search.chosen_subrequest(ci, ri) for ri in range(len(r))) for ci, r in enumerate(reqs)
            ),
        )

    def results(
        self, row: int, claims: Sequence[dra.ResourceClaim], outcome: Outcome | None
    ) -> list[dra.AllocationResult] | None:
        """Results for node ``row`` and ``claims`` from an outcome ``solve`` found on it or on an alike node (the
        claims' own names and UIDs go into the results, so claims of one spec share an outcome)."""
        if outcome is None:
            return None
        visible = self.inventory.visible(row)
        node_name = self.inventory.nodes.names[row]
        shares: dict[int, int] = {}  # shares of each multi-allocatable device so far, for stable shareIDs
        out = []
        for claim, choices, subrequests in zip(claims, outcome.choices, outcome.subrequests, strict=True):
            picks = []
            for choice in choices:
                ref = self._request_ref(claim, choice.request, choice.subrequest)
                device = visible[choice.pos]
                share = None
                if self.inventory.devices[device].allow_multiple:
                    ordinal = shares[choice.pos] = shares.get(choice.pos, 0) + 1
                    info = self.inventory.devices[device]
                    share = share_id(claim, ref.name, f"{info.driver}/{info.pool}/{info.name}", ordinal - 1)
                picks.append(Pick(ref, device, choice.consumed, share))
            chosen = [self._request_ref(claim, ri, si) for ri, si in enumerate(subrequests)]
            binding = self.features.binding_conditions
            out.append(build_allocation(claim, picks, chosen, self.inventory, node_name, binding))
        return out

    def _request_ref(self, claim: dra.ResourceClaim, ri: int, si: int) -> RequestRef:
        """What a result needs of a (validated) request or chosen subrequest."""
        request = claim.spec.devices.requests[ri]
        if request.first_available:
            sub = defaulted(request.first_available[si])
            device_class = self.classes[sub.device_class_name]
            return RequestRef(f"{request.name}/{sub.name}", ri, device_class, tuple(sub.tolerations), False)
        assert request.exactly is not None
        exact = defaulted(request.exactly)
        device_class = self.classes[exact.device_class_name]
        return RequestRef(request.name, ri, device_class, tuple(exact.tolerations), bool(exact.admin_access))

    # --- pre-pass (upstream's validateDeviceRequest and claim checks) ----------------------------------------------

    def _prepare_claim(self, call: _Call, ci: int, claim: dra.ResourceClaim) -> tuple[list[list[Req]], list[Tracker]]:
        who = _who(claim)
        out: list[list[Req]] = []
        min_devices = 0
        for ri, request in enumerate(claim.spec.devices.requests):
            if request.first_available:
                if not self.features.prioritized_list:
                    raise AllocationError(
                        f"claim {who}, request {request.name}: has subrequests, but the DRAPrioritizedList feature "
                        "is disabled"
                    )
                subs = []
                for si, sub in enumerate(request.first_available):
                    self._check_capacity_gate(who, sub.name, sub, "subrequest")
                    subs.append(self._prepare(call, claim, ci, ri, si, request.name, sub))
                min_devices += min(r.count for r in subs)
                out.append(subs)
                continue
            if request.exactly is None:
                raise AllocationError(
                    f"claim {who}, request {request.name}: missing device class name (unsupported request type?)"
                )
            self._check_capacity_gate(who, request.name, request.exactly, "request")
            req = self._prepare(call, claim, ci, ri, 0, request.name, request.exactly)
            min_devices += req.count
            out.append([req])
        if min_devices > MAX_RESULTS:
            raise AllocationError(
                f"claim {who}: number of requested devices {min_devices} exceeds the claim limit of {MAX_RESULTS}"
            )
        trackers = []
        for i, constraint in enumerate(claim.spec.devices.constraints):
            tracker = new_tracker(constraint, self.features.list_type_attributes)
            if tracker is None:
                raise AllocationError(f"claim {who}, constraint #{i}: empty constraint (unsupported constraint type?)")
            trackers.append(tracker)
        for subs in out:
            for req in subs:
                req.scoped = [i for i, t in enumerate(trackers) if t.in_scope(req.base, req.sub)]
        return out, trackers

    def _check_capacity_gate(self, who: str, name: str, request: Request, kind: str) -> None:
        if request.capacity is not None and not self.features.consumable_capacity:
            raise AllocationError(
                f"claim {who}, {kind} {name}: has capacity requests, but the DRAConsumableCapacity feature is disabled"
            )

    def _prepare(
        self, call: _Call, claim: dra.ResourceClaim, ci: int, ri: int, si: int, base: str, raw: Request
    ) -> Req:
        who = _who(claim)
        # two calls: defaulted() is generic over the two request types
        request: Request = defaulted(raw) if isinstance(raw, dra.ExactDeviceRequest) else defaulted(raw)  # noqa: RUF034
        is_sub = isinstance(raw, dra.DeviceSubRequest)
        name = raw.name if isinstance(raw, dra.DeviceSubRequest) else base
        for i, selector in enumerate(request.selectors):
            if selector.cel is None:
                raise AllocationError(
                    f"claim {who}, request {name}, selector #{i}: CEL expression empty (unsupported selector type?)"
                )
        exact = raw if isinstance(raw, dra.ExactDeviceRequest) else None
        if exact is not None and exact.admin_access is not None and not self.features.admin_access:
            raise AllocationError(
                f"claim {who}, request {name}: admin access is requested, but the feature is disabled"
            )
        device_class = self._device_class(who, name, request.device_class_name)
        ref = self._request_ref(claim, ri, si)
        capacity = {k: amount(q) for k, q in (request.capacity.requests if request.capacity else {}).items()}
        mode = request.allocation_mode
        if mode not in (EXACT_COUNT, ALL):
            raise AllocationError(f"claim {who}, request {name}: unsupported count mode {mode}")
        req = Req(ci, ri, si, ref, base, name if is_sub else "", mode == ALL, request.count, capacity)
        class_exprs = [s.cel.expression for s in device_class.spec.selectors if s.cel is not None]
        request_exprs = [s.cel.expression for s in request.selectors if s.cel is not None]
        if req.mode_all:
            self._all_devices(call, req, who, class_exprs, request_exprs)
        else:
            self._candidates(call, req, who, class_exprs, request_exprs)
        return req

    def _device_class(self, who: str, name: str, class_name: str) -> dra.DeviceClass:
        if not class_name:
            raise AllocationError(f"claim {who}, request {name}: missing device class name (unsupported request type?)")
        device_class = self.classes.get(class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {who}, request {name}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        for i, selector in enumerate(device_class.spec.selectors):
            if selector.cel is None:
                raise AllocationError(
                    f"class {class_name}: selector #{i}: CEL expression empty (unsupported selector type?)"
                )
        return device_class

    def _selectable(
        self, req: Req, who: str, class_exprs: list[str], request_exprs: list[str], info: DeviceInfo
    ) -> bool | SelectorError:
        return self._selectable_in(req.ref.device_class.metadata.name, class_exprs, who, request_exprs, info)

    def _candidates(self, call: _Call, req: Req, who: str, class_exprs: list[str], request_exprs: list[str]) -> None:
        """The devices this request could ever take on this node, in search order (a CEL error is kept as a
        candidate: it becomes fatal only when the search reaches the device)."""
        for pos, info in enumerate(call.infos):
            verdict = self._selectable(req, who, class_exprs, request_exprs, info)
            if isinstance(verdict, SelectorError):
                req.errors[pos] = verdict.message
                req.candidates.append(pos)
            elif verdict and self._statically_usable(req, pos, info):
                req.candidates.append(pos)

    def _statically_usable(self, req: Req, pos: int, info: DeviceInfo) -> bool:
        if info.consumes and not self.features.partitionable:
            return False
        if self.features.device_taints and not tolerated(info, req.ref.tolerations):
            return False
        return not self.features.consumable_capacity or self._capacity_ok(req, pos, info)

    def _all_devices(self, call: _Call, req: Req, who: str, class_exprs: list[str], request_exprs: list[str]) -> None:
        for pool in call.pools:
            state = "being updated" if pool.incomplete else "invalid" if pool.invalid else ""
            if state:
                raise AllocationError(
                    f"claim {who}, request {req.ref.name}: asks for all devices, but resource pool "
                    f"{pool.pool_id_text} is currently {state}"
                )
            for device in self.inventory.pool_slice_devices(pool):
                info = self.inventory.devices[device]
                verdict = self._selectable(req, who, class_exprs, request_exprs, info)
                if isinstance(verdict, SelectorError):
                    raise AllocationError(verdict.message)
                if not verdict or not self.inventory.serves(device, call.row):
                    continue
                pos = call.pos_of[device]
                if self.features.consumable_capacity and not self._capacity_ok(req, pos, info):
                    continue
                req.all_devices.append(pos)
        req.count = len(req.all_devices)
        req.candidates = list(req.all_devices)

    def _capacity_ok(self, req: Req, pos: int, info: DeviceInfo) -> bool:
        """Capacity check against the cluster's use only (upstream's CmpRequestOverCapacity before the search);
        remembers what one allocation of a multi-allocatable device consumes."""
        if not info.allow_multiple:
            return requested_fits(req.capacity, info.device)
        consumed = consumed_capacity(req.capacity, info.device)
        if consumed is None or not _within(consumed, info, self.state):
            return False
        req.consumed[pos] = consumed
        return True


def _who(claim: dra.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def _within(consumed: Mapping[str, Amount], info: DeviceInfo, state: AllocatedState) -> bool:
    """Whether one more allocation fits next to what the cluster already consumes of the device."""
    used = state.consumed(info.index)
    for name, use in consumed.items():
        total = amount(info.device.capacity[name].value).value
        if used.get(name, 0) + use.value > total:
            return False
    return True


def _device_classes(
    reqs: list[list[list[Req]]],
    infos: list[DeviceInfo],
    values: dict[str, list[Hashable | None]],
    state: AllocatedState,
) -> tuple[list[int], list[int]] | None:
    """Interchangeable devices for this call (see :mod:`phalanx.dra.search`): each device's class and its rank
    within the class. None (no symmetry) when a request uses adminAccess, whose per-claim rules break it."""
    flat = [r for claim in reqs for subs in claim for r in subs]
    if any(r.ref.admin_access for r in flat):
        return None
    member_sets = [set(r.candidates) for r in flat]
    keys: dict[Hashable, int] = {}
    counts: list[int] = []
    cls: list[int] = []
    rank: list[int] = []
    for pos, info in enumerate(infos):
        if any(pos in r.errors for r in flat):
            key: Hashable = ("error", pos)
        else:
            key = (
                tuple(pos in members for members in member_sets),
                info.static_key,
                info.pool_id if info.consumes else None,  # counters are per pool
                pos if info.allow_multiple else None,  # capacity is tracked per multi-allocatable device
                state.is_allocated(info.index),
                tuple(v[pos] for v in values.values()),
            )
        c = keys.setdefault(key, len(keys))
        if c == len(counts):
            counts.append(0)
        cls.append(c)
        rank.append(counts[c])
        counts[c] += 1
    return cls, rank
