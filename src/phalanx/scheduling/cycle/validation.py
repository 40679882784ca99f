"""The checks a PodGroup cycle makes before it places anything: one schedulerName for every member (v1.36), and,
as v1.37 requires (in phalanx's mode and ``--compat v1.37``; ``Release.validates_pod_group``), every member
with the group's priority and one preemption policy.

v1.37's ``validatePodGroup`` walks the queued members in cycle order, then the bound ones, and stops at the first
member that breaks a rule: schedulerName (against the first queued member's), priority (against the PodGroup's),
preemptionPolicy (with the PodGroupPreemptionPolicy gate on, against the PodGroup's, PreemptLowerPriority when it
declares none; with it off, v1.37's default, against the first member's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling.context import CycleContext
from phalanx.scheduling.groups import GroupInfo

__all__ = ["Mismatch", "member_mismatch", "tree_mismatch"]


@dataclass(frozen=True)
class Mismatch:
    message: str
    # v1.37 writes PodGroupScheduled=False/SchedulerError for every mismatch; v1.36's schedulerName mismatch (its
    # only check) leaves the condition as it is.
    sets_condition: bool


def member_mismatch(ctx: CycleContext, group: GroupInfo, members: Sequence[PodInfo]) -> Mismatch | None:
    """The first member that breaks a group-wide rule, or None. ``members``: the queued members in cycle order."""
    first = members[0].pod.spec.scheduler_name
    if not ctx.release.validates_pod_group:
        other = next((pi.pod.spec.scheduler_name for pi in members if pi.pod.spec.scheduler_name != first), None)
        return None if other is None else Mismatch(o.MSG_MIXED_SCHEDULER.format(other, first), False)
    spec = group.pod_group.spec
    declared = spec.preemption_policy if spec is not None else None
    return _first_mismatch(ctx, members, [group.key], ctx.groups.priority(group.key), declared)


def tree_mismatch(
    ctx: CycleContext, root_priority: int, root_policy: str | None, leaves: Sequence[str], queued: Sequence[PodInfo]
) -> Mismatch | None:
    """v1.37.2's validatePodGroup for a tree: every queued pod of every leaf, then every bound one, against the
    first queued pod's schedulerName and the root CompositePodGroup's priority and preemption policy."""
    return _first_mismatch(ctx, queued, leaves, root_priority, root_policy)


def _first_mismatch(
    ctx: CycleContext, queued: Sequence[PodInfo], groups: Sequence[str], priority: int, declared: str | None
) -> Mismatch | None:
    first = queued[0].pod.spec.scheduler_name
    gated = ctx.gates.pod_group_preemption_policy
    policy = (declared or "PreemptLowerPriority") if gated else None
    keys = sorted(k for g in groups for k in ctx.groups.members_of(g))
    bound = [ctx.state.pods[k] for k in keys if k in ctx.state.pods]
    for pi in [*queued, *(b for b in bound if ctx.is_bound(b.key))]:
        if pi.pod.spec.scheduler_name != first:
            return Mismatch(o.MSG_MIXED_SCHEDULER.format(pi.pod.spec.scheduler_name, first), True)
        if pi.priority != priority:
            return Mismatch(o.MSG_MIXED_PRIORITY.format(pi.priority, priority), True)
        own = ctx.preemption_policy(pi)
        if policy is None:
            policy = own
        elif own != policy:
            template = o.MSG_GROUP_PREEMPTION_POLICY if gated else o.MSG_MIXED_PREEMPTION_POLICY
            return Mismatch(template.format(own, policy), True)
    return None
