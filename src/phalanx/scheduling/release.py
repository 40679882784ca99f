"""Where kube-scheduler v1.36 and v1.37 schedule groups differently, as one frozen value the cycle context exposes
(``ctx.release``).

:class:`~phalanx.scheduling.rules.Rules` are phalanx's own improvements, named and switchable one by one; a
:class:`Release` is what the modelled kube-scheduler release does, and is not a choice: ``--compat v1.36`` follows
:data:`V1_36`, ``--compat v1.37`` and phalanx's own mode follow :data:`V1_37`; where v1.37 has a bug, a
rule fixes it in phalanx's mode. Every place whose behaviour depends on the release asks ``ctx.release.<field>``,
never the ``--compat`` string. The feature gates
(``scheduling/feature_gates*.py``) stay separate: a release's gate table says which features are on, a Release
says how its code behaves where a feature is on in both.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RELEASES", "V1_36", "V1_37", "Release", "release_for"]


@dataclass(frozen=True, slots=True)
class Release:
    name: str
    # CompositePodGroup trees are scheduled as one unit (with the CompositePodGroup gate on); v1.36 has no such API,
    # so every PodGroup is its own unit whatever parent it names (scheduling/trees.py).
    composite_trees: bool
    # v1.37's validatePodGroup: every member (queued, then bound) has the first member's schedulerName, the
    # group's priority and one preemption policy, and a failure writes PodGroupScheduled=False/SchedulerError
    # (handlePodGroupFailureBeforeScheduling). v1.36 checks only the schedulerName and leaves the condition as it
    # is (scheduling/cycle/validation.py).
    validates_pod_group: bool
    # A PodGroup is queued as one entity (the root of its tree, with trees on), and one member held by its own
    # PreEnqueue (scheduling gates, a missing ResourceClaim) holds them all: no cycle runs and no condition is
    # written until it is released (v1.37's runPreEnqueuePlugins, "if any pod is gated, the whole entity is
    # gated"). v1.36 queues members one by one: the others run their cycle without it (scheduling/scheduler.py).
    gated_member_holds_group: bool
    # A bug of v1.37.2: a gang cycle rejected before any member is tried (fewer live members than minCount, as when
    # members being deleted still counted at PreEnqueue) runs DynamicResources' PodGroupPostFilter, which finds no
    # state of its own and errors; the group and its pods fail with SchedulerError ``error in "DynamicResources"
    # PodGroupPostFilter plugins: not found`` instead of Unschedulable. phalanx's mode fixes it (the rule
    # ``early-rejection-unschedulable``; scheduling/cycle/group.py).
    early_rejection_post_filter_error: bool = False
    # v1.37's PodGroupEvaluator: workload-aware preemption for every group (scheduling constraints too: v1.36
    # refuses those), all victims removed, the group algorithm run once, then each unit, most important first,
    # reprieved if every placed member still passes Filter on the node that run chose (phalanx's mode keeps v1.36's
    # re-run under the rule ``reprieve-by-rerun``; scheduling/cycle/group_preemption.py).
    wap_single_run: bool = False
    # A PodGroup cycle's members in v1.37's PodGroupMemberPodsOrderingFunc order: priority, then (attempts, not
    # modelled:) the time each was added to the group's queued entity, its arrival; a snapshot's pods arrive by
    # creation, then name. v1.36 orders them by when each first entered the active queue, where GangScheduling's
    # PreEnqueue held the first minCount - 1 until the member that completed the quorum came, so that member goes
    # first (scheduling/scheduler.py ``_arrival_order``, scheduling/cycle/group.py).
    member_order_by_arrival: bool = False


V1_36 = Release("v1.36", composite_trees=False, validates_pod_group=False, gated_member_holds_group=False)
V1_37 = Release(
    "v1.37",
    composite_trees=True,
    validates_pod_group=True,
    gated_member_holds_group=True,
    early_rejection_post_filter_error=True,
    wap_single_run=True,
    member_order_by_arrival=True,
)
RELEASES = {r.name: r for r in (V1_36, V1_37)}


def release_for(compat: str | None) -> Release:
    """The release a compatibility mode follows (``v1.36``, ``v1.37``), or phalanx's own mode's (None: v1.37).
    Raises KeyError for a version without a compatibility mode."""
    if compat is None:
        return V1_37
    return RELEASES[compat if compat.startswith("v") else f"v{compat}"]
