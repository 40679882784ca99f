"""Per-pod preemption: DefaultPreemption's PostFilter (kube-scheduler v1.36 ``preemption.Evaluator``).

When a pod fits nowhere, each node whose rejection preemption could resolve is a candidate: remove every victim
unit of lower priority, check the pod fits, then put units back one by one (PDB-violating first, most important
first) keeping only those without which the pod still fits. The candidates are ranked (``candidates.rank``), the
best one's victims are evicted and the node is nominated. The caller reports the pod unschedulable; the
evictions' PodDelete event requeues it. ``VictimIndex`` does the same for every node at once when only resources
decide. A unit is one pod, or, beyond v1.36 (``Rules.disruption_mode_in_pod_preemption``), a PodGroup whose
disruptionMode is PodGroup (``units.py``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from phalanx.arrays import IntArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.diagnosis import Diagnosis
from phalanx.scheduling.framework import CycleState
from phalanx.scheduling.placement import per_node_only
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit
from phalanx.scheduling.preemption.budgets import Budgets
from phalanx.scheduling.preemption.candidates import (
    MIN_CANDIDATES_ABSOLUTE,
    MIN_CANDIDATES_PERCENT,
    Candidate,
    choosable,
    rank,
)
from phalanx.scheduling.preemption.common import (
    MSG_NO_VICTIMS,
    MSG_NOT_HELPFUL,
    MSG_POLICY_NEVER,
    NEVER,
    PREFIX,
    Held,
    importance,
    start_time,
)
from phalanx.scheduling.preemption.units import group_unit, placed_members, running_gang_member
from phalanx.scheduling.profile import Profile
from phalanx.scheduling.reasons import FailureReason, Reason

if TYPE_CHECKING:
    from phalanx.scheduling.context import CycleContext

__all__ = ["preempt_pod", "select_victims"]

_NOT_HELPFUL = Reason(MSG_NOT_HELPFUL, unresolvable=True)
_NO_VICTIMS = Reason(MSG_NO_VICTIMS, unresolvable=True)


def preempt_pod(
    ctx: CycleContext, profile: Profile, pi: PodInfo, diag: Diagnosis, fast: bool = True
) -> Candidate | None:
    """PostFilter for a pod that fits nowhere: the chosen candidate (its victims not yet evicted), or None. Writes
    the ``preemption: ...`` part of the FitError into ``diag`` when preemption cannot help. ``fast``: use the
    VictimIndex when only resources decide (tests compare it with the general path). With the seeded tie-break
    off, the candidates kube-scheduler could have chosen instead are reported (``ctx.candidates``)."""
    if ctx.preemption_policy(pi) == NEVER:
        diag.post_filter_message = PREFIX + MSG_POLICY_NEVER
        return None
    table = ctx.state.table
    n = len(table)
    potential = np.flatnonzero(profile.resolvable(pi, table, ctx.rules.dra_aware_preemption))
    report = not ctx.rules.seeded_tie_break
    if fast and _fast_path(ctx, profile, pi):
        found = ctx.victim_index.best(ctx.state, pi, potential, _fit_columns(profile, pi), report)
        if found is not None:
            _report(ctx, pi, found)
            return found
        # No candidate: the slow path below explains every node for the message.
    statuses: Counter[FailureReason] = Counter()
    statuses[_NOT_HELPFUL] = n - len(potential)
    budgets = Budgets.of(ctx.pdbs, ctx.state.pods.values()) if ctx.pdbs else Budgets()
    wanted = min(n, max(MIN_CANDIDATES_ABSOLUTE, n * MIN_CANDIDATES_PERCENT // 100))
    candidates: list[Candidate] = []
    non_violating = 0
    for row in potential:
        chosen = select_victims(ctx, profile, pi, int(row), budgets)
        if isinstance(chosen, Counter):
            statuses.update(chosen)
            continue
        candidates.append(Candidate(int(row), chosen.victims, chosen.violations, len(candidates), chosen.rules))
        non_violating += chosen.violations == 0
        if non_violating and len(candidates) >= wanted and not report:
            break
    if not candidates:
        out = Diagnosis(n)
        out.reasons = +statuses
        diag.post_filter_message = PREFIX + out.message()
        return None
    # v1.36 stops after ``wanted`` candidates found from a random offset: phalanx's pick is the best of the first
    # ones in node order, and kube-scheduler's could be any candidate that is best in some such window.
    first = _first_window(candidates, wanted)
    best = min(first, key=rank)
    if report:
        best.choices = tuple(candidates[i].row for i in choosable([rank(c)[:-1] for c in candidates], wanted))
    _report(ctx, pi, best)
    if (
        ctx.rules.dra_aware_preemption
        and pi.pod.spec.resource_claims
        and not profile.resolvable(pi, table, False)[best.row]
    ):
        best.rules.add("dra_aware_preemption")  # a candidate only because victims' devices count as freed
    for rule in sorted(best.rules):
        ctx.changed_by(rule, [pi.key, *(v.key for v in best.victims)])
    return best


def _first_window(candidates: list[Candidate], wanted: int) -> list[Candidate]:
    """The candidates v1.36 would have looked at scanning from the first node: up to ``wanted``, and on until one
    violates no PDB."""
    out: list[Candidate] = []
    clean = False
    for c in candidates:
        out.append(c)
        clean |= c.pdb_violations == 0
        if clean and len(out) >= wanted:
            break
    return out


def _report(ctx: CycleContext, pi: PodInfo, best: Candidate) -> None:
    if len(best.choices) > 1:
        names = ctx.state.table.names
        ctx.candidates(pi.key, [names[r] for r in best.choices])


def _fast_path(ctx: CycleContext, profile: Profile, pi: PodInfo) -> bool:
    """Victims can be chosen from resource vectors alone: the preemptor is judged by per-node filters only (no
    spread or inter-pod terms), has no host ports and no claims (the devices victims free are not in the
    vectors), and neither PDBs nor group-aware victim rules (PodGroup-mode units, running gangs' members kept
    first) need the general path."""
    if ctx.pdbs or pi.host_ports or pi.pod.spec.resource_claims or not per_node_only(profile, pi, ctx.state.table):
        return False
    groups, rules = ctx.groups, ctx.rules
    if not (rules.prefer_non_gang_victims or rules.disruption_mode_in_pod_preemption):
        return True
    return not any(groups.members.get(k) and k in groups for k in groups.groups)


def _fit_columns(profile: Profile, pi: PodInfo) -> tuple[IntArray, IntArray]:
    fit = next((p for p in profile.filters if isinstance(p, NodeResourcesFit)), None)
    if fit is None:
        return pi.req_cols[:0], pi.req_vals[:0]
    cols, vals = fit.checked(pi)
    keep = vals > 0
    return cols[keep], vals[keep]


@dataclass
class _Unit:
    """Pods that are victims together on one node: one pod, or a PodGroup-mode group's pods there (the group's
    pods elsewhere go with them)."""

    pods: list[PodInfo]
    priority: int
    group_key: str | None
    gang_member: bool

    def key(self, gang_first: bool) -> tuple[bool, int, float, str]:
        """Reprieve order: (beyond v1.36) running gangs' members first, then ``MoreImportantPod``."""
        return (gang_first and not self.gang_member, -self.priority, min(map(start_time, self.pods)), self.pods[0].key)


@dataclass
class Victims:
    victims: list[PodInfo]  # most important first
    violations: int
    rules: set[str]  # beyond-v1.36 rules that changed them


def _units_on(ctx: CycleContext, pi: PodInfo, row: int) -> list[_Unit]:
    """The victim units with a pod on ``row`` and lower priority than ``pi``."""
    state = ctx.state
    by_group = ctx.rules.disruption_mode_in_pod_preemption
    units: list[_Unit] = []
    grouped: dict[str, list[PodInfo]] = {}
    for v in state.node_pods[row].values():
        if v.key in state.assumed:
            continue
        gk = group_unit(ctx, v) if by_group else None
        if gk is not None:
            grouped.setdefault(gk, []).append(v)
        elif v.priority < pi.priority:
            units.append(_Unit([v], v.priority, None, running_gang_member(ctx, v)))
    for gk, pods in grouped.items():
        priority = ctx.groups.unit_priority(gk)
        if priority < pi.priority:
            units.append(_Unit(sorted(pods, key=lambda p: p.key), priority, gk, running_gang_member(ctx, pods[0])))
    return units


def select_victims(
    ctx: CycleContext, profile: Profile, pi: PodInfo, row: int, budgets: Budgets
) -> Victims | Counter[FailureReason]:
    """``SelectVictimsOnNode``: the fewest, least important lower-priority units on ``row`` whose removal lets
    ``pi`` fit, and how many of them violate a PDB; or the node's rejection reasons. A PodGroup-mode unit brings
    its pods on other nodes into the victims. The state is left as found."""
    state, table = ctx.state, ctx.state.table
    units = _units_on(ctx, pi, row)
    if not units:
        return Counter({_NO_VICTIMS: 1})
    held = Held(ctx.state, ctx.claims, ctx.rules.dra_aware_preemption)
    lower = [p for u in units for p in u.pods]
    for v in lower:
        held.remove(v)
    try:
        rejecting = profile.rejecting_filter(pi, table, row)
        if rejecting is not None:
            return rejecting.reasons(CycleState(), pi, table, np.array([row], dtype=np.intp))
        chosen, violations = _reprieve(profile, pi, row, units, budgets, held, ctx.rules.prefer_non_gang_victims)
        fired: set[str] = set()
        if ctx.rules.prefer_non_gang_victims and any(u.gang_member for u in units):
            # Whether keeping gangs' members first changed the victims: the v1.36 order, for comparison.
            plain, _ = _reprieve(profile, pi, row, units, budgets, held, False)
            if {id(u) for u in plain} != {id(u) for u in chosen}:
                fired.add("prefer_non_gang_victims")
        victims: list[PodInfo] = []
        for u in chosen:
            victims += u.pods
            if u.group_key is not None:  # its pods elsewhere go too (those on ``row`` are removed just now)
                victims += placed_members(ctx, u.group_key)
            if u.group_key is not None:
                fired.add("disruption_mode_in_pod_preemption")
        victims = sorted({v.key: v for v in victims}.values(), key=importance)
        return Victims(victims, violations, fired)
    finally:
        for v in lower:
            if v.key not in state.placement:
                held.add(v, row)


def _reprieve(
    profile: Profile, pi: PodInfo, row: int, units: list[_Unit], budgets: Budgets, held: Held, gang_first: bool
) -> tuple[list[_Unit], int]:
    """With every unit removed (and ``pi`` fitting), put units back, PDB-violating first, each class in reprieve
    order, keeping those ``pi`` still fits beside. Returns the victims and their PDB violations; every unit is
    removed again on return."""
    table = held.state.table
    order = sorted(units, key=lambda u: u.key(gang_first))
    violating_pods, _ = budgets.split([p for u in order for p in u.pods])
    bad = {p.key for p in violating_pods}
    classes = (
        [u for u in order if any(p.key in bad for p in u.pods)],
        [u for u in order if all(p.key not in bad for p in u.pods)],
    )
    victims: list[_Unit] = []
    violations = 0
    back: list[_Unit] = []
    for group, is_violating in zip(classes, (True, False), strict=True):
        for u in group:
            for v in u.pods:
                held.add(v, row)
            if profile.rejecting_filter(pi, table, row) is not None:
                for v in u.pods:
                    held.remove(v)
                victims.append(u)
                violations += is_violating
            else:
                back.append(u)
    for u in back:
        for v in u.pods:
            held.remove(v)
    return victims, violations
