"""The scheduling cycles: one pod (``scheduleOnePod``) and one PodGroup (``podGroupCycle``, spec §2.4).

Algorithm (PodGroup cycle):
  1. Collect the group's queued members, sort them by priority then creation, reject mixed schedulerNames.
  2. On one cluster state, place members one by one, assuming each placement so later members see it.
  3. The group succeeds once bound + assumed members reach minCount (basic: once any member is placed);
     every member is still tried, so members beyond minCount are placed too.
  4. Success binds every placed member; failure forgets every assumption, so a gang holds nothing.
  5. Beyond v1.36: a heterogeneous gang that fails in the v1.36 order is retried once, largest member first;
     the retry's placement is used only if it succeeds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling.profile import Attempt, Profile

if TYPE_CHECKING:
    from phalanx.scheduling.scheduler import GroupInfo, Scheduler

__all__ = ["schedule_pod", "schedule_pod_group"]


def schedule_pod(s: Scheduler, pi: PodInfo) -> None:
    """Schedule a pod that belongs to no PodGroup."""
    start = time.perf_counter()
    profile = s.profile_for(pi)
    placement = profile.schedule(pi, s.state.table)
    if placement.node is None:
        s.mark_unschedulable(pi, placement)
    else:
        s.state.assume(pi, placement.node)
        s.bind(pi)
    s.stats.cycle_seconds.append(time.perf_counter() - start)


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
    bound = s.bound_members(group)
    placed, failures = _place(s, profile, members)
    if not _reached(quorum, bound, len(placed)) and _heterogeneous(members):
        for pi, _ in placed:
            s.state.forget(pi)
        retry_placed, retry_failures = _place(s, profile, sorted(members, key=_largest_first))
        if _reached(quorum, bound, len(retry_placed)):
            placed, failures = retry_placed, retry_failures
        else:
            for pi, _ in retry_placed:
                s.state.forget(pi)
            placed, failures = _place(s, profile, members)
    _submit(s, group, quorum, bound, placed, failures)
    s.stats.cycle_seconds.append(time.perf_counter() - start)


def _place(
    s: Scheduler, profile: Profile, members: Sequence[PodInfo]
) -> tuple[list[tuple[PodInfo, int]], list[tuple[PodInfo, Attempt]]]:
    placed: list[tuple[PodInfo, int]] = []
    failures: list[tuple[PodInfo, Attempt]] = []
    for pi in members:
        placement = profile.schedule(pi, s.state.table)
        if placement.node is None:
            failures.append((pi, placement))
            continue
        s.state.assume(pi, placement.node)
        placed.append((pi, placement.node))
    return placed, failures


def _reached(quorum: int | None, bound: int, placed: int) -> bool:
    if quorum is None:
        return placed > 0
    return placed > 0 and bound + placed >= quorum


def _submit(
    s: Scheduler,
    group: GroupInfo,
    quorum: int | None,
    bound: int,
    placed: list[tuple[PodInfo, int]],
    failures: list[tuple[PodInfo, Attempt]],
) -> None:
    """Apply the cycle's result: bind or roll back, then report every member and the group condition."""
    if _reached(quorum, bound, len(placed)):
        for pi, _ in placed:
            s.bind(pi)
        for pi, placement in failures:
            s.mark_unschedulable(pi, placement)
        s.set_condition(group, "True", o.REASON_SCHEDULED, "")
        return
    for pi, _ in placed:
        s.state.forget(pi)
        s.fail(pi, o.REASON_UNSCHEDULABLE, o.MSG_WAIT_GANG_SCHEDULED, rejected_by=("GangScheduling",))
    for pi, placement in failures:
        s.mark_unschedulable(pi, placement)
    need = "at least 1" if quorum is None else f"minCount {quorum}"
    detail = f"{len(placed)} of {len(placed) + len(failures)} pending pods fit, {bound} already scheduled, need {need}"
    s.set_condition(group, "False", o.REASON_UNSCHEDULABLE, f"{o.MSG_GROUP_UNSCHEDULABLE}: {detail}")


def _heterogeneous(members: Sequence[PodInfo]) -> bool:
    first = members[0]
    return any(pi.signature != first.signature or pi.requests != first.requests for pi in members[1:])


def _largest_first(pi: PodInfo) -> tuple[int, ...]:
    # Extended resources (GPUs) dominate, then CPU and memory; ties keep the v1.36 order.
    extended = sum(v for k, v in pi.requests.items() if "/" in k)
    return (-extended, -pi.requests.get("cpu", 0), -pi.requests.get("memory", 0))
