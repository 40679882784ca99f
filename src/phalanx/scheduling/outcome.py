"""What the engine decided for each pod and PodGroup: values the front ends render or apply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONDITION_COMPOSITE_SCHEDULED",
    "CONDITION_DISRUPTION_TARGET",
    "CONDITION_POD_GROUP_SCHEDULED",
    "MSG_WAIT_GANG_SCHEDULED",
    "MSG_WAIT_MIN_COUNT",
    "PHASE_EVICTED",
    "PHASE_RUNNING",
    "PHASE_SCHEDULED",
    "PHASE_UNSCHEDULABLE",
    "PHASE_WAITING",
    "Eviction",
    "GroupCondition",
    "OutcomeLog",
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
REASON_WAITING_MEMBER = "WaitingForGroupMember"
REASON_OTHER_SCHEDULER = "OtherScheduler"
REASON_TERMINATING = "Terminating"
REASON_PREEMPTED = "PreemptionByScheduler"  # the DisruptionTarget condition reason of a preemption victim
MSG_PREEMPTED = "{}: preempting to accommodate a higher priority pod"

# PodGroup condition strings (v1.36).
CONDITION_POD_GROUP_SCHEDULED = "PodGroupScheduled"
MSG_WAIT_GROUP = 'waiting for pod\'s pod group "{}" to appear in scheduling queue'
MSG_WAIT_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_WAIT_GANG_SCHEDULED = "waiting for minCount pods from a gang to be scheduled"
MSG_DRA_POST_FILTER_NOT_FOUND = 'error in "DynamicResources" PodGroupPostFilter plugins: not found'
MSG_WAIT_MEMBER = 'waiting for pod group member "{}": {}'
MSG_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
MSG_OTHER_POD_FAILED = "failed to schedule other pod from a pod group"  # a member's error fails the group (v1.36)
MSG_WAITING_PREEMPTION = "pod group is waiting for preemption to complete"
CONDITION_DISRUPTION_TARGET = "DisruptionTarget"
# CompositePodGroup (v1.37; the engine's name, CompositePodGroupInitiallyScheduled on the wire) and the reason a tree
# kube-scheduler finds malformed at run time gets (cycle, depth over 4, several Workloads).
CONDITION_COMPOSITE_SCHEDULED = "CompositePodGroupScheduled"
REASON_INVALID = "Invalid"
MSG_COMPOSITE_UNSCHEDULABLE = "composite pod group is unschedulable"
MSG_NONE_SCHEDULABLE = "no pods were schedulable"
MSG_MIXED_SCHEDULER = 'all pods in a single pod group should have the same .spec.schedulerName set, got: "{}" and "{}"'
# v1.37's validatePodGroup (schedule_one_podgroup.go): the pod's value, then the group's (or the first member's).
MSG_MIXED_PRIORITY = (
    "all pods in a single pod group should have the same priority as the pod group's priority, got {} and {}"
)
MSG_MIXED_PREEMPTION_POLICY = "all pods in a single pod group should have the same preemption policy, got {} and {}"
MSG_GROUP_PREEMPTION_POLICY = (
    "all pods in a single pod group should have the same preemption policy as the pod group's preemption policy, "
    "got {} and {}"
)
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
    scheduler: str = ""  # the preemptor's schedulerName, as the victim's DisruptionTarget message names it
    group: str | None = None  # the victim's PodGroup, when it is one the engine knows

    @property
    def message(self) -> str:
        return MSG_PREEMPTED.format(self.scheduler)


@dataclass(slots=True)
class GroupCondition:
    """``status.conditions[type=PodGroupScheduled]`` as the engine would write it."""

    status: str
    reason: str
    message: str
    type: str = CONDITION_POD_GROUP_SCHEDULED


class OutcomeLog:
    """A recorder keeping the latest outcome of every pod, the evictions in order and the groups' DisruptionTarget
    conditions: what the ScheduleResult reports and what tests assert. (Recorder protocol: ``recorder.py``.)"""

    explains = True  # the ScheduleResult names the rules that changed a decision

    def __init__(self) -> None:
        self.outcomes: dict[str, PodOutcome] = {}
        self.evictions: list[Eviction] = []
        self.disruption_targets: dict[str, GroupCondition] = {}  # PodGroups that lost pods to preemption
        self.rules: dict[str, set[str]] = {}  # pod or PodGroup key -> beyond-v1.36 rules that changed its decision
        self.choices: dict[str, list[str]] = {}  # pod or PodGroup key -> what kube-scheduler picks from at random

    def observed(self, key: str, phase: str, node: str | None) -> None:
        self.outcomes[key] = PodOutcome(phase, node)

    def waiting(self, key: str, reason: str, message: str) -> None:
        self.outcomes[key] = PodOutcome(PHASE_WAITING, None, reason, message)

    def bound(self, key: str, node: str) -> None:
        before = self.outcomes.get(key)
        nominated = before.nominated_node if before is not None else None
        message = f"Successfully assigned {key} to {node}"
        self.outcomes[key] = PodOutcome(PHASE_SCHEDULED, node, REASON_SCHEDULED, message, nominated)

    def unschedulable(self, key: str, rejection: Any) -> None:
        self.outcomes[key] = PodOutcome(PHASE_UNSCHEDULABLE, None, rejection.reason, rejection.message)

    def nominated(self, key: str, node: str) -> None:
        self.outcomes[key].nominated_node = node

    def evicted(self, eviction: Eviction) -> None:
        key = f"{eviction.namespace}/{eviction.name}"
        self.outcomes[key] = PodOutcome(PHASE_EVICTED, eviction.node, REASON_PREEMPTED, eviction.message)
        self.evictions.append(eviction)

    def condition_changed(self, group: str, condition: GroupCondition) -> None:
        if condition.type == CONDITION_DISRUPTION_TARGET:
            self.disruption_targets[group] = condition

    def claim_allocated(self, claim: str, pod: str, allocation: Any) -> None:
        pass

    def claim_released(self, claim: str, pod: str) -> None:
        pass

    def forgotten(self, key: str) -> None:
        self.outcomes.pop(key, None)

    def changed_by(self, rule: str, keys: Sequence[str]) -> None:
        for key in keys:
            self.rules.setdefault(key, set()).add(rule)

    def candidates(self, key: str, nodes: Sequence[str]) -> None:
        self.choices[key] = list(nodes)
