"""The PodGroup algorithm on one cluster state (spec §2.4): members placed one by one, each placement assumed so
later members see it, then GangScheduling's Permit decides whether the group binds or rolls back. The group
cycle driver, topology placement and group preemption all run it (within a topology domain, or as a what-if)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.arrays import BoolArray, IntArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling import placement as tas
from phalanx.scheduling.context import CycleContext
from phalanx.scheduling.cycle.pod import rejection_of
from phalanx.scheduling.framework import Code, CycleState, Status
from phalanx.scheduling.groups import GroupInfo
from phalanx.scheduling.plugins.gang_scheduling import NAME as GANG
from phalanx.scheduling.plugins.topology_placement_generator import NAME as TOPOLOGY
from phalanx.scheduling.preemption.common import MSG_WORKLOAD_AWARE
from phalanx.scheduling.profile import Attempt, Profile
from phalanx.scheduling.reasons import Reason
from phalanx.scheduling.recorder import Rejection

__all__ = [
    "Failed",
    "GroupCycle",
    "Placed",
    "Rejections",
    "bound_members",
    "default_algorithm",
    "fail_all",
    "forget",
    "group_claim_placements",
    "heterogeneous",
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
        need = "at least 1" if self.quorum is None else f"minCount {self.quorum}"
        return (
            f"{o.MSG_GROUP_UNSCHEDULABLE}: {placed} of {len(self.members)} pending pods fit, "
            f"{self.bound} already scheduled, need {need}"
        )


def bound_members(ctx: CycleContext, group: GroupInfo) -> int:
    """Members already bound (in the input or by an earlier cycle): they count toward minCount."""
    return sum(1 for k in ctx.groups.members_of(group.key) if ctx.is_bound(k))


def default_algorithm(c: GroupCycle, within: BoolArray | None) -> tuple[Placed, Failed]:
    """Place the members in order on the visible nodes; assumptions are left in place for the caller. Beyond
    v1.36 (``Rules.largest_first_retry``): a heterogeneous gang that fails in that order is retried once, largest
    member first; the retry's placement is used only if it succeeds."""
    placed, failures = place(c, c.members, within)
    if not c.reached(len(placed)) and c.ctx.rules.largest_first_retry and heterogeneous(c.members):
        forget(c, placed)
        retry_placed, retry_failures = place(c, sorted(c.members, key=_largest_first), within)
        if c.reached(len(retry_placed)):
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
            return tried, tried_failures
        forget(c, tried)
    return default_algorithm(c, None)


def place(c: GroupCycle, members: Sequence[PodInfo], within: BoolArray | None) -> tuple[Placed, Failed]:
    placed: Placed = []
    failures: Failed = []
    for pi in members:
        attempt = c.profile.schedule(pi, c.ctx.state.table, within)
        if attempt.node is None:
            failures.append((pi, attempt))
            continue
        if not c.ctx.reserve(pi, attempt.node).ok:
            # Reserve failed (DynamicResources: devices Filter saw are gone): the member did not fit here.
            failures.append((pi, Attempt(None, c.profile.diagnose(CycleState(), pi, c.ctx.state.table, within))))
            continue
        placed.append((pi, attempt.node))
    return placed, failures


def forget(c: GroupCycle, placed: Placed) -> None:
    for pi, _ in placed:
        c.ctx.unreserve(pi)


def submit(c: GroupCycle, placed: Placed, failures: Failed) -> Rejections:
    """Apply the cycle's result: bind or roll back (GangScheduling's Permit says which), then report every member
    and the group condition. Returns the rejections of the members left unscheduled."""
    ctx = c.ctx
    out: Rejections = {}
    if c.profile.preemption:
        # GenericWorkload turns per-pod preemption off for members; the group preempts as a whole.
        for _, attempt in failures:
            if attempt.diagnosis is not None:
                attempt.diagnosis.post_filter_message = MSG_WORKLOAD_AWARE
    permit = c.permit(len(placed))
    if permit.ok:
        for pi, _ in placed:
            ctx.bind(pi)
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


def _largest_first(pi: PodInfo) -> tuple[int, ...]:
    # Extended resources (GPUs) dominate, then CPU and memory; ties keep the v1.36 order.
    extended = sum(v for k, v in pi.requests.items() if "/" in k)
    return (-extended, -pi.requests.get("cpu", 0), -pi.requests.get("memory", 0))
