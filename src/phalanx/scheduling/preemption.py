"""Per-pod preemption: DefaultPreemption's PostFilter (kube-scheduler v1.36 ``preemption.Evaluator``).

When a pod fits nowhere, each node whose rejection preemption could resolve is a candidate: remove every pod of
lower priority, check the pod fits, then put victims back one by one (PDB-violating first, most important first)
keeping only those without which the pod still fits. The candidates are ranked (fewest PDB violations, lowest
highest-victim priority, smallest priority sum, fewest victims, latest start), the best one's victims are evicted
and the node is nominated. The caller reports the pod unschedulable; the evictions' PodDelete event requeues it.
``VictimIndex`` does the same for every node at once with numpy when only resources decide.

Workload-aware preemption (spec §4.3, called from the PodGroup cycle): victim units (a pod, or a whole
PodGroup-mode group), all removed, then reprieved most important first while the group still fits
(``select_group_victims``). docs/preemption.md lists where phalanx goes beyond v1.36.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from phalanx.api.models import PodDisruptionBudget
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.dra.claims import Suspension
from phalanx.scheduling.diagnosis import Diagnosis
from phalanx.scheduling.framework import BoolArray, CycleState, IntArray
from phalanx.scheduling.placement import per_node_only
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit
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
    "VictimIndex",
    "any_victims",
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
_NO_POD = np.iinfo(np.int64).max  # padding in VictimIndex: never of lower priority
_VERDICT_SHAPES = 64  # preemptor (priority, shape) verdicts kept by VictimIndex
_NO_VICTIM = -(1 << 62)  # the highest victim priority of a candidate without victims (ranks first)


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
    if _fast_path(s, profile, pi):
        fast = s.victim_index.best(s, pi, potential, _fit_columns(profile, pi))
        if fast is not None:
            return fast
        # No candidate: the slow path below explains every node for the message.
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


def _fast_path(s: Scheduler, profile: Profile, pi: PodInfo) -> bool:
    """Victims can be chosen from resource vectors alone: the preemptor is judged by per-node filters only (no
    spread or inter-pod terms), has no host ports and no claims (the devices victims free are not in the
    vectors), and neither PDBs nor running gangs need the general path."""
    if s.pdbs or pi.host_ports or pi.pod.spec.resource_claims or not per_node_only(profile, pi, s.state.table):
        return False
    return not any(g.min_count is not None and s.members.get(k) for k, g in s.groups.items())


def _fit_columns(profile: Profile, pi: PodInfo) -> tuple[IntArray, IntArray]:
    fit = next((p for p in profile.filters if isinstance(p, NodeResourcesFit)), None)
    if fit is None:
        return pi.req_cols[:0], pi.req_vals[:0]
    cols, vals = fit.checked(pi)
    keep = vals > 0
    return cols[keep], vals[keep]


class VictimIndex:
    """Per node, its placed pods in importance order (most important first) as padded arrays: priority, start
    time and requests over the table's resource columns. Rows are refreshed from the table's change log, so a
    preemption costs vector operations over the candidate nodes instead of Python work per pod."""

    def __init__(self) -> None:
        self.table: NodeTable | None = None
        self.base = -1
        self.pos = 0
        self.width = 0
        self.filled = 0  # the most pods any row holds: columns beyond it are padding everywhere
        self.priority = np.zeros((0, 0), dtype=np.int64)
        self.start = np.zeros((0, 0), dtype=np.float64)
        self.requests = np.zeros((0, 0, 0), dtype=np.int64)
        self.keys: list[list[str]] = []
        self.verdicts: dict[tuple[int, bytes], _Verdicts] = {}

    def _sync(self, s: Scheduler) -> None:
        t = s.state.table
        n, r = len(t), t.requested.shape[1]
        stale = self.table is not t or self.base != t.changes_base or self.requests.shape[::2] != (n, r)
        if stale:
            self.table, self.base, self.pos = t, t.changes_base, len(t.changes)
            self.width = max((len(p) for p in s.state.node_pods), default=0) or 1
            self.filled = 0
            self.verdicts.clear()
            self._alloc(n, r)
            rows: Iterable[int] = range(n)
        else:
            rows = sorted(set(t.changes[self.pos :]))
            self.pos = len(t.changes)
        for row in rows:
            self._fill(s, row)

    def _alloc(self, n: int, r: int) -> None:
        self.priority = np.full((n, self.width), _NO_POD, dtype=np.int64)
        self.start = np.zeros((n, self.width), dtype=np.float64)
        self.requests = np.zeros((n, self.width, r), dtype=np.int64)
        self.keys = [[] for _ in range(n)]

    def _fill(self, s: Scheduler, row: int) -> None:
        pods = sorted((p for p in s.state.node_pods[row].values() if p.key not in s.state.assumed), key=importance)
        if len(pods) > self.width:
            old = (self.priority, self.start, self.requests, self.keys)
            n, r = self.priority.shape[0], self.requests.shape[2]
            w = self.width
            self.width = len(pods) * 2
            self._alloc(n, r)
            self.priority[:, :w], self.start[:, :w], self.requests[:, :w], self.keys = old
        self.priority[row] = _NO_POD
        self.start[row] = 0.0
        self.requests[row] = 0
        for k, p in enumerate(pods):
            self.priority[row, k] = p.priority
            self.start[row, k] = start_time(p)
            self.requests[row, k, p.req_cols] = p.req_vals
        self.keys[row] = [p.key for p in pods]
        self.filled = max(self.filled, len(pods))

    def lowest(self, s: Scheduler) -> int:
        """The lowest priority of any placed pod (a cheap test before looking for victims)."""
        self._sync(s)
        return int(self.priority.min()) if self.priority.size else int(_NO_POD)

    def best(self, s: Scheduler, pi: PodInfo, potential: IntArray, fit: tuple[IntArray, IntArray]) -> Candidate | None:
        """``select_victims`` on every candidate node at once, then ``_rank``: the same choice as the general
        path for the pods ``_fast_path`` admits. Candidates are taken in node order until as many are found as
        v1.36 evaluates (``max(100, 10%)`` of the nodes). Per-row verdicts are kept per preemptor priority and
        shape and recomputed only for rows changed since, so a stream of alike preemptors costs little."""
        self._sync(s)
        t = s.state.table
        n = len(t)
        wanted = min(n, max(_MIN_CANDIDATES_ABSOLUTE, n * _MIN_CANDIDATES_PERCENT // 100))
        key = (pi.priority, pi.shape)
        entry = self.verdicts.get(key)
        if entry is None or entry.pos > len(t.changes) or entry.victims.shape != (n, self.filled):
            entry = _Verdicts.empty(n, self.filled, len(t.changes))
            entry.update(self, t, pi, fit, np.arange(n, dtype=np.intp))
            self.verdicts[key] = entry
            if len(self.verdicts) > _VERDICT_SHAPES:
                self.verdicts.pop(next(iter(self.verdicts)))
        elif entry.pos < len(t.changes):
            dirty = np.unique(np.asarray(t.changes[entry.pos :], dtype=np.intp))
            entry.update(self, t, pi, fit, dirty)
            entry.pos = len(t.changes)
        rows = potential[entry.ok[potential]][:wanted]
        if not len(rows):
            return None
        # _rank: lowest highest-victim priority, smallest sum, fewest victims, latest start, first found.
        order = np.lexsort(
            (np.arange(len(rows)), -entry.earliest[rows], entry.count[rows], entry.total[rows], entry.top[rows])
        )
        first = int(order[0])
        row = int(rows[first])
        pods = [s.state.pods[self.keys[row][k]] for k in np.flatnonzero(entry.victims[row])]
        return Candidate(row, pods, 0, first)


@dataclass
class _Verdicts:
    """Per node, for one preemptor priority and shape: whether evictions make it fit, its victims (slots of the
    VictimIndex row) and the ranking inputs of ``_rank``."""

    ok: npt.NDArray[np.bool_]
    victims: npt.NDArray[np.bool_]
    top: IntArray
    total: IntArray
    count: IntArray
    earliest: npt.NDArray[np.float64]
    pos: int

    @classmethod
    def empty(cls, n: int, w: int, pos: int) -> _Verdicts:
        return cls(
            np.zeros(n, dtype=bool),
            np.zeros((n, w), dtype=bool),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.float64),
            pos,
        )

    def update(
        self, index: VictimIndex, t: NodeTable, pi: PodInfo, fit: tuple[IntArray, IntArray], rows: IntArray
    ) -> None:
        """Recompute ``rows``: remove every lower-priority pod, then put them back most important first while the
        preemptor still fits (resources and pod count: ``_fast_path`` guarantees nothing else decides)."""
        cols, vals = fit
        w = index.filled
        if w == 0:  # no pod on any node: nothing to evict
            self.ok[rows] = False
            return
        prio = index.priority[rows][:, :w]
        lower = prio < pi.priority  # [m, w]; padding is never lower
        req = index.requests[rows][:, :w][:, :, cols]  # [m, w, c]
        used = t.requested[rows][:, cols] - (req * lower[:, :, None]).sum(axis=1)
        count = t.pod_count[rows] - lower.sum(axis=1)
        room = t.allocatable[rows][:, cols]
        limit = t.max_pods[rows]
        ok = (used + vals <= room).all(axis=1) & (count + 1 <= limit) & lower.any(axis=1)
        victims: npt.NDArray[np.bool_] = np.zeros(lower.shape, dtype=bool)
        for k in range(w):
            take = lower[:, k] & ok
            if not take.any():
                continue
            trial = used + req[:, k]
            back = take & (trial + vals <= room).all(axis=1) & (count + 2 <= limit)
            used = np.where(back[:, None], trial, used)
            count = count + back
            victims[:, k] = take & ~back
        top = np.where(victims, prio, _NO_VICTIM).max(axis=1)
        at_top = victims & (prio == top[:, None])
        earliest = np.where(at_top, index.start[rows][:, :w], np.inf).min(axis=1)
        self.ok[rows] = ok
        self.victims[rows] = victims
        self.top[rows] = top
        self.total[rows] = np.where(victims, prio + _PRIORITY_OFFSET, 0).sum(axis=1)
        self.count[rows] = victims.sum(axis=1)
        self.earliest[rows] = np.where(np.isinf(earliest), 0.0, earliest)


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
    held = _Held(s)
    for v in lower:
        held.remove(v)
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
                held.add(v, row)
                if profile.rejecting_filter(pi, table, row) is not None:
                    held.remove(v)
                    victims.append(v)
                    violations += is_violating
        victims = _whole_gangs(s, victims)
        victims.sort(key=importance)
        return victims, violations
    finally:
        for v in lower:
            if v.key not in state.placement:
                held.add(v, row)


class _Held:
    """Removes placed pods for a what-if and puts them back: their node usage, and (beyond v1.36, where
    DynamicResources does not model victim removal) their claims, so a victim's devices count as freed."""

    def __init__(self, s: Scheduler) -> None:
        self.s = s
        self.tokens: dict[str, Suspension] = {}

    def remove(self, pi: PodInfo) -> None:
        self.s.state.remove(pi)
        self.tokens[pi.key] = self.s.claims.suspend(pi)

    def add(self, pi: PodInfo, row: int) -> None:
        self.s.state.add_bound(pi, row)
        self.s.claims.resume(self.tokens.pop(pi.key))


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
    held = _Held(s)
    for p, _ in removed:
        held.remove(p)
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
                    held.add(p, where[p.key])
                placed, fits = sim.count(rows)
                if not fits or placed < most:
                    for p in u.pods:
                        held.remove(p)
                    sim.count(rows)
                    victims.append(u)
                    violations += is_violating
        nominated, _ = sim.placements()
        return GroupPreemption(victims, nominated, violations)
    finally:
        for p, row in removed:
            if p.key not in state.placement:
                held.add(p, row)


def any_victims(s: Scheduler, own_group: str, below: int) -> bool:
    """Whether some placed pod, or some other PodGroup-mode group, has lower priority than ``below``."""
    if s.victim_index.lowest(s) < below:
        return True
    return any(
        gk != own_group
        and _disruption_mode(s, gk) == DISRUPTION_MODE_POD_GROUP
        and group_priority(s, gk) < below
        and any(k in s.state.placement for k in s.members.get(gk, ()))
        for gk in s.groups
    )


def group_preemption_policy_never(s: Scheduler, members: Sequence[PodInfo]) -> bool:
    """The preemptor group preempts nobody if any member's preemptionPolicy is Never."""
    return any(preemption_policy(s, pi) == NEVER for pi in members)
