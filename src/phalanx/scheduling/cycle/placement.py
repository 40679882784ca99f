"""The topology placement driver of the PodGroup cycle (TAS, spec §3.3): for a group with a topology intent, count
how much of the gang each candidate domain holds, choose a domain (v1.36 placement scores, or BestFit for the
phalanx annotations), and run the group algorithm there. The domain arithmetic is ``scheduling/placement.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phalanx.arrays import BoolArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling import placement as tas
from phalanx.scheduling.cycle.members import (
    Failed,
    GroupCycle,
    Placed,
    Rejections,
    counted_by_slots,
    default_algorithm,
    fail_all,
    forget,
    submit,
)

__all__ = ["PlacementRun", "bound_member_rows", "placement_algorithm", "placement_run"]


def bound_member_rows(c: GroupCycle) -> list[tuple[str, int]]:
    """(pod key, node row) of the group's members bound on nodes of the snapshot (they pin its domain)."""
    ctx = c.ctx
    placement = ctx.state.placement
    return sorted((k, placement[k]) for k in ctx.groups.members_of(c.group.key) if ctx.is_bound(k) and k in placement)


@dataclass
class _Evaluation:
    domain: tas.Domain
    count: int  # members that fit
    spare: int  # slots left in the domain after placing them (BestFit: smaller is tighter)
    proposed: list[PodInfo]


@dataclass
class PlacementRun:
    """What the placement algorithm did: the members placed (assumed, not yet submitted) and those that failed,
    or, when no domain holds the group, the (reason, message) every member fails with."""

    placed: Placed
    failures: Failed
    failed: tuple[str, str] | None = None
    narrowed: bool = False  # best_fit_narrowing chose part of the domain


def placement_algorithm(c: GroupCycle, intent: tas.Intent) -> Rejections:
    """Evaluate the candidate domains of each level in turn and run the cycle in the chosen one. Returns the
    rejections of the members left unscheduled."""
    run = placement_run(c, intent)
    if run.failed is not None:
        return fail_all(c, *run.failed)
    if run.narrowed:
        c.fired.add("best_fit_narrowing")
    return submit(c, run.placed, run.failures)


def placement_run(c: GroupCycle, intent: tas.Intent) -> PlacementRun:
    """The placement algorithm without submitting: the chosen domain's members stay assumed (the caller submits
    or forgets them; v1.37's workload-aware preemption runs it once on a cluster without victims)."""
    ctx, table = c.ctx, c.ctx.state.table
    bound_rows = bound_member_rows(c)
    first_message = ""
    total_domains = 0
    for key in intent.levels:
        try:
            pinned = tas.pinned_domain(table, key, bound_rows)
        except tas.PlacementError as exc:
            return PlacementRun([], [], (o.REASON_SCHEDULER_ERROR, str(exc)))
        candidates = tas.domains(table, key, pinned)
        total_domains += len(candidates)
        evaluations = _evaluate_all(c, key, candidates)
        if c.error is not None:
            return PlacementRun([], [])
        if not first_message and evaluations:
            first_message = c.unschedulable_message(evaluations[0].count)
        feasible = [e for e in evaluations if c.reached(e.count)]
        if feasible:
            chosen = _choose(c, intent, feasible)
            narrow = intent.mode != "v136" and ctx.rules.best_fit_narrowing
            within = _narrow(c, chosen) if narrow else chosen.domain.mask
            narrowed = narrow and bool((chosen.domain.mask & ~within).any())
            return PlacementRun(*default_algorithm(c, within), narrowed=narrowed)
    if intent.mode in ("preferred", "unconstrained"):
        return PlacementRun(*default_algorithm(c, None))  # no single domain holds the gang: anywhere, as a last resort
    if not first_message:
        first_message = o.MSG_GROUP_UNSCHEDULABLE if not ctx.rules.group_message_counts else "none"
    message = f"0/{total_domains} placements are available, first placement status: {first_message}"
    return PlacementRun([], [], (o.REASON_UNSCHEDULABLE, message))


def _evaluate_all(c: GroupCycle, key: str, candidates: list[tas.Domain]) -> list[_Evaluation]:
    """How many members fit in each domain: counted from slots (one vector pass for all domains) when that is
    exact, else by running the cycle in each domain."""
    table = c.ctx.state.table
    free = tas.per_domain(table, key, c.room())
    exact = counted_by_slots(c.profile, c.members, table)
    out = []
    for dom in candidates:
        room = int(free[dom.code])
        if exact:
            count = min(len(c.members), room)
            out.append(_Evaluation(dom, count, room - count, c.members[:count]))
            continue
        placed, _ = default_algorithm(c, dom.mask)
        forget(c, placed)
        if c.error is not None:
            return out  # v1.36: a member's error in one placement ends the whole algorithm
        out.append(_Evaluation(dom, len(placed), max(room - len(placed), 0), [pi for pi, _ in placed]))
    return out


def _choose(c: GroupCycle, intent: tas.Intent, feasible: list[_Evaluation]) -> _Evaluation:
    seed = c.profile.seed
    if len(feasible) == 1:
        return feasible[0]
    if intent.mode == "v136":
        scores = tas.score_v136(
            c.profile, c.ctx.state.table, [e.domain for e in feasible], [e.proposed for e in feasible], c.bound
        )
        best = [e for e, sc in zip(feasible, scores, strict=True) if sc == scores.max()]
        if len(best) > 1 and not c.ctx.rules.seeded_tie_break:
            # v1.36 breaks a tie between placements with a random number: report the tied domains.
            c.ctx.candidates(c.group.key, [e.domain.value for e in best])
        return min(best, key=lambda e: tas.tie_break(seed, e.domain))
    # BestFit: the domain the gang fills most tightly, so roomier domains stay free for larger gangs; between
    # equally tight domains, the one whose enclosing domains (rack, then block, ...) are fullest.
    parents = _parent_spare(c, feasible)
    return min(feasible, key=lambda e: (-e.count, e.spare, parents[id(e)], tas.tie_break(seed, e.domain)))


def _parent_spare(c: GroupCycle, feasible: list[_Evaluation]) -> dict[int, tuple[int, ...]]:
    """For each candidate, the free slots of its enclosing domains at every coarser configured level."""
    levels = [lvl for lvl in c.profile.topology_levels if lvl != tas.HOSTNAME]
    key = feasible[0].domain.key
    coarser = levels[: levels.index(key)][::-1] if key in levels else []
    table = c.ctx.state.table
    room = c.room() if coarser else None
    out: dict[int, tuple[int, ...]] = {}
    free_by_level = {lvl: tas.per_domain(table, lvl, room) for lvl in coarser} if room is not None else {}
    for e in feasible:
        row = int(np.flatnonzero(e.domain.mask)[0])
        spare = []
        for lvl in coarser:
            code = int(table.label(lvl).codes[row])
            spare.append(int(free_by_level[lvl][code]) if code >= 0 else 1 << 62)
        out[id(e)] = tuple(spare)
    return out


def _narrow(c: GroupCycle, chosen: _Evaluation) -> BoolArray:
    """Beyond v1.36 (``Rules.best_fit_narrowing``): inside the chosen domain, keep the gang in as few sub-domains
    of each finer level as hold it (BestFit per level, as Kueue's TAS does), instead of letting per-node scoring
    spread it."""
    within = chosen.domain.mask
    levels = [lvl for lvl in c.profile.topology_levels if lvl != tas.HOSTNAME]
    if chosen.domain.key not in levels or not counted_by_slots(c.profile, c.members, c.ctx.state.table):
        return within
    table = c.ctx.state.table
    room = c.room()
    need = chosen.count
    for key in levels[levels.index(chosen.domain.key) + 1 :]:
        free = tas.per_domain(table, key, np.where(within, room, 0))
        picked = tas.best_fit(free, need)
        if picked is None:
            break
        within = within & np.isin(table.label(key).codes, picked)
    return within
