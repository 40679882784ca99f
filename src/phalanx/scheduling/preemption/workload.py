"""Workload-aware preemption (spec §4.3), called from the PodGroup cycle's preemption driver: victim units (a pod,
or a whole PodGroup-mode group), all removed, then reprieved most important first while the group still fits
(``select_group_victims``). docs/preemption.md lists where phalanx goes beyond v1.36."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from phalanx.arrays import BoolArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.groups import DISRUPTION_MODE_POD_GROUP
from phalanx.scheduling.preemption.budgets import Budgets
from phalanx.scheduling.preemption.common import NEVER, Held, start_time
from phalanx.scheduling.preemption.units import running_gang_member
from phalanx.scheduling.ties import seeded_hash

if TYPE_CHECKING:
    from phalanx.scheduling.context import CycleContext

__all__ = [
    "GroupPreemption",
    "Simulator",
    "Unit",
    "any_victims",
    "group_preemption_policy_never",
    "reprieve_on_fixed_nodes",
    "select_group_victims",
    "victim_units",
]


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
    in_group: bool = False  # its pods name a PodGroup (v1.36's ``IsPodGroup``), whatever its disruptionMode
    gang_member: bool = False  # beyond v1.36: a member of a running gang, reprieved before other pods

    def importance(self) -> tuple[int, bool, bool, int, float, str]:
        """``moreImportantVictim``, most important first: higher priority, units of PodGroups before other pods
        (then, beyond v1.36, running gangs' members before other group pods), more pods, earlier start."""
        earliest = min(start_time(p) for p in self.pods)
        return (-self.priority, not self.in_group, not self.gang_member, -len(self.pods), earliest, self.pods[0].key)


def victim_units(ctx: CycleContext, own_group: str, below: int, rows: BoolArray | None = None) -> list[Unit]:
    """``newDomainForWorkloadPreemption``: placed pods of other groups as victim units of priority < ``below``: a
    PodGroup-mode group is one unit with the PodGroup's priority, any other pod (a Pod-mode gang's members too)
    its own unit with its own priority. ``rows`` restricts units to those with a pod on these nodes (a PodGroup
    unit still brings all its pods)."""
    units: list[Unit] = []
    grouped: dict[str, list[PodInfo]] = {}
    groups, state = ctx.groups, ctx.state
    for key, row in state.placement.items():
        if key in state.assumed:
            continue
        pi = state.pods[key]
        gk = pi.group_key
        if gk == own_group:
            continue
        unit = groups.victim_unit(gk)
        if unit is not None:
            grouped.setdefault(unit, []).append(pi)
        elif pi.priority < below and (rows is None or rows[row]):
            units.append(Unit([pi], pi.priority, None, gk is not None, running_gang_member(ctx, pi)))
    for gk, pods in grouped.items():
        priority = groups.unit_priority(gk)
        if priority >= below:
            continue
        if rows is not None and not any(rows[state.placement[p.key]] for p in pods):
            continue
        units.append(Unit(sorted(pods, key=lambda p: p.key), priority, gk, True, running_gang_member(ctx, pods[0])))
    return units


@dataclass
class GroupPreemption:
    victims: list[Unit]
    nominated: dict[str, int]  # member key -> node row expected once the victims are gone
    pdb_violations: int = 0
    rules: set[str] = field(default_factory=set)  # beyond-v1.36 rules that changed the victims

    def cost(self) -> tuple[int, int, int, int]:
        """Lower is better: PDB violations, the highest victim priority, units evicted, pods evicted."""
        top = max((u.priority for u in self.victims), default=-(1 << 62))
        return (self.pdb_violations, top, len(self.victims), sum(len(u.pods) for u in self.victims))


def select_group_victims(ctx: CycleContext, units: list[Unit], sim: Simulator) -> GroupPreemption | None:
    """PodGroupEvaluator.Preempt: remove every potential victim; if the group still does not fit, evict nobody.
    Otherwise put units back, PDB-violating first and most important first, keeping each one the group still
    fits beside (beyond v1.36, ``Rules.reprieve_keeps_placed_members``: with no fewer members placed than with
    every victim gone). The state is left as found."""
    with _all_removed(ctx, units) as (held, where):
        most, ok = sim.count(range(len(ctx.state.table)))
        if not ok:
            return None
        violating, fine = _reprieve_order(ctx, units)
        victims: list[Unit] = []
        violations = 0
        fired: set[str] = set()
        keep_placed = ctx.rules.reprieve_keeps_placed_members
        for group, is_violating in ((violating, True), (fine, False)):
            for u in group:
                rows = [where[p.key] for p in u.pods]
                for p in u.pods:
                    held.add(p, where[p.key])
                placed, fits = sim.count(rows)
                if not fits or (keep_placed and placed < most):
                    if fits:
                        fired.add("reprieve_keeps_placed_members")
                    for p in u.pods:
                        held.remove(p)
                    sim.count(rows)
                    victims.append(u)
                    violations += is_violating
        nominated, _ = sim.placements()
        if held.devices and any(ctx.claims.held.get(p.key) for u in victims for p in u.pods):
            fired.add("dra_aware_preemption")  # victims' devices counted as freed
        if _gang_order_mattered(units, victims):
            fired.add("prefer_non_gang_victims")
        return GroupPreemption(victims, nominated, violations, fired)


def reprieve_on_fixed_nodes(
    ctx: CycleContext,
    units: list[Unit],
    run: Callable[[], tuple[list[tuple[PodInfo, int]], bool]],
    fits: Callable[[PodInfo, int], bool],
    per_node: Callable[[PodInfo], bool],
) -> GroupPreemption | None:
    """v1.37's PodGroupEvaluator (``Release.wap_single_run``): remove every potential victim and ``run`` the group
    algorithm once (it leaves nothing assumed); if the group does not fit, evict nobody. Otherwise put units back,
    PDB-violating first and most important first, keeping each one beside which every member ``run`` placed, in
    cycle order with the earlier ones assumed, still ``fits`` on the node that run chose. The members are
    nominated to those nodes. The state is left as found."""
    with _all_removed(ctx, units) as (held, where):
        assignments, ok = run()
        if not ok:
            return None
        violating, fine = _reprieve_order(ctx, units)
        victims: list[Unit] = []
        violations = 0
        # per_node: whether every filter that applies to a member judges each node by itself
        # (placement.per_node_only), asked with the victims out; victims with pod (anti-)affinity terms of their
        # own would change that when put back.
        local = not any(p.affinity_key is not None for u in units for p in u.pods) and all(
            per_node(pi) for pi, _ in assignments
        )
        for group, is_violating in ((violating, True), (fine, False)):
            for u in group:
                for p in u.pods:
                    held.add(p, where[p.key])
                # Putting u back changes only u's nodes: where every filter involved is node-local, the members
                # elsewhere still fit (they did before), so only those on u's nodes are checked again.
                rows = {where[p.key] for p in u.pods}
                checked = [(pi, row) for pi, row in assignments if row in rows] if local else assignments
                if not _all_fit(ctx, checked, fits):
                    for p in u.pods:
                        held.remove(p)
                    victims.append(u)
                    violations += is_violating
        return GroupPreemption(victims, {pi.key: row for pi, row in assignments}, violations)


def _all_fit(ctx: CycleContext, assignments: list[tuple[PodInfo, int]], fits: Callable[[PodInfo, int], bool]) -> bool:
    """Whether each member passes Filter on its node with the members before it assumed (then forgotten)."""
    reserved: list[PodInfo] = []
    try:
        for pi, row in assignments:
            if not fits(pi, row) or not ctx.reserve(pi, row).ok:
                return False
            reserved.append(pi)
        return True
    finally:
        for pi in reversed(reserved):
            ctx.unreserve(pi)


@contextmanager
def _all_removed(ctx: CycleContext, units: list[Unit]) -> Iterator[tuple[Held, dict[str, int]]]:
    """Every potential victim removed for the what-if, with (pod key -> node row) of each; whatever is still out at
    the end is put back, so the state is left as found."""
    state = ctx.state
    where = {p.key: state.placement[p.key] for u in units for p in u.pods}
    held = Held(ctx.state, ctx.claims, ctx.rules.dra_aware_preemption)
    for u in units:
        for p in u.pods:
            held.remove(p)
    try:
        yield held, where
    finally:
        for u in units:
            for p in u.pods:
                if p.key not in state.placement:
                    held.add(p, where[p.key])


def _reprieve_order(ctx: CycleContext, units: list[Unit]) -> tuple[list[Unit], list[Unit]]:
    """The units in reprieve order, most important first: those whose eviction would violate a PDB, then the rest.
    Units alike in importance (priority, kind, size, start time) come in kube-scheduler's map order, which is
    random (``newDomainForWorkloadPreemption`` collects them from a map): seed 0 takes them by name, another seed
    in a seeded order, so the seeds show where that order decides the victims."""
    units = sorted(units, key=lambda u: _tie_break(ctx.seed, u))
    removed = [p for u in units for p in u.pods]
    budgets = Budgets.of(ctx.pdbs, [*ctx.state.pods.values(), *removed]) if ctx.pdbs else Budgets()
    violating_pods, _ = budgets.split([p for u in units for p in u.pods])
    bad = {p.key for p in violating_pods}
    return [u for u in units if any(p.key in bad for p in u.pods)], [
        u for u in units if not any(p.key in bad for p in u.pods)
    ]


def _tie_break(seed: int, unit: Unit) -> tuple[object, ...]:
    key = unit.importance()
    if not seed:
        return key
    return (*key[:-1], seeded_hash(seed, key[-1]))


def _gang_order_mattered(units: Sequence[Unit], victims: Sequence[Unit]) -> bool:
    """A running gang's member was reprieved while a unit v1.36 ranks alike (same priority, same kind) went:
    the gang-first tie-break may have chosen between them."""
    chosen = {id(u) for u in victims}
    kept = {(u.priority, u.in_group) for u in units if u.gang_member and id(u) not in chosen}
    return any((v.priority, v.in_group) in kept for v in victims if not v.gang_member)


def any_victims(ctx: CycleContext, own_group: str, below: int) -> bool:
    """Whether some placed pod, or some other PodGroup-mode group, has lower priority than ``below``."""
    if ctx.victim_index.lowest(ctx.state) < below:
        return True
    groups = ctx.groups
    return any(
        gk != own_group
        and groups.disruption_mode(gk) == DISRUPTION_MODE_POD_GROUP
        and groups.priority(gk) < below
        and any(k in ctx.state.placement for k in groups.members_of(gk))
        for gk in groups.groups
    )


def group_preemption_policy_never(ctx: CycleContext, members: Sequence[PodInfo]) -> bool:
    """The preemptor group preempts nobody if any member's preemptionPolicy is Never."""
    return any(ctx.preemption_policy(pi) == NEVER for pi in members)
