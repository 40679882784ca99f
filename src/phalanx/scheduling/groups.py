"""The PodGroups the engine knows, their non-terminal members, their PodGroupScheduled conditions, and the
questions the cycles and preemption ask about them (gang membership, priority, disruption mode)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from phalanx.api.models import PodGroup
from phalanx.api.priority import PriorityResolver
from phalanx.api.scheduling import disrupts_together
from phalanx.cluster.pods import PodInfo, pod_key
from phalanx.scheduling import outcome as o

__all__ = ["DISRUPTION_MODE_POD_GROUP", "GroupInfo", "PodGroups", "TreeUnits", "write_condition"]

DISRUPTION_MODE_POD_GROUP = "PodGroup"


@dataclass
class GroupInfo:
    key: str
    pod_group: PodGroup
    min_count: int | None  # None for the basic policy


class TreeUnits(Protocol):
    """Victim units above PodGroups (v1.37 CompositePodGroup trees; ``trees.py`` implements it)."""

    def unit_above(self, key: str) -> str | None:
        """The unit key of the highest ancestor CompositePodGroup with disruptionMode ``all``, if any."""
        ...

    def unit_members(self, unit: str) -> set[str]: ...

    def unit_priority(self, unit: str) -> int: ...


class PodGroups:
    """PodGroups by key, members by group key (a group's members may exist before the group does). With
    ``enabled`` False (the GenericWorkload gate off) the groups are kept for reports but the engine sees none:
    their pods are scheduled one by one, as kube-scheduler without the gate does."""

    def __init__(self, gang_enabled: Mapping[str, bool], priorities: PriorityResolver, enabled: bool = True) -> None:
        self.gang_enabled = gang_enabled  # per schedulerName: whether its profile runs GangScheduling
        self.priorities = priorities
        self.enabled = enabled
        self.groups: dict[str, GroupInfo] = {}
        self.members: dict[str, set[str]] = {}  # group key -> non-terminal member pod keys
        self.conditions: dict[str, o.GroupCondition] = {}
        self.tree_units: TreeUnits | None = None  # set by the engine when CompositePodGroup trees are on

    def __contains__(self, key: object) -> bool:
        return self.enabled and key in self.groups

    def get(self, key: str | None) -> GroupInfo | None:
        return self.groups.get(key) if key and self.enabled else None

    def add(self, pg: PodGroup) -> GroupInfo:
        key = pod_key(pg.metadata.namespace, pg.metadata.name)
        policy = pg.spec.scheduling_policy if pg.spec else None
        min_count = policy.gang.min_count if policy is not None and policy.gang is not None else None
        group = GroupInfo(key, pg, min_count)
        self.groups[key] = group
        for cond in pg.status.conditions:
            if cond.type == o.CONDITION_POD_GROUP_SCHEDULED:
                # An update read from a watch may predate a True the engine has already reached (serve: the event
                # of an earlier False write arriving after the group succeeded).
                write_condition(self.conditions, key, o.GroupCondition(cond.status, cond.reason, cond.message))
        return group

    def remove(self, key: str) -> GroupInfo | None:
        self.conditions.pop(key, None)
        return self.groups.pop(key, None)

    def add_member(self, pi: PodInfo) -> None:
        if pi.group_key:
            self.members.setdefault(pi.group_key, set()).add(pi.key)

    def discard_member(self, pi: PodInfo) -> None:
        if pi.group_key:
            self.members.get(pi.group_key, set()).discard(pi.key)

    def members_of(self, key: str) -> set[str]:
        """PodGroupState.AllPods: the non-terminal pods naming the group, whether it exists yet or not."""
        return self.members.get(key, set())

    def gang_enabled_for(self, pi: PodInfo) -> bool:
        return self.enabled and self.gang_enabled.get(pi.pod.spec.scheduler_name, True)

    def gang_key(self, pi: PodInfo) -> str | None:
        """The key of the gang (a PodGroup with minCount, GangScheduling on) ``pi`` belongs to, if any."""
        group = self.get(pi.group_key)
        if group is None or group.min_count is None:
            return None
        return group.key if self.gang_enabled_for(pi) else None

    def priority(self, key: str) -> int:
        """``PodGroupPriority``: spec.priority, else the priorityClassName's value or the globalDefault."""
        spec = self.groups[key].pod_group.spec
        if spec is None:
            return self.priorities.resolve(None, "")
        return self.priorities.resolve(spec.priority, spec.priority_class_name)

    def disruption_mode(self, key: str | None) -> str:
        group = self.get(key)
        spec = group.pod_group.spec if group is not None else None
        return DISRUPTION_MODE_POD_GROUP if spec is not None and disrupts_together(spec.disruption_mode) else "Pod"

    def victim_unit(self, key: str | None) -> str | None:
        """The key of the unit a pod of PodGroup ``key`` is evicted with: the highest ancestor CompositePodGroup
        with disruptionMode ``all`` (v1.37), else the PodGroup itself when its mode is ``all``, else None (the
        pod alone)."""
        if key is None or key not in self:
            return None
        above = self.tree_units.unit_above(key) if self.tree_units is not None else None
        if above is not None:
            return above
        return key if self.disruption_mode(key) == DISRUPTION_MODE_POD_GROUP else None

    def unit_members(self, unit: str) -> set[str]:
        """The non-terminal pods of a victim unit (a PodGroup's members, or every pod of a subtree)."""
        if unit in self.groups or self.tree_units is None:
            return self.members_of(unit)
        return self.tree_units.unit_members(unit)

    def unit_priority(self, unit: str) -> int:
        if unit in self.groups or self.tree_units is None:
            return self.priority(unit)
        return self.tree_units.unit_priority(unit)

    def set_condition(self, key: str, condition: o.GroupCondition) -> bool:
        """Write PodGroupScheduled; a True condition is never regressed. Whether it was written."""
        return write_condition(self.conditions, key, condition)


def write_condition(conditions: dict[str, o.GroupCondition], key: str, condition: o.GroupCondition) -> bool:
    """Set a group's scheduled condition unless that would regress True (PodGroupInitiallyScheduled and
    CompositePodGroupInitiallyScheduled are terminal once True). Whether it was written."""
    current = conditions.get(key)
    if current is not None and current.status == "True" and condition.status != "True":
        return False
    conditions[key] = condition
    return True
