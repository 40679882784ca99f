"""Workload-aware preemption (spec §4.3), called from the PodGroup cycle's preemption driver: victim units (a pod,
or a whole PodGroup-mode group), all removed, then reprieved most important first while the group still fits
(``select_group_victims``). docs/preemption.md lists where phalanx goes beyond v1.36."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from phalanx.arrays import BoolArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.groups import DISRUPTION_MODE_POD_GROUP
from phalanx.scheduling.preemption.budgets import Budgets
from phalanx.scheduling.preemption.common import NEVER, Held, start_time
from phalanx.scheduling.preemption.gangs import gang_evictable

if TYPE_CHECKING:
    from phalanx.scheduling.context import CycleContext

__all__ = [
    "GroupPreemption",
    "Simulator",
    "Unit",
    "any_victims",
    "group_preemption_policy_never",
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

    def importance(self) -> tuple[int, int, int, float, str]:
        """Most important first: higher priority, PodGroup units before pods, more pods, earlier start."""
        earliest = min(start_time(p) for p in self.pods)
        return (-self.priority, self.group_key is None, -len(self.pods), earliest, self.pods[0].key)


def victim_units(ctx: CycleContext, own_group: str, below: int, rows: BoolArray | None = None) -> list[Unit]:
    """``newDomainForWorkloadPreemption``: placed pods of other groups as victim units of priority < ``below``.
    ``rows`` restricts units to those with a pod on these nodes (a PodGroup unit still brings all its pods)."""
    units: list[Unit] = []
    grouped: dict[str, list[PodInfo]] = {}
    groups, state = ctx.groups, ctx.state
    gang_safe = ctx.rules.gang_safe_eviction
    for key, row in state.placement.items():
        if key in state.assumed:
            continue
        pi = state.pods[key]
        gk = pi.group_key
        if gk == own_group:
            continue
        if (
            gk is not None
            and gk in groups
            and (
                groups.disruption_mode(gk) == DISRUPTION_MODE_POD_GROUP
                or (gang_safe and groups.gang_key(pi) is not None)
            )
        ):
            grouped.setdefault(gk, []).append(pi)
        elif pi.priority < below and (rows is None or rows[row]):
            units.append(Unit([pi], pi.priority))
    for gk, pods in grouped.items():
        if groups.disruption_mode(gk) == DISRUPTION_MODE_POD_GROUP:
            priority = groups.priority(gk)
        else:
            # Beyond v1.36 (gang-safe): a running gang in Pod mode goes whole or not at all, so a reprieve never
            # leaves it below minCount; v1.36 would take its members one by one.
            if not gang_evictable(ctx, pods[0], below):
                continue
            priority = max(p.priority for p in pods)
        if priority >= below:
            continue
        if rows is not None and not any(rows[state.placement[p.key]] for p in pods):
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


def select_group_victims(ctx: CycleContext, units: list[Unit], sim: Simulator) -> GroupPreemption | None:
    """PodGroupEvaluator.Preempt: remove every potential victim; if the group still does not fit, evict nobody.
    Otherwise put units back, PDB-violating first and most important first, keeping each one the group (with
    no fewer members placed) still fits beside. The state is left as found."""
    state = ctx.state
    removed: list[tuple[PodInfo, int]] = [(p, state.placement[p.key]) for u in units for p in u.pods]
    held = Held(ctx.state, ctx.claims, ctx.rules.dra_aware_preemption)
    for p, _ in removed:
        held.remove(p)
    try:
        most, ok = sim.count(range(len(state.table)))
        if not ok:
            return None
        units = sorted(units, key=Unit.importance)
        budgets = Budgets.of(ctx.pdbs, [*state.pods.values(), *(p for p, _ in removed)]) if ctx.pdbs else Budgets()
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
