"""The PodGroup algorithm on one cluster state (spec §2.4): members placed one by one, each placement assumed so
later members see it, then GangScheduling's Permit decides whether the group binds or rolls back. The group
cycle driver, topology placement and group preemption all run it (within a topology domain, or as a what-if).

With the WorkloadAwarePreemption gate off, a member that fits nowhere runs per-pod preemption inside the cycle,
as v1.36 does then: its victims go at once, it counts as placed on the nominated node, and a group that reaches
its quorum that way waits for the preemption to complete instead of binding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from phalanx.arrays import BoolArray, IntArray
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling import placement as tas
from phalanx.scheduling.context import CycleContext, Preemptor
from phalanx.scheduling.cycle.pod import rejection_of
from phalanx.scheduling.diagnosis import FILTER_ERROR_PLUGIN
from phalanx.scheduling.framework import Code, CycleState, Status
from phalanx.scheduling.groups import GroupInfo
from phalanx.scheduling.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
from phalanx.scheduling.plugins.gang_scheduling import NAME as GANG
from phalanx.scheduling.plugins.topology_placement_generator import NAME as TOPOLOGY
from phalanx.scheduling.preemption.common import MSG_PLACEMENT_LIMITATION, MSG_WORKLOAD_AWARE
from phalanx.scheduling.preemption.default_preemption import preempt_pod
from phalanx.scheduling.profile import Attempt, Profile
from phalanx.scheduling.reasons import Reason
from phalanx.scheduling.recorder import Rejection

__all__ = [
    "Failed",
    "GroupCycle",
    "Placed",
    "Rejections",
    "bound_members",
    "counted_by_slots",
    "default_algorithm",
    "fail_all",
    "forget",
    "group_claim_placements",
    "heterogeneous",
    "passes_filters",
    "place",
    "submit",
]

Placed = list[tuple[PodInfo, int]]
Failed = list[tuple[PodInfo, Attempt]]
Rejections = dict[str, Rejection]  # member key -> why it stays unscheduled
_MAX_CLAIM_SCOPES = 32
_WAIT_QUORUM = Reason(o.MSG_WAIT_GANG_SCHEDULED)


@dataclass
class GroupCycle:
    """One PodGroup cycle's fixed inputs."""

    ctx: CycleContext
    group: GroupInfo
    profile: Profile
    members: list[PodInfo]
    quorum: int | None  # None: any placed member is enough (basic policy, or GangScheduling disabled)
    bound: int
    # WorkloadAwarePreemption off: the next ``place`` runs per-pod preemption for members that fit nowhere (once:
    # what-if runs of the algorithm never preempt, as v1.36 runs them without PostFilters).
    post_filters: bool = False
    preempting: dict[str, int] = field(default_factory=dict)  # member key -> node row its preemption nominated
    fired: set[str] = field(default_factory=set)  # beyond-v1.36 rules behind the last algorithm run's placement
    # Rules.allocator_error_per_node off: the member whose Filter errored in the last algorithm run, and the error
    # (v1.36 stops the group algorithm there).
    error: tuple[PodInfo, str] | None = None
    _room: tuple[tuple[int, int], IntArray] | None = None

    def room(self) -> IntArray:
        """Slots for the first member's shape on every node, computed once per state of the node table: domain
        evaluation, narrowing and tie-breaks of one cycle all read the same numbers."""
        table = self.ctx.state.table
        version = (table.changes_base, len(table.changes))
        if self._room is None or self._room[0] != version:
            self._room = (version, tas.slots(self.profile, self.members[0], table))
        return self._room[1]

    def permit(self, placed: int) -> Status:
        """GangScheduling's Permit for the ``placed`` members: SUCCESS once the quorum is reached, else WAIT."""
        if self.reached(placed):
            return Status()
        return Status(Code.WAIT, (_WAIT_QUORUM,), GANG)

    def reached(self, placed: int) -> bool:
        if self.quorum is None:
            return placed > 0
        return placed > 0 and self.bound + placed >= self.quorum

    def unschedulable_message(self, placed: int) -> str:
        """The PodGroupScheduled=False message: v1.36's, plus how far the gang was from fitting
        (``Rules.group_message_counts``)."""
        if not self.ctx.rules.group_message_counts:
            return o.MSG_GROUP_UNSCHEDULABLE
        need = "at least 1" if self.quorum is None else f"minCount {self.quorum}"
        return (
            f"{o.MSG_GROUP_UNSCHEDULABLE}: {placed} of {len(self.members)} pending pods fit, "
            f"{self.bound} already scheduled, need {need}"
        )

    def keys(self, placed: Placed | None = None) -> list[str]:
        """The group's key and its members' (or the ``placed`` members'), for ``changed_by``."""
        members = self.members if placed is None else [pi for pi, _ in placed]
        return [self.group.key, *(pi.key for pi in members)]


def bound_members(ctx: CycleContext, group: GroupInfo) -> int:
    """Members already bound (in the input or by an earlier cycle): they count toward minCount."""
    return sum(1 for k in ctx.groups.members_of(group.key) if ctx.is_bound(k))


def default_algorithm(c: GroupCycle, within: BoolArray | None) -> tuple[Placed, Failed]:
    """Place the members in order on the visible nodes; assumptions are left in place for the caller. Beyond
    v1.36 (``Rules.largest_first_retry``): a heterogeneous gang that fails in that order is retried once, largest
    member first; the retry's placement is used only if it succeeds."""
    c.fired = set()
    placed, failures = place(c, c.members, within)
    if c.error is not None:
        return placed, failures
    if not c.reached(len(placed)) and c.ctx.rules.largest_first_retry and heterogeneous(c.members):
        forget(c, placed)
        retry_placed, retry_failures = place(c, sorted(c.members, key=_largest_first), within)
        if c.reached(len(retry_placed)):
            c.fired.add("largest_first_retry")
            return retry_placed, retry_failures
        forget(c, retry_placed)
        placed, failures = place(c, c.members, within)
    return placed, failures


def group_claim_placements(c: GroupCycle, placed: Placed, failures: Failed) -> tuple[Placed, Failed]:
    """Beyond v1.36, which allocates a PodGroup claim for whichever member is placed first: when the group did not
    fit, try it again inside each place its group claims could be allocated (the node set of each distinct
    allocation, such as one NVLink clique's nodes), so the claim goes where the whole group fits. The first
    success wins; otherwise the first attempt's outcome stands."""
    if not any(pc.group is not None for pc in c.ctx.claims.claims(c.members[0]).claims):
        return placed, failures
    forget(c, placed)  # the first member's Reserve allocated the group claims: release them to look again
    scopes = c.ctx.claims.group_claim_scopes(c.members[0], c.ctx.state.table, _MAX_CLAIM_SCOPES)
    for scope in scopes:
        tried, tried_failures = default_algorithm(c, scope)
        if c.reached(len(tried)):
            c.fired.add("group_aware_claim_placement")
            return tried, tried_failures
        forget(c, tried)
    return default_algorithm(c, None)


def place(c: GroupCycle, members: Sequence[PodInfo], within: BoolArray | None) -> tuple[Placed, Failed]:
    placed: Placed = []
    failures: Failed = []
    post_filters, c.post_filters = c.post_filters, False
    c.error = None
    for pi in members:
        # A member nominated by an earlier preemption goes to that node first, if it is in this placement and
        # passes Filter there (schedulePod's evaluateNominatedNode runs for PodGroup members too).
        attempt = c.profile.schedule(pi, c.ctx.state.table, within, nominated=c.ctx.nominated_row(pi.key))
        error = attempt.diagnosis.filter_error() if attempt.diagnosis is not None else None
        if error is not None and not c.ctx.rules.allocator_error_per_node:
            c.error = (pi, error)  # v1.36: an error stops evaluating the rest of the group
            failures.append((pi, attempt))
            break
        if error is not None:
            c.ctx.changed_by("allocator_error_per_node", [pi.key])
        if attempt.node is None:
            row = _preempt_member(c, pi, attempt) if post_filters else None
            if row is not None and c.ctx.reserve(pi, row).ok:
                c.preempting[pi.key] = row
                placed.append((pi, row))
                continue
            failures.append((pi, attempt))
            continue
        if not c.ctx.reserve(pi, attempt.node, attempt.candidates, attempt.rules).ok:
            # Reserve failed (DynamicResources: devices Filter saw are gone): the member did not fit here.
            failures.append((pi, Attempt(None, c.profile.diagnose(CycleState(), pi, c.ctx.state.table, within))))
            continue
        placed.append((pi, attempt.node))
    return placed, failures


def _preempt_member(c: GroupCycle, pi: PodInfo, attempt: Attempt) -> int | None:
    """WorkloadAwarePreemption off: DefaultPreemption's PostFilter for one member, as v1.36 runs it inside the
    PodGroup cycle. Its victims are evicted now (v1.36 actuates them at once, whether the group fits or not);
    the member then counts as placed on the nominated node."""
    if attempt.diagnosis is None:
        return None
    candidate = preempt_pod(c.ctx, c.profile, pi, attempt.diagnosis)
    if candidate is None:
        return None
    c.ctx.evict(candidate.victims, Preemptor("Pod", pi.namespace, pi.name, c.profile.scheduler_name))
    return candidate.row


def passes_filters(profile: Profile, pi: PodInfo, table: NodeTable, row: int) -> bool:
    """Whether the pod passes every filter on node ``row`` as the state is now (v1.37's reprieve check, which runs
    the Filter plugins on a member's fixed node)."""
    only = np.zeros(len(table), dtype=bool)
    only[row] = True
    return profile.schedule(pi, table, only).node == row


def forget(c: GroupCycle, placed: Placed) -> None:
    for pi, _ in placed:
        c.ctx.unreserve(pi)


def submit(c: GroupCycle, placed: Placed, failures: Failed) -> Rejections:
    """Apply the cycle's result: bind or roll back (GangScheduling's Permit says which), then report every member
    and the group condition. Returns the rejections of the members left unscheduled."""
    ctx = c.ctx
    if c.error is not None:
        return _fail_with_error(c, placed, *c.error)
    out: Rejections = {}
    if c.profile.preemption and ctx.gates.workload_aware_preemption:
        # WorkloadAwarePreemption turns per-pod preemption off for members; the group preempts as a whole
        # (v1.36's PostFilter names the placement limitation first for groups with scheduling constraints).
        message = MSG_PLACEMENT_LIMITATION if _placement_based(c) else MSG_WORKLOAD_AWARE
        for _, attempt in failures:
            if attempt.diagnosis is not None:
                attempt.diagnosis.post_filter_message = message
    permit = c.permit(len(placed))
    if permit.ok and c.preempting:
        return _wait_for_preemption(c, placed, failures)
    if permit.ok:
        for pi, _ in placed:
            ctx.bind(pi)
        for rule in sorted(c.fired):
            ctx.changed_by(rule, c.keys(placed))
    else:
        forget(c, placed)
        waiting = Rejection(o.REASON_UNSCHEDULABLE, permit.message, frozenset({permit.plugin}))
        for pi, _ in placed:
            out[pi.key] = waiting
            ctx.reject(pi, waiting)
    for pi, attempt in failures:
        out[pi.key] = rejection_of(attempt)
        ctx.reject(pi, out[pi.key])
    if permit.ok:
        ctx.set_condition(c.group, "True", o.REASON_SCHEDULED, "")
    else:
        ctx.set_condition(c.group, "False", o.REASON_UNSCHEDULABLE, c.unschedulable_message(len(placed)))
    return out


def _fail_with_error(c: GroupCycle, placed: Placed, failed: PodInfo, error: str) -> Rejections:
    """v1.36 (Rules.allocator_error_per_node off): a member's Filter error fails the whole group with
    SchedulerError; that member reports its own error, the others the group's, and nothing is kept."""
    forget(c, placed)
    message = f"{o.MSG_OTHER_POD_FAILED}: {error}"
    own = Rejection(o.REASON_SCHEDULER_ERROR, error, frozenset({FILTER_ERROR_PLUGIN}))
    group = Rejection(o.REASON_SCHEDULER_ERROR, message, frozenset({FILTER_ERROR_PLUGIN}))
    out = {pi.key: own if pi.key == failed.key else group for pi in c.members}
    for pi in c.members:
        c.ctx.reject(pi, out[pi.key])
    c.ctx.set_condition(c.group, "False", o.REASON_SCHEDULER_ERROR, message)
    return out


def _wait_for_preemption(c: GroupCycle, placed: Placed, failures: Failed) -> Rejections:
    """The quorum was reached only with members that preempted (WorkloadAwarePreemption off): nobody binds yet;
    every placed member waits nominated to its node, and the victims' PodDelete requeues them."""
    ctx = c.ctx
    forget(c, placed)
    message = o.MSG_WAITING_PREEMPTION
    if not ctx.rules.group_message_counts:
        message = f"{o.MSG_GROUP_UNSCHEDULABLE}, {o.MSG_WAITING_PREEMPTION}"  # the status carries both reasons
    out: Rejections = {}
    waiting = Rejection(o.REASON_UNSCHEDULABLE, message, frozenset({DEFAULT_PREEMPTION}))
    names = ctx.state.table.names
    for pi, row in placed:
        out[pi.key] = waiting
        ctx.reject(pi, waiting, names[row])
    for pi, attempt in failures:
        out[pi.key] = rejection_of(attempt)
        ctx.reject(pi, out[pi.key])
    ctx.set_condition(c.group, "False", o.REASON_UNSCHEDULABLE, message)
    c.preempting.clear()
    return out


def _placement_based(c: GroupCycle) -> bool:
    """v1.36's DefaultPreemption refuses per-pod preemption for members of a group with scheduling constraints
    when TopologyAwareWorkloadScheduling is on, before it says workload-aware preemption is enabled."""
    spec = c.group.pod_group.spec
    return c.ctx.gates.topology_aware_scheduling and spec is not None and spec.scheduling_constraints is not None


def fail_all(c: GroupCycle, reason: str, message: str) -> Rejections:
    """No placement at all: every member is rejected by TopologyPlacementGenerator, and so is the group."""
    rejection = Rejection(reason, message, frozenset({TOPOLOGY}))
    for pi in c.members:
        c.ctx.reject(pi, rejection)
    c.ctx.set_condition(c.group, "False", reason, message)
    return {pi.key: rejection for pi in c.members}


def heterogeneous(members: Sequence[PodInfo]) -> bool:
    first = members[0]
    # The shape leaves claims out: members asking for different claims are not alike either.
    claims = first.pod.spec.resource_claims
    return any(pi.shape != first.shape or pi.pod.spec.resource_claims != claims for pi in members[1:])


def counted_by_slots(profile: Profile, members: Sequence[PodInfo], table: NodeTable) -> bool:
    """Whether placing the members greedily is counted exactly by free slots: they are alike (one shape, the same
    claims, pod (anti-)affinity and spread constraints, so the first stands for all) and every filter judges each
    node by itself. Members that differ only in a spread constraint are not alike: one of them may fit where the
    first's slots say it does not (found by the v1.36.3 differential run, random-1-0047)."""
    if not members or heterogeneous(members):
        return False
    first = members[0]
    spread, affinity = first.pod.spec.topology_spread_constraints, first.affinity_key
    if any(pi.pod.spec.topology_spread_constraints != spread or pi.affinity_key != affinity for pi in members[1:]):
        return False
    return tas.per_node_only(profile, first, table)


def _largest_first(pi: PodInfo) -> tuple[int, ...]:
    # Extended resources (GPUs) dominate, then CPU and memory; ties keep the v1.36 order.
    extended = sum(v for k, v in pi.requests.items() if "/" in k)
    return (-extended, -pi.requests.get("cpu", 0), -pi.requests.get("memory", 0))
