"""The scheduling cycles: one pod (``scheduleOnePod``) and one PodGroup (``podGroupCycle``, spec §2.4 and §3.3).

Algorithm (PodGroup cycle):
  1. Collect the group's queued members, sort them by priority then creation, reject mixed schedulerNames.
  2. Topology (``placement.py``): without a topology intent the whole cluster is the one placement; otherwise
     each candidate domain is evaluated and one is chosen (v1.36 placement scores, or BestFit for the phalanx
     annotations), and the cycle runs on that domain's nodes.
  3. On one cluster state, place members one by one, assuming each placement so later members see it.
  4. The group succeeds once bound + assumed members reach minCount (basic: once any member is placed); every
     member is still tried, so members beyond minCount are placed too.
  5. Success binds every placed member; failure forgets every assumption, so a gang holds nothing.
  6. Beyond v1.36: a heterogeneous gang that fails in the v1.36 order is retried once, largest member first;
     the retry's placement is used only if it succeeds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling import placement as tas
from phalanx.scheduling import preemption
from phalanx.scheduling.framework import BoolArray, CycleState, IntArray
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit
from phalanx.scheduling.profile import Attempt, Profile

if TYPE_CHECKING:
    from phalanx.scheduling.scheduler import GroupInfo, Scheduler

__all__ = ["schedule_pod", "schedule_pod_group"]

Placed = list[tuple[PodInfo, int]]
Failed = list[tuple[PodInfo, Attempt]]


def schedule_pod(s: Scheduler, pi: PodInfo) -> None:
    """Schedule a pod that belongs to no PodGroup."""
    start = time.perf_counter()
    profile = s.profile_for(pi)
    attempt = profile.schedule(pi, s.state.table)
    if attempt.node is None:
        candidate = None
        if profile.preemption and attempt.diagnosis is not None:
            began = time.perf_counter()
            candidate = preemption.preempt_pod(s, profile, pi, attempt.diagnosis)
            s.stats.preemption_seconds.append(time.perf_counter() - began)
        if candidate is None:
            s.mark_unschedulable(pi, attempt)
            if s.claims.deallocate_unusable(pi, s.state.table):
                # DynamicResources PostFilter: the claim change requeues the pod for a fresh allocation.
                s.queue.on_event("ResourceClaimChange")
        else:
            # The pod waits for its victims to go; their PodDelete event requeues it (nominatedNodeName set).
            s.mark_unschedulable(pi, attempt, nominated=s.state.table.names[candidate.row])
            s.evict(candidate.victims, "Pod", pi.namespace, pi.name, profile.scheduler_name)
    elif failed := s.reserve(pi, attempt.node):
        s.fail(pi, o.REASON_SCHEDULER_ERROR, failed, rejected_by=("DynamicResources",))
    else:
        s.bind(pi)
    s.stats.cycle_seconds.append(time.perf_counter() - start)


@dataclass
class _Cycle:
    """One PodGroup cycle's fixed inputs."""

    s: Scheduler
    group: GroupInfo
    profile: Profile
    members: list[PodInfo]
    quorum: int | None  # None: any placed member is enough (basic policy, or GangScheduling disabled)
    bound: int
    _room: tuple[tuple[int, int], IntArray] | None = None

    def room(self) -> IntArray:
        """Slots for the first member's shape on every node, computed once per state of the node table: domain
        evaluation, narrowing and tie-breaks of one cycle all read the same numbers."""
        table = self.s.state.table
        version = (table.changes_base, len(table.changes))
        if self._room is None or self._room[0] != version:
            self._room = (version, tas.slots(self.profile, self.members[0], table))
        return self._room[1]

    def reached(self, placed: int) -> bool:
        if self.quorum is None:
            return placed > 0
        return placed > 0 and self.bound + placed >= self.quorum

    def unschedulable_message(self, placed: int) -> str:
        need = "at least 1" if self.quorum is None else f"minCount {self.quorum}"
        return (
            f"{o.MSG_GROUP_UNSCHEDULABLE}: {placed} of {len(self.members)} pending pods fit, "
            f"{self.bound} already scheduled, need {need}"
        )


def schedule_pod_group(s: Scheduler, first: PodInfo, group: GroupInfo) -> None:
    """Run one PodGroup cycle for the group of ``first`` (already popped from the queue)."""
    start = time.perf_counter()
    members = [first, *s.queue.take(sorted(s.members_of(group) - {first.key}))]
    members = [pi for pi in members if pi.pod.metadata.deletion_timestamp is None]
    members.sort(key=PodInfo.sort_key)
    first_name = members[0].pod.spec.scheduler_name
    other = next((pi.pod.spec.scheduler_name for pi in members if pi.pod.spec.scheduler_name != first_name), None)
    if other is not None:
        # frameworkForPodGroup: the first mismatching name, then the first member's; the pods fail before any
        # cycle runs, so the PodGroup condition is left as it is.
        message = o.MSG_MIXED_SCHEDULER.format(other, first_name)
        for pi in members:
            s.fail(pi, o.REASON_SCHEDULER_ERROR, message, rejected_by=())
        return
    profile = s.profile_for(members[0])
    # Without the GangScheduling plugin nothing enforces minCount: Permit admits every placed pod (basic rules).
    quorum = group.min_count if s.gang_enabled.get(profile.scheduler_name, True) else None
    cycle = _Cycle(s, group, profile, members, quorum, s.bound_members(group))
    intent = tas.intent_of(group.pod_group, profile)
    if intent is None:
        placed, failures = _default_algorithm(cycle, None)
        if not cycle.reached(len(placed)):
            placed, failures = _group_claim_placements(cycle, placed, failures)
        _submit(cycle, placed, failures)
    else:
        _placement_algorithm(cycle, intent)
    if profile.preemption and not any(s.is_bound(pi.key) for pi in members):
        began = time.perf_counter()
        _preempt(cycle, intent)
        s.stats.preemption_seconds.append(time.perf_counter() - began)
    s.stats.cycle_seconds.append(time.perf_counter() - start)


def _default_algorithm(c: _Cycle, within: BoolArray | None) -> tuple[Placed, Failed]:
    """Place the members in order on the visible nodes; assumptions are left in place for the caller."""
    placed, failures = _place(c, c.members, within)
    if not c.reached(len(placed)) and _heterogeneous(c.members):
        _forget(c, placed)
        retry_placed, retry_failures = _place(c, sorted(c.members, key=_largest_first), within)
        if c.reached(len(retry_placed)):
            return retry_placed, retry_failures
        _forget(c, retry_placed)
        placed, failures = _place(c, c.members, within)
    return placed, failures


_MAX_CLAIM_SCOPES = 32


def _group_claim_placements(c: _Cycle, placed: Placed, failures: Failed) -> tuple[Placed, Failed]:
    """Beyond v1.36, which allocates a PodGroup claim for whichever member is placed first: when the group did not
    fit, try it again inside each place its group claims could be allocated (the node set of each distinct
    allocation, such as one NVLink clique's nodes), so the claim goes where the whole group fits. The first
    success wins; otherwise the first attempt's outcome stands."""
    if not any(pc.group is not None for pc in c.s.claims.claims(c.members[0]).claims):
        return placed, failures
    _forget(c, placed)  # the first member's Reserve allocated the group claims: release them to look again
    scopes = c.s.claims.group_claim_scopes(c.members[0], c.s.state.table, _MAX_CLAIM_SCOPES)
    for scope in scopes:
        tried, tried_failures = _default_algorithm(c, scope)
        if c.reached(len(tried)):
            return tried, tried_failures
        _forget(c, tried)
    return _default_algorithm(c, None)


def _place(c: _Cycle, members: Sequence[PodInfo], within: BoolArray | None) -> tuple[Placed, Failed]:
    placed: Placed = []
    failures: Failed = []
    for pi in members:
        attempt = c.profile.schedule(pi, c.s.state.table, within)
        if attempt.node is None:
            failures.append((pi, attempt))
            continue
        if c.s.reserve(pi, attempt.node):
            # Reserve failed (DynamicResources: devices Filter saw are gone): the member did not fit here.
            failures.append((pi, Attempt(None, c.profile.diagnose(CycleState(), pi, c.s.state.table, within))))
            continue
        placed.append((pi, attempt.node))
    return placed, failures


def _forget(c: _Cycle, placed: Placed) -> None:
    for pi, _ in placed:
        c.s.unreserve(pi)


def _submit(c: _Cycle, placed: Placed, failures: Failed) -> None:
    """Apply the cycle's result: bind or roll back, then report every member and the group condition."""
    s = c.s
    if c.profile.preemption:
        # GenericWorkload turns per-pod preemption off for members; the group preempts as a whole.
        for _, attempt in failures:
            if attempt.diagnosis is not None:
                attempt.diagnosis.post_filter_message = preemption.MSG_WORKLOAD_AWARE
    if c.reached(len(placed)):
        for pi, _ in placed:
            s.bind(pi)
        for pi, attempt in failures:
            s.mark_unschedulable(pi, attempt)
        s.set_condition(c.group, "True", o.REASON_SCHEDULED, "")
        return
    _forget(c, placed)
    for pi, _ in placed:
        s.fail(pi, o.REASON_UNSCHEDULABLE, o.MSG_WAIT_GANG_SCHEDULED, rejected_by=("GangScheduling",))
    for pi, attempt in failures:
        s.mark_unschedulable(pi, attempt)
    s.set_condition(c.group, "False", o.REASON_UNSCHEDULABLE, c.unschedulable_message(len(placed)))


# --- workload-aware preemption ---------------------------------------------------------------------------------------


def _preempt(c: _Cycle, intent: tas.Intent | None) -> None:
    """The group did not fit: WAP (spec §4.3) on the whole cluster, or, beyond v1.36, for a group with a topology
    intent, in each candidate domain of its first level, keeping the domain whose victims cost least. Victims are
    evicted only when the group then fits; its members wait with their nominated nodes."""
    s = c.s
    if preemption.group_preemption_policy_never(s, c.members):
        return
    priority = preemption.group_priority(s, c.group.key)
    if not preemption.any_victims(s, c.group.key, priority):
        return
    options: list[BoolArray | None] = [None]
    if intent is not None:
        bound_rows = [s.state.placement[k] for k in s.members_of(c.group) if s.is_bound(k) and k in s.state.placement]
        key = intent.levels[0]
        try:
            pinned = tas.pinned_domain(s.state.table, key, bound_rows)
        except tas.PlacementError:
            return
        options = [d.mask for d in tas.domains(s.state.table, key, pinned)]
    best = _cheapest(c, priority, options)
    if best is None and intent is not None and intent.mode in ("preferred", "unconstrained"):
        best = _cheapest(c, priority, [None])  # the cycle's last resort is anywhere: so is preemption's
    if best is None or not best.victims:
        # No victims means the simulation fits the group where the cycle just did not: evicting nobody and
        # waiting for a PodDelete would only requeue the group into the same failure.
        return
    names = s.state.table.names
    for pi in c.members:
        out = s.outcomes[pi.key]
        row = best.nominated.get(pi.key)
        nominated = names[row] if row is not None else None
        s.fail(pi, out.reason, out.message, rejected_by=("DefaultPreemption",), nominated=nominated)
    s.set_condition(c.group, "False", o.REASON_UNSCHEDULABLE, o.MSG_WAITING_PREEMPTION)
    victims = preemption.whole_gangs(s, [p for u in best.victims for p in u.pods], priority)
    meta = c.group.pod_group.metadata
    s.evict(victims, "PodGroup", meta.namespace, meta.name, c.profile.scheduler_name)


def _cheapest(c: _Cycle, priority: int, options: Sequence[BoolArray | None]) -> preemption.GroupPreemption | None:
    best: preemption.GroupPreemption | None = None
    for within in options:
        units = preemption.victim_units(c.s, c.group.key, priority, within)
        if not units:
            continue
        exact = tas.per_node_only(c.profile, c.members[0], c.s.state.table) and not _heterogeneous(c.members)
        sim = _SlotSimulator(c, within) if exact and not c.members[0].host_ports else _Simulator(c, within)
        found = preemption.select_group_victims(c.s, units, sim)
        if found is not None and (best is None or found.cost() < best.cost()):
            best = found
    return best


class _Simulator:
    """The PodGroup algorithm run for real on the current state, then forgotten."""

    def __init__(self, c: _Cycle, within: BoolArray | None) -> None:
        self.c = c
        self.within = within

    def placements(self) -> tuple[dict[str, int], bool]:
        placed, _ = _default_algorithm(self.c, self.within)
        rows = {pi.key: row for pi, row in placed}
        _forget(self.c, placed)
        return rows, self.c.reached(len(rows))

    def count(self, rows: Sequence[int]) -> tuple[int, bool]:
        placed, ok = self.placements()
        return len(placed), ok


class _SlotSimulator(_Simulator):
    """For identical members judged node by node, the group algorithm places min(members, free slots) members
    (the count topology placement uses too), so a reprieve only recounts the slots of the rows it touched."""

    def __init__(self, c: _Cycle, within: BoolArray | None) -> None:
        super().__init__(c, within)
        self.slots: IntArray | None = None
        self.open: BoolArray | None = None
        self.total = 0
        pod, table = c.members[0], c.s.state.table
        fit = next((p for p in c.profile.filters if isinstance(p, NodeResourcesFit)), None)
        self.cols, self.vals = fit.checked(pod) if fit is not None else (pod.req_cols[:0], pod.req_vals[:0])
        self.table = table

    def count(self, rows: Sequence[int]) -> tuple[int, bool]:
        t = self.table
        if self.slots is None:
            slots = tas.slots(self.c.profile, self.c.members[0], t)
            if self.within is not None:
                slots = np.where(self.within, slots, 0)
            self.slots, self.open = slots, slots > 0  # a node closed with every victim gone stays closed
            self.total = int(slots.sum())
        else:
            assert self.open is not None
            for row in set(rows):
                if not self.open[row]:
                    continue
                room = int(t.max_pods[row] - t.pod_count[row])
                if len(self.cols):
                    free = t.allocatable[row, self.cols] - t.requested[row, self.cols]
                    room = min(room, int((np.maximum(free, 0) // self.vals).min()))
                room = max(room, 0)
                if room and self.c.members[0].pod.spec.resource_claims:
                    caps = np.zeros(len(t), dtype=np.int64)
                    caps[row] = room
                    room = int(tas.device_room(self.c.profile, self.c.members[0], t, caps)[row])
                self.total += room - int(self.slots[row])
                self.slots[row] = room
        placed = min(len(self.c.members), self.total)
        return placed, self.c.reached(placed)

    def placements(self) -> tuple[dict[str, int], bool]:
        """Nominations: members in order onto the free slots in node order (the next cycle places them for real)."""
        assert self.slots is not None
        out: dict[str, int] = {}
        rows = iter(int(r) for r in np.flatnonzero(self.slots) for _ in range(int(self.slots[r])))
        for pi in self.c.members:
            row = next(rows, None)
            if row is None:
                break
            out[pi.key] = row
        return out, self.c.reached(len(out))


# --- topology ------------------------------------------------------------------------------------------------------


@dataclass
class _Evaluation:
    domain: tas.Domain
    count: int  # members that fit
    spare: int  # slots left in the domain after placing them (BestFit: smaller is tighter)
    proposed: list[PodInfo]


def _placement_algorithm(c: _Cycle, intent: tas.Intent) -> None:
    """Evaluate the candidate domains of each level in turn and run the cycle in the chosen one."""
    s, table = c.s, c.s.state.table
    bound_rows = [s.state.placement[k] for k in s.members_of(c.group) if s.is_bound(k) and k in s.state.placement]
    first_message = ""
    total_domains = 0
    for key in intent.levels:
        try:
            pinned = tas.pinned_domain(table, key, bound_rows)
        except tas.PlacementError as exc:
            _fail_all(c, o.REASON_SCHEDULER_ERROR, str(exc))
            return
        candidates = tas.domains(table, key, pinned)
        total_domains += len(candidates)
        evaluations = _evaluate_all(c, key, candidates)
        if not first_message and evaluations:
            first_message = c.unschedulable_message(evaluations[0].count)
        feasible = [e for e in evaluations if c.reached(e.count)]
        if feasible:
            chosen = _choose(c, intent, feasible)
            within = chosen.domain.mask if intent.mode == "v136" else _narrow(c, chosen)
            _submit(c, *_default_algorithm(c, within))
            return
    if intent.mode in ("preferred", "unconstrained"):
        _submit(c, *_default_algorithm(c, None))  # no single domain holds the gang: anywhere, as a last resort
        return
    message = f"0/{total_domains} placements are available, first placement status: {first_message or 'none'}"
    _fail_all(c, o.REASON_UNSCHEDULABLE, message)


def _evaluate_all(c: _Cycle, key: str, candidates: list[tas.Domain]) -> list[_Evaluation]:
    """How many members fit in each domain: counted from slots (one vector pass for all domains) when that is
    exact, else by running the cycle in each domain."""
    table = c.s.state.table
    free = tas.per_domain(table, key, c.room())
    exact = tas.per_node_only(c.profile, c.members[0], table) and not _heterogeneous(c.members)
    out = []
    for dom in candidates:
        room = int(free[dom.code])
        if exact:
            count = min(len(c.members), room)
            out.append(_Evaluation(dom, count, room - count, c.members[:count]))
            continue
        placed, _ = _default_algorithm(c, dom.mask)
        _forget(c, placed)
        out.append(_Evaluation(dom, len(placed), max(room - len(placed), 0), [pi for pi, _ in placed]))
    return out


def _choose(c: _Cycle, intent: tas.Intent, feasible: list[_Evaluation]) -> _Evaluation:
    seed = c.profile.seed
    if len(feasible) == 1:
        return feasible[0]
    if intent.mode == "v136":
        scores = tas.score_v136(
            c.profile, c.s.state.table, [e.domain for e in feasible], [e.proposed for e in feasible], c.bound
        )
        best = [e for e, sc in zip(feasible, scores, strict=True) if sc == scores.max()]
        return min(best, key=lambda e: tas.tie_break(seed, e.domain))
    # BestFit: the domain the gang fills most tightly, so roomier domains stay free for larger gangs; between
    # equally tight domains, the one whose enclosing domains (rack, then block, ...) are fullest.
    parents = _parent_spare(c, feasible)
    return min(feasible, key=lambda e: (-e.count, e.spare, parents[id(e)], tas.tie_break(seed, e.domain)))


def _parent_spare(c: _Cycle, feasible: list[_Evaluation]) -> dict[int, tuple[int, ...]]:
    """For each candidate, the free slots of its enclosing domains at every coarser configured level."""
    levels = [lvl for lvl in c.profile.topology_levels if lvl != tas.HOSTNAME]
    key = feasible[0].domain.key
    coarser = levels[: levels.index(key)][::-1] if key in levels else []
    table = c.s.state.table
    room = c.room() if coarser else None
    out: dict[int, tuple[int, ...]] = {}
    free_by_level = {lvl: tas.per_domain(table, lvl, room) for lvl in coarser} if room is not None else {}
    for e in feasible:
        row = int(np.flatnonzero(e.domain.mask)[0])
        spare = []
        for lvl in coarser:
            code = int(table.label(lvl).codes[row])
            spare.append(int(free_by_level[lvl][code]) if code >= 0 else 1 << 62)
        out[id(e)] = tuple(spare)
    return out


def _narrow(c: _Cycle, chosen: _Evaluation) -> BoolArray:
    """Beyond v1.36: inside the chosen domain, keep the gang in as few sub-domains of each finer level as hold
    it (BestFit per level, as Kueue's TAS does), instead of letting per-node scoring spread it."""
    within = chosen.domain.mask
    levels = [lvl for lvl in c.profile.topology_levels if lvl != tas.HOSTNAME]
    if (
        chosen.domain.key not in levels
        or not tas.per_node_only(c.profile, c.members[0], c.s.state.table)
        or _heterogeneous(c.members)
    ):
        return within
    table = c.s.state.table
    room = c.room()
    need = chosen.count
    for key in levels[levels.index(chosen.domain.key) + 1 :]:
        free = tas.per_domain(table, key, np.where(within, room, 0))
        picked = tas.best_fit(free, need)
        if picked is None:
            break
        within = within & np.isin(table.label(key).codes, picked)
    return within


def _fail_all(c: _Cycle, reason: str, message: str) -> None:
    for pi in c.members:
        c.s.fail(pi, reason, message, rejected_by=("TopologyPlacementGenerator",))
    c.s.set_condition(c.group, "False", reason, message)


def _heterogeneous(members: Sequence[PodInfo]) -> bool:
    first = members[0]
    # The shape leaves claims out: members asking for different claims are not alike either.
    claims = first.pod.spec.resource_claims
    return any(pi.shape != first.shape or pi.pod.spec.resource_claims != claims for pi in members[1:])


def _largest_first(pi: PodInfo) -> tuple[int, ...]:
    # Extended resources (GPUs) dominate, then CPU and memory; ties keep the v1.36 order.
    extended = sum(v for k, v in pi.requests.items() if "/" in k)
    return (-extended, -pi.requests.get("cpu", 0), -pi.requests.get("memory", 0))
