"""What the engine decided for each pod and PodGroup: values the front ends render or apply."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "PHASE_EVICTED",
    "PHASE_RUNNING",
    "PHASE_SCHEDULED",
    "PHASE_UNSCHEDULABLE",
    "PHASE_WAITING",
    "Eviction",
    "GroupCondition",
    "PodOutcome",
]

PHASE_SCHEDULED = "Scheduled"
PHASE_RUNNING = "Running"
PHASE_UNSCHEDULABLE = "Unschedulable"
PHASE_WAITING = "Waiting"
PHASE_EVICTED = "Evicted"

# Pod reasons (PodScheduled condition reasons where Kubernetes has one).
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_GATED = "SchedulingGated"
REASON_WAITING_POD_GROUP = "WaitingForPodGroup"
REASON_WAITING_MIN_COUNT = "WaitingForMinCount"
REASON_WAITING_CLAIM = "WaitingForResourceClaim"
REASON_OTHER_SCHEDULER = "OtherScheduler"
REASON_TERMINATING = "Terminating"
REASON_PREEMPTED = "PreemptionByScheduler"  # the DisruptionTarget condition reason of a preemption victim
MSG_PREEMPTED = "{}: preempting to accommodate a higher priority pod"

# PodGroup condition strings (v1.36).
CONDITION_POD_GROUP_SCHEDULED = "PodGroupScheduled"
MSG_WAIT_GROUP = 'waiting for pod\'s pod group "{}" to appear in scheduling queue'
MSG_WAIT_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_WAIT_GANG_SCHEDULED = "waiting for minCount pods from a gang to be scheduled"
MSG_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
MSG_WAITING_PREEMPTION = "pod group is waiting for preemption to complete"
CONDITION_DISRUPTION_TARGET = "DisruptionTarget"
MSG_MIXED_SCHEDULER = 'all pods in a single pod group should have the same .spec.schedulerName set, got: "{}" and "{}"'
MSG_GATED = "Scheduling is blocked due to non-empty scheduling gates"


@dataclass(slots=True)
class PodOutcome:
    phase: str
    node: str | None = None
    reason: str = ""
    message: str = ""
    nominated_node: str | None = None


@dataclass(frozen=True, slots=True)
class Eviction:
    """A preemption victim and who preempted it (``kind`` Pod or PodGroup)."""

    namespace: str
    name: str
    node: str
    preemptor_kind: str
    preemptor_namespace: str
    preemptor_name: str


@dataclass(slots=True)
class GroupCondition:
    """``status.conditions[type=PodGroupScheduled]`` as the engine would write it."""

    status: str
    reason: str
    message: str
    type: str = CONDITION_POD_GROUP_SCHEDULED
