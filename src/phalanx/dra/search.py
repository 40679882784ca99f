"""The device search: upstream's depth-first first-fit order, pruned so that it stays small in practice.

Algorithm (spec dra.md §3.5, §3.13). The search visits requests in claim order and, within an ExactCount request,
device combinations in the node's device order, exactly like v1.36; the first complete solution is returned. Validity
is prefix-closed (counters, capacity and constraints are monotonic), so that first solution is the
lexicographically smallest valid assignment, and pruning a subtree is safe whenever the subtree holds no valid
assignment. Five prunings keep it bounded:

1. Candidates first: every request gets its candidate list up front (selectable, static capacity, tolerated
   taints); a request position fails fast when fewer untaken candidates remain than it still needs.
2. Symmetry: devices that are interchangeable for this call (same verdict for every request, same constrained
   attribute values, same capacity, counters, taints, node scope; never multi-allocatable) form a class, and a
   class is always used in device order: only its first untaken member may be chosen. Any solution using a later
   member maps to a lexicographically smaller one using the earlier member, so this skips only failing subtrees
   and never changes the returned solution (which already uses the earliest members).
3. matchAttribute / distinctAttribute lookahead: candidates are bucketed by value; a position fails when no bucket
   (for match: the fixed value's bucket) is large enough for what the request still needs.
4. Memo: a failed subtree is remembered by its position plus everything the rest depends on (taken devices, which
   determine the counters; multi-allocation consumption; the claim's constraint state; results so far) and never
   searched twice.
5. Order: candidates are tried in upstream order, so the common case (first fit works) never backtracks.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from phalanx.api import dra
from phalanx.dra.capacity import Amount, amount, requested_fits
from phalanx.dra.constraints import Tracker
from phalanx.dra.errors import MAX_RESULTS, AllocationError, MaxSizeExceeded
from phalanx.dra.features import Features
from phalanx.dra.inventory import DeviceInfo
from phalanx.dra.results import RequestRef
from phalanx.dra.state import AllocatedState

__all__ = ["AllocatorStats", "Choice", "Req", "Search", "tolerated"]


@dataclass(eq=False)
class Req:
    """One request, or one subrequest of a firstAvailable request, of one claim, prepared for the search."""

    ci: int
    ri: int
    si: int
    ref: RequestRef
    base: str  # request name (constraint scoping)
    sub: str  # subrequest name, "" for a plain request
    mode_all: bool
    count: int
    capacity: dict[str, Amount]
    candidates: list[int] = field(default_factory=list)  # local positions, in search order
    errors: dict[int, str] = field(default_factory=dict)  # candidate -> fatal CEL error when reached
    consumed: dict[int, dict[str, Amount]] = field(default_factory=dict)  # multi-allocatable: use per allocation
    all_devices: list[int] = field(default_factory=list)  # mode All: the fixed device list
    scoped: list[int] = field(default_factory=list)  # indices of the claim's trackers that apply

    @property
    def is_sub(self) -> bool:
        return bool(self.sub)


@dataclass(frozen=True, slots=True)
class Choice:
    """One device the search chose: for which request (and subrequest), at which position of the node's devices,
    and what it consumes of a multi-allocatable device."""

    request: int
    subrequest: int
    pos: int
    consumed: dict[str, Amount] | None


@dataclass
class AllocatorStats:
    """Counters for benchmarks: allocate calls, search steps (upstream's allocateOne invocations), memo hits."""

    calls: int = 0
    steps: int = 0
    memo_hits: int = 0
    shape_hits: int = 0  # calls answered from an alike node's outcome without a search
    fast: int = 0  # calls answered by the fast path for simple claims (phalanx.dra.fast)


@dataclass(slots=True)
class _Undo:
    pos: int
    ci: int
    req: Req
    trackers: int
    charged: bool
    consumed: dict[str, Amount] | None


class Search:
    """One allocate call's search state: what this attempt has taken, and the depth-first search over it."""

    def __init__(
        self,
        claims: Sequence[dra.ResourceClaim],
        reqs: list[list[list[Req]]],
        trackers: list[list[Tracker]],
        infos: Sequence[DeviceInfo],
        state: AllocatedState,
        features: Features,
        classes: tuple[list[int], list[int]] | None,
        attr_values: dict[str, list[Hashable | None]],
        stats: AllocatorStats,
    ) -> None:
        self.claims, self.reqs, self.trackers, self.infos = claims, reqs, trackers, infos
        self.state, self.features, self.stats, self.attr_values = state, features, stats, attr_values
        n = len(infos)
        self.cluster_used = [state.is_allocated(info.index) for info in infos]
        self.holders: list[list[int]] = [[] for _ in range(n)]  # claims allocating each non-multi device
        self.cls, self.rank = classes if classes is not None else ([], [])
        self.members: list[list[int]] = [[] for _ in range(max(self.cls) + 1 if self.cls else 0)]
        for pos, c in enumerate(self.cls):
            self.members[c].append(pos)
        self.cls_taken = [0] * len(self.members)
        self.demand: dict[int, dict[tuple[int, str, str], Fraction]] = {
            pos: {(info.pool_id, cs, counter): amount for cs, counter, amount in info.consumes}
            for pos, info in enumerate(infos)
            if info.consumes
        }
        self.counters: dict[tuple[int, str, str], Fraction] = {}
        self.available: dict[tuple[int, str, str], Fraction] = {}
        self.shares: dict[int, int] = {}  # multi-allocatable device -> shares taken in this attempt
        self.capacity: dict[int, dict[str, int]] = {}
        self.picks: list[list[Choice]] = [[] for _ in claims]
        self.selected: dict[tuple[int, int], int] = {}
        # Without classes (adminAccess: device use depends on which claim took it) the memo key would not capture
        # the taken devices, so there is no memo then.
        self.memo = classes is not None
        self.lookahead = True  # fail fast on candidate, counter and constraint counts
        self.failed: set[Hashable] = set()
        self.later = self._later_classes() if self.memo else {}
        # per request: the claim's constraints that this or a later request of the claim is subject to
        self.ahead = {
            (ci, ri): sorted({t for subs in claim[ri:] for r in subs for t in r.scoped})
            for ci, claim in enumerate(reqs)
            for ri in range(len(claim))
        }

    def _later_classes(self) -> dict[tuple[int, int], list[bool]]:
        """For each request: which device classes some later request (or claim) could still use."""
        out: dict[tuple[int, int], list[bool]] = {}
        seen = [False] * len(self.members)
        for ci in reversed(range(len(self.reqs))):
            for ri in reversed(range(len(self.reqs[ci]))):
                out[(ci, ri)] = list(seen)
                for req in self.reqs[ci][ri]:
                    for pos in req.candidates:
                        seen[self.cls[pos]] = True
        return out

    # --- the recursion (mirrors upstream's allocateOne) ------------------------------------------------------------

    def run(self) -> bool:
        try:
            return self._one(0, 0, 0, 0, False, 0)
        except MaxSizeExceeded:
            raise AllocationError("allocation max size exceeded") from None

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        self.stats.steps += 1
        if ci == len(self.claims):
            return True
        if ri == len(self.reqs[ci]):
            try:
                return self._one(ci + 1, 0, 0, 0, False, 0)
            except MaxSizeExceeded:
                return False  # a later claim overflowed: another choice here may still work
        subs = self.reqs[ci][ri]
        req = subs[si]
        if req.is_sub and not in_sub:
            return self._first_available(ci, ri, len(subs))
        if req.mode_all and not req.all_devices:
            return False
        if di >= req.count:
            return self._one(ci, ri + 1, 0, 0, False, 0)
        if len(self.picks[ci]) + req.count - di > MAX_RESULTS:
            raise MaxSizeExceeded
        if req.mode_all:
            return self._all(req, di, in_sub)
        return self._exact(req, di, in_sub, start)

    def _first_available(self, ci: int, ri: int, n: int) -> bool:
        all_exceeded = True
        for s in range(n):
            try:
                ok = self._one(ci, ri, s, 0, True, 0)
            except MaxSizeExceeded:
                continue
            all_exceeded = False
            if ok:
                self.selected[(ci, ri)] = s
                return True
        if all_exceeded:
            raise MaxSizeExceeded
        return False

    def _all(self, req: Req, di: int, in_sub: bool) -> bool:
        undo = self._take(req, req.all_devices[di], must=True)
        if undo is None:
            return False
        try:
            if self._one(req.ci, req.ri, req.si, di + 1, in_sub, 0):
                return True
        except MaxSizeExceeded:
            self._undo(undo)
            raise
        self._undo(undo)
        return False

    def _exact(self, req: Req, di: int, in_sub: bool, start: int) -> bool:
        # The state on return equals the state on entry (every take is undone), so the key is only built when it
        # can matter: to look up once something has failed, and to record a failure.
        if self.failed and self._memo_key(req, di, start) in self.failed:
            self.stats.memo_hits += 1
            return False
        if self.lookahead and not self._enough(req, req.count - di, start):
            return False
        for pos in req.candidates[bisect_left(req.candidates, start) :]:
            if req.ref.admin_access:
                if req.ci in self.holders[pos]:
                    continue
            elif self.cluster_used[pos] or self.holders[pos]:
                continue
            if pos in req.errors:
                raise AllocationError(req.errors[pos])
            if self.cls and self.rank[pos] != self.cls_taken[self.cls[pos]]:
                continue  # an earlier interchangeable device is untaken: this choice cannot come first
            if not self._capacity_fits(req, pos):
                continue
            undo = self._take(req, pos, must=False)
            if undo is None:
                continue
            try:
                if self._one(req.ci, req.ri, req.si, di + 1, in_sub, pos + 1):
                    return True
            except MaxSizeExceeded:
                self._undo(undo)
                raise
            self._undo(undo)
        if self.memo:
            self.failed.add(self._memo_key(req, di, start))
        return False

    # --- pruning -------------------------------------------------------------------------------------------------

    def _memo_key(self, req: Req, di: int, start: int) -> Hashable | None:
        """Everything the rest of the search depends on. Devices enter only through what is still usable: per
        class, how many members are taken (for classes later requests can use) or whether this request can still
        take its next member (only members from ``start`` on matter to it); the counters are explicit."""
        if not self.memo:
            return None
        later = self.later[(req.ci, req.ri)]
        usable: list[int] = []
        for c, members in enumerate(self.members):
            taken = self.cls_taken[c]
            if later[c]:
                usable.append(taken)
            elif members[-1] >= start:
                usable.append(taken if taken < len(members) and members[taken] >= start else -1)
        trackers = tuple(self.trackers[req.ci][t].key() for t in self.ahead[(req.ci, req.ri)])
        counters = tuple(sorted((k, v) for k, v in self.counters.items() if v))
        multi = tuple(sorted((p, tuple(sorted(c.items()))) for p, c in self.capacity.items())) if self.capacity else ()
        return (req.ci, req.ri, req.si, di, start, tuple(usable), counters, multi, trackers, len(self.picks[req.ci]))

    def _enough(self, req: Req, need: int, start: int) -> bool:
        """Whether enough untaken candidates remain from ``start`` for the rest of this request (a necessary
        condition, so failing it proves the subtree has no solution)."""
        free = [p for p in req.candidates[bisect_left(req.candidates, start) :] if self._usable(req, p, start)]
        if any(p in req.errors for p in free):
            return True  # the search must reach that device and report its error, as upstream does
        if len(free) < need or not self._counters_suffice(free, need):
            return False
        for t in req.scoped:
            tracker = self.trackers[req.ci][t]
            values = self.attr_values[tracker.attribute]
            if tracker.list_mode:
                if sum(1 for p in free if _compatible(tracker, values[p])) < need:
                    return False
                continue
            if any(_unsupported(values[p]) for p in free):
                return True  # a list value in scalar mode is an error the search must reach
            if tracker.distinct:
                used = tracker.used()
                if len({values[p] for p in free if values[p] is not None and values[p] not in used}) < need:
                    return False
                continue
            fixed = tracker.fixed()
            if fixed is not None:
                if sum(1 for p in free if values[p] == fixed) < need:
                    return False
                continue
            buckets = Counter(values[p] for p in free if values[p] is not None)
            if not buckets or max(buckets.values()) < need:
                return False
        return True

    def _usable(self, req: Req, pos: int, start: int) -> bool:
        """Whether the rest of this request could take ``pos``: untaken, and its class not blocked by an untaken
        earlier member (which this request has passed)."""
        if req.ref.admin_access:
            return req.ci not in self.holders[pos]
        if self.cluster_used[pos] or self.holders[pos]:
            return False
        if not self.cls or self.infos[pos].allow_multiple:
            return True
        c = self.cls[pos]
        return self.members[c][self.cls_taken[c]] >= start

    def _counters_suffice(self, free: list[int], need: int) -> bool:
        """The ``need`` cheapest free devices must fit into every counter they draw from."""
        keys = {k for p in free if p in self.demand for k in self.demand[p]}
        for key in keys:
            used, available = self.counters.get(key, Fraction(0)), self._available(key)
            if used > available:
                continue  # already over (cluster over-committed): only devices drawing from the pool are refused
            costs = sorted(self._cost(p, key) for p in free)
            # Going over needs a device that draws from this counter, and that device is then refused.
            if sum(costs[:need]) + used > available:
                return False
        return True

    def _cost(self, pos: int, key: tuple[int, str, str]) -> Fraction:
        info = self.infos[pos]
        if info.allow_multiple and (self.state.has_shares(info.index) or self.shares.get(pos)):
            return Fraction(0)  # counters are charged once per multi-allocatable device
        return self.demand.get(pos, {}).get(key, Fraction(0))

    # --- allocate one device (upstream's allocateDevice) ----------------------------------------------------------

    def _capacity_fits(self, req: Req, pos: int) -> bool:
        if not self.features.consumable_capacity:
            return True
        info = self.infos[pos]
        if not info.allow_multiple:
            return requested_fits(req.capacity, info.device)
        consumed = req.consumed.get(pos)
        if consumed is None:
            return False
        cluster = self.state.consumed(info.index)
        attempt = self.capacity.get(pos, {})
        for name, use in consumed.items():
            total = amount(info.device.capacity[name].value).value
            if cluster.get(name, 0) + attempt.get(name, 0) + use.value > total:
                return False
        return True

    def _take(self, req: Req, pos: int, must: bool) -> _Undo | None:
        info = self.infos[pos]
        multi = info.allow_multiple
        if not multi and req.ref.admin_access and req.ci in self.holders[pos]:
            return None
        if not req.ref.admin_access and (self.cluster_used[pos] or self.holders[pos]):
            return None
        if info.consumes and not self.features.partitionable:
            return None
        charged = False
        if info.consumes and not (multi and (self.state.has_shares(info.index) or self.shares.get(pos))):
            if not self._charge(info, +1):
                return None
            charged = True
        if self.features.device_taints and not tolerated(info, req.ref.tolerations):
            self._release(info, charged)
            return None
        added = self._add_constraints(req, pos)
        if added < 0:
            self._release(info, charged)
            if must:
                claim = self.claims[req.ci].metadata
                raise AllocationError(
                    f"claim {claim.namespace}/{claim.name}, request {req.ref.name}: cannot add device "
                    f"{info.driver}/{info.pool}/{info.name} because a claim constraint would not be satisfied"
                )
            return None
        if not self._capacity_fits(req, pos):
            self._remove_constraints(req, added)
            self._release(info, charged)
            return None
        return self._record(req, pos, charged)

    def _record(self, req: Req, pos: int, charged: bool) -> _Undo:
        info = self.infos[pos]
        consumed: dict[str, Amount] | None = None
        if info.allow_multiple:
            consumed = req.consumed[pos]
            self.shares[pos] = self.shares.get(pos, 0) + 1
            used = self.capacity.setdefault(pos, {})
            for name, use in consumed.items():
                used[name] = used.get(name, 0) + use.value
        else:
            self.holders[pos].append(req.ci)
            if self.cls:
                self.cls_taken[self.cls[pos]] += 1
        self.picks[req.ci].append(Choice(req.ri, req.si, pos, consumed))
        return _Undo(pos, req.ci, req, len(req.scoped), charged, consumed)

    def _undo(self, undo: _Undo) -> None:
        info = self.infos[undo.pos]
        self.picks[undo.ci].pop()
        self._remove_constraints(undo.req, undo.trackers)
        if info.allow_multiple:
            left = self.shares[undo.pos] - 1
            used = self.capacity[undo.pos]
            for name, use in (undo.consumed or {}).items():
                used[name] -= use.value
            if left:
                self.shares[undo.pos] = left
            else:
                del self.shares[undo.pos]
                del self.capacity[undo.pos]
        else:
            self.holders[undo.pos].remove(undo.ci)
            if self.cls:
                self.cls_taken[self.cls[undo.pos]] -= 1
        self._release(info, undo.charged)

    def _add_constraints(self, req: Req, pos: int) -> int:
        """Add the device to every tracker in scope; -1 (with nothing changed) when one refuses it."""
        trackers = self.trackers[req.ci]
        for n, t in enumerate(req.scoped):
            value = self.attr_values[trackers[t].attribute][pos]
            if _unsupported(value):
                self._remove_constraints(req, n)
                info, claim = self.infos[pos], self.claims[req.ci].metadata
                raise AllocationError(
                    f"claim {claim.namespace}/{claim.name}, request {req.ref.name}: device "
                    f"{info.driver}/{info.pool}/{info.name}: unsupported attribute value for constraint on "
                    f"{trackers[t].attribute} (list attributes need the DRAListTypeAttributes feature)"
                )
            if not trackers[t].add(value):
                self._remove_constraints(req, n)
                return -1
        return len(req.scoped)

    def _remove_constraints(self, req: Req, n: int) -> None:
        trackers = self.trackers[req.ci]
        for t in req.scoped[:n]:
            trackers[t].remove()

    def _charge(self, info: DeviceInfo, sign: int) -> bool:
        """Add (or with -1 release) a device's counters; refuse when any counter of its pool would be exceeded."""
        for set_name, counter, demand in info.consumes:
            key = (info.pool_id, set_name, counter)
            self.counters[key] = self.counters.get(key, Fraction(0)) + sign * demand
        if sign < 0:
            return True
        for key, used in self._pool_counters(info.pool_id):
            if used > self._available(key):
                self._charge(info, -1)
                return False
        return True

    def _pool_counters(self, pool_id: int) -> list[tuple[tuple[int, str, str], Fraction]]:
        out = []
        for set_name, counters in self.state.inventory.counter_sets(pool_id).items():
            for counter in counters:
                key = (pool_id, set_name, counter)
                out.append((key, self.counters.get(key, Fraction(0))))
        return out

    def _available(self, key: tuple[int, str, str]) -> Fraction:
        got = self.available.get(key)
        if got is None:
            got = self.available[key] = self.state.counters_available(*key)
        return got

    def _release(self, info: DeviceInfo, charged: bool) -> None:
        if charged:
            self._charge(info, -1)

    def chosen_subrequest(self, ci: int, ri: int) -> int:
        return self.selected.get((ci, ri), 0)


def _compatible(tracker: Tracker, value: Hashable | None) -> bool:
    """List mode: whether a device could still be added (a necessary condition used to count candidates)."""
    if not isinstance(value, frozenset):
        return False
    if tracker.distinct:
        return not any(e in tracker.used() for e in value)
    common = tracker.key()
    return common is None or (isinstance(common, frozenset) and not common.isdisjoint(value))


def _unsupported(value: object) -> bool:
    """A list attribute seen by a constraint while DRAListTypeAttributes is off (see constraints.attribute_value)."""
    return isinstance(value, tuple) and value[:1] == ("unknown",)


def tolerated(info: DeviceInfo, tolerations: Sequence[dra.DeviceToleration]) -> bool:
    for taint in info.device.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue  # None and unknown effects never block allocation
        if not any(_tolerates(t, taint) for t in tolerations):
            return False
    return True


def _tolerates(toleration: dra.DeviceToleration, taint: dra.DeviceTaint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.operator in ("", "Equal") and toleration.value == taint.value
