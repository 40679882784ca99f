"""The PodGroup cycle driver (``podGroupCycle``, spec §2.4 and §3.3): one cycle for the group of a popped member.

Algorithm:
  1. Collect the group's queued members, sort them by priority then by when each first entered the active queue
     (the member that completed a gang's quorum first), reject mixed schedulerNames.
  2. Topology (``cycle/placement.py``): without a topology intent the whole cluster is the one placement;
     otherwise each candidate domain is evaluated and one is chosen, and the cycle runs on that domain's nodes.
  3. The group algorithm (``cycle/members.py``) places members one by one on one cluster state; GangScheduling's
     Permit succeeds once bound + placed members reach minCount (basic: once any member is placed); every member
     is still tried, so members beyond minCount are placed too. Success binds every placed member; failure
     forgets every assumption, so a gang holds nothing.
  4. A cycle that placed nothing may preempt (``cycle/group_preemption.py``), as v1.36 runs workload-aware
     preemption only for an Unschedulable result. Members a successful cycle left over (a basic group that partly
     fits, a gang beyond minCount) go back to the queue; their own next cycle places none of them, so it preempts,
     in its turn behind the pods queued before it.

A tree of groups (CompositePodGroup) can run steps 2-4 per child with the same context.
"""

from __future__ import annotations

import time

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling import placement as tas
from phalanx.scheduling.context import CycleContext
from phalanx.scheduling.cycle.group_preemption import preempt_group
from phalanx.scheduling.cycle.members import (
    GroupCycle,
    bound_members,
    default_algorithm,
    group_claim_placements,
    submit,
)
from phalanx.scheduling.cycle.placement import placement_algorithm
from phalanx.scheduling.cycle.validation import member_mismatch
from phalanx.scheduling.groups import GroupInfo
from phalanx.scheduling.plugins.dynamic_resources import NAME as DYNAMIC_RESOURCES
from phalanx.scheduling.profile import Profile
from phalanx.scheduling.recorder import Rejection

__all__ = ["schedule_pod_group"]


def schedule_pod_group(ctx: CycleContext, first: PodInfo, group: GroupInfo) -> None:
    """Run one PodGroup cycle for the group of ``first`` (already popped from the queue)."""
    start = time.perf_counter()
    members = [first, *ctx.take(sorted(ctx.groups.members_of(group.key) - {first.key}))]
    members = [pi for pi in members if pi.pod.metadata.deletion_timestamp is None]
    # podGroupInfoForPod: by priority, then by when each member first entered the active queue (v1.36), or by
    # when each arrived (v1.37's PodGroupMemberPodsOrderingFunc).
    members.sort(key=lambda pi: (-pi.priority, ctx.member_rank(pi.key)))
    mismatch = member_mismatch(ctx, group, members)
    if mismatch is not None:
        # The pods fail before any cycle runs (frameworkForPodGroup in v1.36; validatePodGroup in v1.37, which
        # also writes the condition).
        for pi in members:
            ctx.reject(pi, Rejection(o.REASON_SCHEDULER_ERROR, mismatch.message))
        if mismatch.sets_condition:
            ctx.set_condition(group, "False", o.REASON_SCHEDULER_ERROR, mismatch.message)
        return
    profile = ctx.profile_for(members[0])
    quorum, bound = _quorum(ctx, group, profile), bound_members(ctx, group)
    if quorum is not None and len(members) + bound < quorum and _post_filter_errors(ctx, group, profile):
        if ctx.rules.early_rejection_unschedulable:
            ctx.changed_by("early_rejection_unschedulable", [group.key, *(pi.key for pi in members)])
        else:
            # v1.37.2 rejects the gang before trying any member, then DynamicResources' PodGroupPostFilter errors.
            for pi in members:
                ctx.reject(pi, Rejection(o.REASON_SCHEDULER_ERROR, o.MSG_DRA_POST_FILTER_NOT_FOUND))
            ctx.set_condition(group, "False", o.REASON_SCHEDULER_ERROR, o.MSG_DRA_POST_FILTER_NOT_FOUND)
            return
    cycle = GroupCycle(ctx, group, profile, members, quorum, bound)
    wap = ctx.gates.workload_aware_preemption
    # Without WAP, members preempt pod by pod inside the cycle (not for groups with scheduling constraints when
    # TopologyAwareWorkloadScheduling is on: v1.36's DefaultPreemption refuses them).
    cycle.post_filters = profile.preemption and not wap and not _constrained(ctx, group)
    intent = tas.intent_of(group.pod_group, profile, ctx.rules.topology_annotations)
    if intent is None:
        placed, failures = default_algorithm(cycle, None)
        if not cycle.reached(len(placed)) and ctx.rules.group_aware_claim_placement and cycle.error is None:
            placed, failures = group_claim_placements(cycle, placed, failures)
        rejections = submit(cycle, placed, failures)
    else:
        rejections = placement_algorithm(cycle, intent)
        if intent.mode != "v136":
            ctx.changed_by("topology_annotations", cycle.keys())
    left = [pi for pi in members if not ctx.is_bound(pi.key) and pi.key in rejections]
    failed = any(r.reason == o.REASON_SCHEDULER_ERROR for r in rejections.values())  # v1.36: no WAP after an error
    # WAP runs only when the cycle placed nobody (v1.36's podGroupCycle: the result is Unschedulable).
    if wap and left and len(left) == len(members) and not cycle.preempting and not failed:
        began = time.perf_counter()
        preempt_group(cycle, intent, rejections)
        ctx.stats.preemption_seconds.append(time.perf_counter() - began)
    elif 0 < len(left) < len(members):
        if ctx.rules.leftover_members_preempt_at_once and wap and not cycle.preempting and not failed:
            # v1.37: the leftovers' next cycle comes at once and, placing none of them, preempts for them.
            began = time.perf_counter()
            rest = GroupCycle(ctx, group, profile, left, cycle.quorum, bound_members(ctx, group))
            preempt_group(rest, intent, rejections)
            ctx.changed_by("leftover_members_preempt_at_once", [pi.key for pi in left])
            ctx.stats.preemption_seconds.append(time.perf_counter() - began)
        else:
            # v1.36 requeues failed PodGroup members after backoff, so their next cycle (which places none of them,
            # so it preempts) comes after the pods queued before them.
            ctx.back_off([pi.key for pi in left])
    ctx.stats.cycle_seconds.append(time.perf_counter() - start)


def _quorum(ctx: CycleContext, group: GroupInfo, profile: Profile) -> int | None:
    # Without the GangScheduling plugin nothing enforces minCount: Permit admits every placed pod (basic rules).
    return group.min_count if ctx.groups.gang_enabled.get(profile.scheduler_name, True) else None


def _post_filter_errors(ctx: CycleContext, group: GroupInfo, profile: Profile) -> bool:
    """Whether v1.37.2's bug (``Release.early_rejection_post_filter_error``) strikes a gang rejected early:
    PodGroupPostFilter runs DynamicResources' (the profile has it; after workload-aware preemption's, which finds
    no victims, as no victim makes a missing member appear), which returns Unschedulable itself for a group with
    scheduling constraints and otherwise reads the state its PreFilter writes for each member tried: none was."""
    return (
        ctx.release.early_rejection_post_filter_error
        and not _constrained(ctx, group)
        and any(p.name == DYNAMIC_RESOURCES for p in profile.filters)
    )


def _constrained(ctx: CycleContext, group: GroupInfo) -> bool:
    spec = group.pod_group.spec
    return ctx.gates.topology_aware_scheduling and spec is not None and spec.scheduling_constraints is not None
