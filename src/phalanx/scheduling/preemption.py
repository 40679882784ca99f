"""Per-pod preemption: DefaultPreemption's PostFilter (kube-scheduler v1.36 ``preemption.Evaluator``).

When a pod fits nowhere, each node whose rejection preemption could resolve is a candidate: remove every pod of
lower priority, check the pod fits, then put victims back one by one (PDB-violating first, most important first)
keeping only those without which the pod still fits. The candidates are ranked (fewest PDB violations, lowest
highest-victim priority, smallest priority sum, fewest victims, latest start), the best one's victims are evicted
and the node is nominated. The caller reports the pod unschedulable; the evictions' PodDelete event requeues it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from phalanx.api.models import PodDisruptionBudget
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.diagnosis import Diagnosis
from phalanx.scheduling.framework import BoolArray, CycleState
from phalanx.scheduling.plugins.pod_selectors import Selector
from phalanx.scheduling.profile import Profile

if TYPE_CHECKING:
    from phalanx.scheduling.scheduler import Scheduler

__all__ = [
    "MSG_NOT_HELPFUL",
    "MSG_NO_VICTIMS",
    "MSG_POLICY_NEVER",
    "MSG_WORKLOAD_AWARE",
    "Budgets",
    "Candidate",
    "GroupPreemption",
    "Simulator",
    "Unit",
    "group_preemption_policy_never",
    "group_priority",
    "importance",
    "preempt_pod",
    "preemption_policy",
    "select_group_victims",
    "victim_units",
    "whole_gangs",
]

MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
# Per-pod preemption is off for PodGroup members (GenericWorkload): the group preempts as a whole.
MSG_WORKLOAD_AWARE = "preemption: not eligible due to workload aware preemption enabled"
PREFIX = "preemption: "
NEVER = "Never"

_MIN_CANDIDATES_ABSOLUTE = 100  # DefaultPreemptionArgs defaults
_MIN_CANDIDATES_PERCENT = 10
_PRIORITY_OFFSET = 1 << 31  # sums of priorities stay non-negative (math.MaxInt32 + 1)


@dataclass
class Candidate:
    row: int
    victims: list[PodInfo]  # most important first
    pdb_violations: int
    order: int = 0


def start_time(pi: PodInfo) -> float:
    """``GetPodStartTime``: status.startTime, else the creation time (the snapshot has no clock)."""
    ts = pi.pod.status.start_time
    return ts.timestamp() if ts is not None else pi.created


def importance(pi: PodInfo) -> tuple[int, float, str]:
    """``MoreImportantPod`` as a sort key: higher priority first, then the earlier started."""
    return (-pi.priority, start_time(pi), pi.key)


def preemption_policy(s: Scheduler, pi: PodInfo) -> str:
    """The pod's preemptionPolicy as admission writes it (from its PriorityClass when the pod leaves it unset)."""
    if pi.pod.spec.preemption_policy:
        return pi.pod.spec.preemption_policy
    return s.priorities.policies.get(pi.pod.spec.priority_class_name, "PreemptLowerPriority")


@dataclass
class _Budget:
    namespace: str
    selector: Selector
    allowed: int
    disrupted: frozenset[str]


@dataclass
class Budgets:
    """PodDisruptionBudgets with their disruptionsAllowed (from status, or computed as the disruption controller
    would: healthy matching pods minus the desired healthy count)."""

    budgets: list[_Budget] = field(default_factory=list)

    @classmethod
    def of(cls, pdbs: Iterable[PodDisruptionBudget], placed: Iterable[PodInfo]) -> Budgets:
        placed = list(placed)
        out = []
        for pdb in pdbs:
            sel = Selector.of(pdb.spec.selector)
            if not sel.requirements:
                continue  # filterPodsWithPDBViolation skips nil and empty selectors
            ns = pdb.metadata.namespace
            allowed = pdb.status.disruptions_allowed
            if allowed is None:
                healthy = sum(1 for p in placed if p.namespace == ns and sel.matches(p.pod.metadata.labels))
                allowed = max(0, healthy - _desired_healthy(pdb, healthy))
            out.append(_Budget(ns, sel, allowed, frozenset(pdb.status.disrupted_pods)))
        return cls(out)

    def split(self, pods: Sequence[PodInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
        """``filterPodsWithPDBViolation``: pods (in the given order) whose eviction would take some budget below
        zero, and the others."""
        left = [b.allowed for b in self.budgets]
        violating: list[PodInfo] = []
        fine: list[PodInfo] = []
        for pi in pods:
            bad = False
            for i, b in enumerate(self.budgets):
                if b.namespace != pi.namespace or pi.name in b.disrupted:
                    continue
                if not b.selector.matches(pi.pod.metadata.labels):
                    continue
                left[i] -= 1
                bad |= left[i] < 0
            (violating if bad else fine).append(pi)
        return violating, fine


def _desired_healthy(pdb: PodDisruptionBudget, expected: int) -> int:
    spec = pdb.spec
    if spec.max_unavailable is not None:
        return expected - _scaled(spec.max_unavailable, expected)
    if spec.min_available is not None:
        return _scaled(spec.min_available, expected)
    return expected


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text)


def preempt_pod(s: Scheduler, profile: Profile, pi: PodInfo, diag: Diagnosis) -> Candidate | None:
    """PostFilter for a pod that fits nowhere: the chosen candidate (its victims not yet evicted), or None. Writes
    the ``preemption: ...`` part of the FitError into ``diag`` when preemption cannot help."""
    if preemption_policy(s, pi) == NEVER:
        diag.post_filter_message = PREFIX + MSG_POLICY_NEVER
        return None
    table = s.state.table
    n = len(table)
    potential = np.flatnonzero(profile.resolvable(pi, table))
    statuses: Counter[str] = Counter()
    statuses[MSG_NOT_HELPFUL] = n - len(potential)
    budgets = Budgets.of(s.pdbs, s.state.pods.values()) if s.pdbs else Budgets()
    wanted = min(n, max(_MIN_CANDIDATES_ABSOLUTE, n * _MIN_CANDIDATES_PERCENT // 100))
    candidates: list[Candidate] = []
    non_violating = 0
    for row in potential:
        found = select_victims(s, profile, pi, int(row), budgets)
        if isinstance(found, Counter):
            statuses.update(found)
            continue
        victims, violations = found
        candidates.append(Candidate(int(row), victims, violations, len(candidates)))
        non_violating += violations == 0
        if non_violating and len(candidates) >= wanted:
            break
    if not candidates:
        out = Diagnosis(n)
        out.reasons = +statuses
        diag.post_filter_message = PREFIX + out.message()
        return None
    return min(candidates, key=_rank)


def select_victims(
    s: Scheduler, profile: Profile, pi: PodInfo, row: int, budgets: Budgets
) -> tuple[list[PodInfo], int] | Counter[str]:
    """``SelectVictimsOnNode``: the fewest, least important lower-priority pods on ``row`` whose removal lets
    ``pi`` fit, and how many of them violate a PDB; or the node's rejection reasons. The state is left as found."""
    state, table = s.state, s.state.table
    lower = [
        v
        for v in state.node_pods[row].values()
        if v.priority < pi.priority and v.key not in state.assumed and _evictable_gang(s, pi, v)
    ]
    if not lower:
        return Counter({MSG_NO_VICTIMS: 1})
    for v in lower:
        state.remove(v)
    try:
        rejecting = profile.rejecting_filter(pi, table, row)
        if rejecting is not None:
            return rejecting.reasons(CycleState(), pi, table, np.array([row], dtype=np.intp))
        # Beyond v1.36 (gang-safe): members of running gangs are reprieved first within each PDB class, so
        # other pods are preferred as victims.
        lower.sort(key=lambda v: (_gang_key(s, v) is None, *importance(v)))
        violating, fine = budgets.split(lower)
        victims: list[PodInfo] = []
        violations = 0
        for group, is_violating in ((violating, True), (fine, False)):
            for v in group:
                state.add_bound(v, row)
                if profile.rejecting_filter(pi, table, row) is not None:
                    state.remove(v)
                    victims.append(v)
                    violations += is_violating
        victims = _whole_gangs(s, victims)
        victims.sort(key=importance)
        return victims, violations
    finally:
        for v in lower:
            if v.key not in state.placement:
                state.add_bound(v, row)


def _gang_key(s: Scheduler, v: PodInfo) -> str | None:
    """The key of the gang (a PodGroup with minCount, GangScheduling on) ``v`` belongs to, if any."""
    gk = v.group_key
    group = s.groups.get(gk) if gk else None
    if group is None or group.min_count is None:
        return None
    return gk if s.gang_enabled.get(v.pod.spec.scheduler_name, True) else None


def _evictable_gang(s: Scheduler, pi: PodInfo, v: PodInfo) -> bool:
    """Beyond v1.36 (gang-safe): a gang member may be a victim only if its whole gang could go with it, i.e. every
    bound member is visible, not assumed, and of lower priority than the preemptor."""
    return _gang_key(s, v) is None or _gang_evictable(s, v, pi.priority)


def whole_gangs(s: Scheduler, victims: list[PodInfo], below: int) -> list[PodInfo]:
    """``_whole_gangs`` for workload-aware preemption: only gangs whose every bound member has priority < ``below``
    and is visible are completed; others are left as v1.36 leaves them."""
    safe = [v for v in victims if _gang_key(s, v) is not None and _gang_evictable(s, v, below)]
    if not safe:
        return victims
    extra = [p for p in _whole_gangs(s, safe) if p.key not in {v.key for v in safe}]
    chosen = {v.key for v in victims}
    return victims + [p for p in extra if p.key not in chosen]


def _gang_evictable(s: Scheduler, v: PodInfo, below: int) -> bool:
    gk = _gang_key(s, v)
    for key in s.members.get(gk or "", ()):
        if key in s.bound_elsewhere:
            return False
        if key in s.state.placement and (s.pods[key].priority >= below or key in s.state.assumed):
            return False
    return True


def _whole_gangs(s: Scheduler, victims: list[PodInfo]) -> list[PodInfo]:
    """Beyond v1.36 (gang-safe): a victim set that would leave a running gang below its minCount takes the gang's
    other bound members too; a partial gang does no useful work and would only hold its resources."""
    chosen = {v.key for v in victims}
    per_gang: Counter[str] = Counter(gk for v in victims if (gk := _gang_key(s, v)) is not None)
    extra: list[PodInfo] = []
    for gk, lost in per_gang.items():
        group = s.groups[gk]
        bound = [k for k in s.members.get(gk, ()) if k in s.state.placement or k in chosen]
        if group.min_count is None or len(bound) - lost >= group.min_count:
            continue
        extra += [s.pods[k] for k in sorted(bound) if k not in chosen]
    return victims + extra


def _rank(c: Candidate) -> tuple[int, int, int, int, float, int]:
    """``pickOneNodeForPreemption``: fewest PDB violations, lowest highest-victim priority, smallest priority sum,
    fewest victims, latest start of the highest-priority victims, then the first candidate found."""
    if not c.victims:
        return (0, -(1 << 62), 0, 0, 0.0, c.order)
    top = c.victims[0].priority
    total = sum(v.priority + _PRIORITY_OFFSET for v in c.victims)
    earliest = min(start_time(v) for v in c.victims if v.priority == top)
    return (c.pdb_violations, top, total, len(c.victims), -earliest, c.order)


# --- workload-aware preemption (PodGroups, spec §4) -------------------------------------------------------------

MSG_NO_GROUP_VICTIMS = "No preemption victims found for incoming preemptor"
MSG_GROUP_DOES_NOT_FIT = "pod group does not fit even if every lower-priority victim is preempted"
MSG_TOPOLOGY_UNSUPPORTED = "workload aware preemption is not supported for pod groups with scheduling constraints"
DISRUPTION_MODE_POD_GROUP = "PodGroup"


class Simulator(Protocol):
    """Runs the PodGroup algorithm on the current state without keeping its placements."""

    def placements(self) -> tuple[dict[str, int], bool]:
        """Member key -> node row for the members placed, and whether the group would succeed."""
        ...

    def count(self, rows: Sequence[int]) -> tuple[int, bool]:
        """How many members would be placed, and whether the group would succeed, after the pods on ``rows``
        changed (every row may have changed on the first call)."""
        ...


@dataclass
class Unit:
    """A victim unit: one pod, or every placed pod of a PodGroup whose disruptionMode is PodGroup."""

    pods: list[PodInfo]
    priority: int
    group_key: str | None = None  # set for a PodGroup-mode unit

    def importance(self) -> tuple[int, int, int, float, str]:
        """Most important first: higher priority, PodGroup units before pods, more pods, earlier start."""
        earliest = min(start_time(p) for p in self.pods)
        return (-self.priority, self.group_key is None, -len(self.pods), earliest, self.pods[0].key)


def group_priority(s: Scheduler, group_key: str) -> int:
    """``PodGroupPriority``: spec.priority, else the priorityClassName's value or the globalDefault (admission)."""
    spec = s.groups[group_key].pod_group.spec
    if spec is None:
        return s.priorities.resolve(None, "")
    return s.priorities.resolve(spec.priority, spec.priority_class_name)


def _disruption_mode(s: Scheduler, group_key: str | None) -> str:
    group = s.groups.get(group_key) if group_key else None
    spec = group.pod_group.spec if group is not None else None
    return (spec.disruption_mode if spec is not None else None) or "Pod"


def victim_units(s: Scheduler, own_group: str, below: int, rows: BoolArray | None = None) -> list[Unit]:
    """``newDomainForWorkloadPreemption``: placed pods of other groups as victim units of priority < ``below``.
    ``rows`` restricts units to those with a pod on these nodes (a PodGroup unit still brings all its pods)."""
    units: list[Unit] = []
    grouped: dict[str, list[PodInfo]] = {}
    for key, row in s.state.placement.items():
        if key in s.state.assumed:
            continue
        pi = s.state.pods[key]
        gk = pi.group_key
        if gk == own_group:
            continue
        if (
            gk is not None
            and gk in s.groups
            and (_disruption_mode(s, gk) == DISRUPTION_MODE_POD_GROUP or _gang_key(s, pi) is not None)
        ):
            grouped.setdefault(gk, []).append(pi)
        elif pi.priority < below and (rows is None or rows[row]):
            units.append(Unit([pi], pi.priority))
    for gk, pods in grouped.items():
        if _disruption_mode(s, gk) == DISRUPTION_MODE_POD_GROUP:
            priority = group_priority(s, gk)
        else:
            # Beyond v1.36 (gang-safe): a running gang in Pod mode goes whole or not at all, so a reprieve never
            # leaves it below minCount; v1.36 would take its members one by one.
            if not _gang_evictable(s, pods[0], below):
                continue
            priority = max(p.priority for p in pods)
        if priority >= below:
            continue
        if rows is not None and not any(rows[s.state.placement[p.key]] for p in pods):
            continue
        units.append(Unit(sorted(pods, key=lambda p: p.key), priority, gk))
    return units


@dataclass
class GroupPreemption:
    victims: list[Unit]
    nominated: dict[str, int]  # member key -> node row expected once the victims are gone
    pdb_violations: int = 0

    def cost(self) -> tuple[int, int, int, int]:
        """Lower is better: PDB violations, the highest victim priority, units evicted, pods evicted."""
        top = max((u.priority for u in self.victims), default=-(1 << 62))
        return (self.pdb_violations, top, len(self.victims), sum(len(u.pods) for u in self.victims))


def select_group_victims(s: Scheduler, units: list[Unit], sim: Simulator) -> GroupPreemption | None:
    """PodGroupEvaluator.Preempt: remove every potential victim; if the group still does not fit, evict nobody.
    Otherwise put units back, PDB-violating first and most important first, keeping each one the group (with
    no fewer members placed) still fits beside. The state is left as found."""
    state = s.state
    removed: list[tuple[PodInfo, int]] = [(p, state.placement[p.key]) for u in units for p in u.pods]
    for p, _ in removed:
        state.remove(p)
    try:
        most, ok = sim.count(range(len(state.table)))
        if not ok:
            return None
        units = sorted(units, key=Unit.importance)
        budgets = Budgets.of(s.pdbs, [*state.pods.values(), *(p for p, _ in removed)]) if s.pdbs else Budgets()
        flat = [p for u in units for p in u.pods]
        violating_pods, _ = budgets.split(flat)
        bad = {p.key for p in violating_pods}
        violating = [u for u in units if any(p.key in bad for p in u.pods)]
        fine = [u for u in units if not any(p.key in bad for p in u.pods)]
        where = {p.key: row for p, row in removed}
        victims: list[Unit] = []
        violations = 0
        for group, is_violating in ((violating, True), (fine, False)):
            for u in group:
                rows = [where[p.key] for p in u.pods]
                for p in u.pods:
                    state.add_bound(p, where[p.key])
                placed, fits = sim.count(rows)
                if not fits or placed < most:
                    for p in u.pods:
                        state.remove(p)
                    sim.count(rows)
                    victims.append(u)
                    violations += is_violating
        nominated, _ = sim.placements()
        return GroupPreemption(victims, nominated, violations)
    finally:
        for p, row in removed:
            if p.key not in state.placement:
                state.add_bound(p, row)


def group_preemption_policy_never(s: Scheduler, members: Sequence[PodInfo]) -> bool:
    """The preemptor group preempts nobody if any member's preemptionPolicy is Never."""
    return any(preemption_policy(s, pi) == NEVER for pi in members)
