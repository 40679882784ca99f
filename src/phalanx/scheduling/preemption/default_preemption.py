"""Per-pod preemption: DefaultPreemption's PostFilter (kube-scheduler v1.36 ``preemption.Evaluator``).

When a pod fits nowhere, each node whose rejection preemption could resolve is a candidate: remove every pod of
lower priority, check the pod fits, then put victims back one by one (PDB-violating first, most important first)
keeping only those without which the pod still fits. The candidates are ranked (``candidates.rank``), the best
one's victims are evicted and the node is nominated. The caller reports the pod unschedulable; the evictions'
PodDelete event requeues it. ``VictimIndex`` does the same for every node at once when only resources decide."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from phalanx.arrays import IntArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.diagnosis import Diagnosis
from phalanx.scheduling.framework import CycleState
from phalanx.scheduling.placement import per_node_only
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit
from phalanx.scheduling.preemption.budgets import Budgets
from phalanx.scheduling.preemption.candidates import MIN_CANDIDATES_ABSOLUTE, MIN_CANDIDATES_PERCENT, Candidate, rank
from phalanx.scheduling.preemption.common import (
    MSG_NO_VICTIMS,
    MSG_NOT_HELPFUL,
    MSG_POLICY_NEVER,
    NEVER,
    PREFIX,
    Held,
    importance,
)
from phalanx.scheduling.preemption.gangs import complete_gangs, evictable_gang
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
    VictimIndex when only resources decide (tests compare it with the general path)."""
    if ctx.preemption_policy(pi) == NEVER:
        diag.post_filter_message = PREFIX + MSG_POLICY_NEVER
        return None
    table = ctx.state.table
    n = len(table)
    potential = np.flatnonzero(profile.resolvable(pi, table, ctx.rules.dra_aware_preemption))
    if fast and _fast_path(ctx, profile, pi):
        found = ctx.victim_index.best(ctx.state, pi, potential, _fit_columns(profile, pi))
        if found is not None:
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
        victims, violations = chosen
        candidates.append(Candidate(int(row), victims, violations, len(candidates)))
        non_violating += violations == 0
        if non_violating and len(candidates) >= wanted:
            break
    if not candidates:
        out = Diagnosis(n)
        out.reasons = +statuses
        diag.post_filter_message = PREFIX + out.message()
        return None
    return min(candidates, key=rank)


def _fast_path(ctx: CycleContext, profile: Profile, pi: PodInfo) -> bool:
    """Victims can be chosen from resource vectors alone: the preemptor is judged by per-node filters only (no
    spread or inter-pod terms), has no host ports and no claims (the devices victims free are not in the
    vectors), and neither PDBs nor running gangs need the general path."""
    if ctx.pdbs or pi.host_ports or pi.pod.spec.resource_claims or not per_node_only(profile, pi, ctx.state.table):
        return False
    groups = ctx.groups
    return not any(g.min_count is not None and groups.members.get(k) for k, g in groups.groups.items())


def _fit_columns(profile: Profile, pi: PodInfo) -> tuple[IntArray, IntArray]:
    fit = next((p for p in profile.filters if isinstance(p, NodeResourcesFit)), None)
    if fit is None:
        return pi.req_cols[:0], pi.req_vals[:0]
    cols, vals = fit.checked(pi)
    keep = vals > 0
    return cols[keep], vals[keep]


def select_victims(
    ctx: CycleContext, profile: Profile, pi: PodInfo, row: int, budgets: Budgets
) -> tuple[list[PodInfo], int] | Counter[FailureReason]:
    """``SelectVictimsOnNode``: the fewest, least important lower-priority pods on ``row`` whose removal lets
    ``pi`` fit, and how many of them violate a PDB; or the node's rejection reasons. The state is left as found."""
    state, table = ctx.state, ctx.state.table
    lower = [
        v
        for v in state.node_pods[row].values()
        if v.priority < pi.priority and v.key not in state.assumed and evictable_gang(ctx, pi, v)
    ]
    if not lower:
        return Counter({_NO_VICTIMS: 1})
    held = Held(ctx.state, ctx.claims, ctx.rules.dra_aware_preemption)
    for v in lower:
        held.remove(v)
    try:
        rejecting = profile.rejecting_filter(pi, table, row)
        if rejecting is not None:
            return rejecting.reasons(CycleState(), pi, table, np.array([row], dtype=np.intp))
        # Beyond v1.36 (gang-safe): members of running gangs are reprieved first within each PDB class, so
        # other pods are preferred as victims.
        gang_first = ctx.rules.gang_safe_eviction
        lower.sort(key=lambda v: (gang_first and ctx.groups.gang_key(v) is None, *importance(v)))
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
        victims = complete_gangs(ctx, victims)
        victims.sort(key=importance)
        return victims, violations
    finally:
        for v in lower:
            if v.key not in state.placement:
                held.add(v, row)
