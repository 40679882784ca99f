"""The group-preemption driver of the PodGroup cycle: workload-aware preemption (spec §4.3) for a group that did not
fit, on the whole cluster or, beyond v1.36 (``Rules.topology_aware_preemption``), in each candidate domain of its
topology intent, keeping the domain whose victims cost least. The victim search is
``scheduling/preemption/workload.py``; the what-if runs of the group algorithm are the simulators below."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from phalanx.arrays import BoolArray, IntArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling import placement as tas
from phalanx.scheduling.context import Preemptor
from phalanx.scheduling.cycle.members import (
    GroupCycle,
    Rejections,
    counted_by_slots,
    default_algorithm,
    forget,
    passes_filters,
)
from phalanx.scheduling.cycle.placement import bound_member_rows, placement_run
from phalanx.scheduling.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit
from phalanx.scheduling.preemption.workload import (
    GroupPreemption,
    any_victims,
    group_preemption_policy_never,
    reprieve_on_fixed_nodes,
    select_group_victims,
    victim_units,
)

__all__ = ["preempt_group"]

_WAITS_FOR_VICTIMS = frozenset({DEFAULT_PREEMPTION})
# v1.36's workload-aware preemption verdicts, appended to the PodGroupScheduled message when it cannot help.
_NOT_REGISTERED = "default preemption plugin is not registered, workload aware preemption is disabled"
_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
_NO_VICTIMS = "No preemption victims found for incoming preemptor"
_CONSTRAINED = "workload aware preemption is not supported for pod groups with scheduling constraints"


def preempt_group(c: GroupCycle, intent: tas.Intent | None, rejections: Rejections) -> None:
    """The group did not fit: WAP (spec §4.3) on the whole cluster, or, beyond v1.36, for a group with a topology
    intent, in each candidate domain of its first level, keeping the domain whose victims cost least. Victims are
    evicted only when the group then fits; its members wait with their nominated nodes (``rejections`` are
    theirs from the cycle, kept with DefaultPreemption as what wakes them)."""
    ctx = c.ctx
    if not c.profile.preemption:
        return _verdict(c, _NOT_REGISTERED)
    # v1.36's order (runWorkloadAwarePreemption, then PodGroupPostFilter): the refusal of constrained groups comes
    # before the preemptor's eligibility and the search for victims.
    single = ctx.release.wap_single_run and not ctx.rules.reprieve_by_rerun
    by_domain = intent is not None and ctx.rules.topology_aware_preemption and not single
    if not by_domain and _topology_constrained(c) and not single:
        return _verdict(c, _CONSTRAINED)
    if group_preemption_policy_never(ctx, c.members):
        return _verdict(c, _POLICY_NEVER)
    priority = ctx.groups.priority(c.group.key)
    if not any_victims(ctx, c.group.key, priority):
        return _verdict(c, _NO_VICTIMS)
    if single:
        return _evict(c, _single_run(c, intent, priority), rejections, False)
    options: list[BoolArray | None] = [None]
    if intent is not None and by_domain:
        key = intent.levels[0]
        try:
            pinned = tas.pinned_domain(ctx.state.table, key, bound_member_rows(c))
        except tas.PlacementError:
            return
        options = [d.mask for d in tas.domains(ctx.state.table, key, pinned)]
    best = _cheapest(c, priority, options)
    if best is None and by_domain and intent is not None and intent.mode in ("preferred", "unconstrained"):
        best = _cheapest(c, priority, [None])  # the cycle's last resort is anywhere: so is preemption's
    if ctx.release.wap_single_run and best is not None and best.victims and ctx.explains:
        # What v1.37 would evict: the rule is named where it differs (only for a recorder that keeps the names:
        # it runs the group algorithm a second time).
        v137 = _single_run(c, intent, priority)
        if v137 is None or _keys(v137) != _keys(best):
            best.rules.add("reprieve_by_rerun")
    _evict(c, best, rejections, by_domain)


def _keys(found: GroupPreemption) -> set[str]:
    return {p.key for u in found.victims for p in u.pods}


def _evict(c: GroupCycle, best: GroupPreemption | None, rejections: Rejections, by_domain: bool) -> None:
    """Evict ``best``'s victims and leave the members waiting for them, nominated; or say why nobody goes."""
    ctx = c.ctx
    if best is None or not best.victims:
        # No victims means the simulation fits the group where the cycle just did not: evicting nobody and
        # waiting for a PodDelete would only requeue the group into the same failure.
        if best is None:
            _verdict(c, o.MSG_GROUP_UNSCHEDULABLE)  # the group algorithm's status with every victim gone
        return
    names = ctx.state.table.names
    for pi in c.members:
        row = best.nominated.get(pi.key)
        nominated = names[row] if row is not None else None
        ctx.reject(pi, replace(rejections[pi.key], plugins=_WAITS_FOR_VICTIMS), nominated)
    # v1.36 leaves the cycle's status (pod group is unschedulable) as the condition's message.
    waiting = o.MSG_WAITING_PREEMPTION if ctx.rules.group_message_counts else o.MSG_GROUP_UNSCHEDULABLE
    ctx.set_condition(c.group, "False", o.REASON_UNSCHEDULABLE, waiting)
    victims = [p for u in best.victims for p in u.pods]
    meta = c.group.pod_group.metadata
    keys = [*c.keys(), *(v.key for v in victims)]
    for rule in sorted(best.rules):
        ctx.changed_by(rule, keys)
    if by_domain:
        ctx.changed_by("topology_aware_preemption", keys)
    ctx.evict(victims, Preemptor("PodGroup", meta.namespace, meta.name, c.profile.scheduler_name))


def _single_run(c: GroupCycle, intent: tas.Intent | None, priority: int) -> GroupPreemption | None:
    """v1.37's workload-aware preemption: every victim of the whole cluster removed, the group algorithm (with
    its topology placement) run once, reprieves checked by Filter on the nodes that run chose."""
    units = victim_units(c.ctx, c.group.key, priority)
    table = c.ctx.state.table

    def run() -> tuple[list[tuple[PodInfo, int]], bool]:
        if intent is None:
            placed, _ = default_algorithm(c, None)
            ok = c.reached(len(placed)) and c.error is None
        else:
            outcome = placement_run(c, intent)
            placed = outcome.placed
            ok = outcome.failed is None and c.error is None and c.reached(len(placed))
        forget(c, placed)
        return placed, ok

    def fits(pi: PodInfo, row: int) -> bool:
        return passes_filters(c.profile, pi, table, row)

    def per_node(pi: PodInfo) -> bool:
        return tas.per_node_only(c.profile, pi, table)

    return reprieve_on_fixed_nodes(c.ctx, units, run, fits, per_node) if units else None


def _topology_constrained(c: GroupCycle) -> bool:
    constraints = c.group.pod_group.spec.scheduling_constraints if c.group.pod_group.spec else None
    return constraints is not None and bool(constraints.topology)


def _verdict(c: GroupCycle, reason: str) -> None:
    """WAP could not help: v1.36 appends its verdict to the cycle's status, so the PodGroupScheduled message
    ends with it (phalanx's own message already says how far the group was from fitting)."""
    ctx = c.ctx
    if ctx.rules.group_message_counts:
        return
    cond = ctx.groups.conditions.get(c.group.key)
    if cond is None or cond.status == "True":
        return
    ctx.set_condition(c.group, cond.status, cond.reason, f"{cond.message}, {reason}")


def _cheapest(c: GroupCycle, priority: int, options: Sequence[BoolArray | None]) -> GroupPreemption | None:
    best: GroupPreemption | None = None
    for within in options:
        units = victim_units(c.ctx, c.group.key, priority, within)
        if not units:
            continue
        exact = counted_by_slots(c.profile, c.members, c.ctx.state.table)
        sim = _SlotSimulator(c, within) if exact and not c.members[0].host_ports else _Simulator(c, within)
        found = select_group_victims(c.ctx, units, sim)
        if found is not None and (best is None or found.cost() < best.cost()):
            best = found
    return best


class _Simulator:
    """The PodGroup algorithm run for real on the current state, then forgotten."""

    def __init__(self, c: GroupCycle, within: BoolArray | None) -> None:
        self.c = c
        self.within = within

    def placements(self) -> tuple[dict[str, int], bool]:
        placed, _ = default_algorithm(self.c, self.within)
        rows = {pi.key: row for pi, row in placed}
        forget(self.c, placed)
        return rows, self.c.reached(len(rows))

    def count(self, rows: Sequence[int]) -> tuple[int, bool]:
        placed, ok = self.placements()
        return len(placed), ok


class _SlotSimulator(_Simulator):
    """For identical members judged node by node, the group algorithm places min(members, free slots) members
    (the count topology placement uses too), so a reprieve only recounts the slots of the rows it touched."""

    def __init__(self, c: GroupCycle, within: BoolArray | None) -> None:
        super().__init__(c, within)
        self.slots: IntArray | None = None
        self.open: BoolArray | None = None
        self.total = 0
        pod, table = c.members[0], c.ctx.state.table
        fit = next((p for p in c.profile.filters if isinstance(p, NodeResourcesFit)), None)
        self.cols, self.vals = fit.checked(pod) if fit is not None else (pod.req_cols[:0], pod.req_vals[:0])
        self.table = table

    def count(self, rows: Sequence[int]) -> tuple[int, bool]:
        t = self.table
        if self.slots is None:
            slots = tas.slots(self.c.profile, self.c.members[0], t)
            if self.within is not None:
                slots = np.where(self.within, slots, 0)
            self.slots, self.open = slots, slots > 0  # a node closed with every victim gone stays closed
            self.total = int(slots.sum())
        else:
            assert self.open is not None
            for row in set(rows):
                if not self.open[row]:
                    continue
                room = int(t.max_pods[row] - t.pod_count[row])
                if len(self.cols):
                    free = t.allocatable[row, self.cols] - t.requested[row, self.cols]
                    room = min(room, int((np.maximum(free, 0) // self.vals).min()))
                room = max(room, 0)
                if room and self.c.members[0].pod.spec.resource_claims:
                    caps = np.zeros(len(t), dtype=np.int64)
                    caps[row] = room
                    room = int(tas.device_room(self.c.profile, self.c.members[0], t, caps)[row])
                self.total += room - int(self.slots[row])
                self.slots[row] = room
        placed = min(len(self.c.members), self.total)
        return placed, self.c.reached(placed)

    def placements(self) -> tuple[dict[str, int], bool]:
        """Nominations: members in order onto the free slots in node order (the next cycle places them for real)."""
        assert self.slots is not None
        out: dict[str, int] = {}
        rows = iter(int(r) for r in np.flatnonzero(self.slots) for _ in range(int(self.slots[r])))
        for pi in self.c.members:
            row = next(rows, None)
            if row is None:
                break
            out[pi.key] = row
        return out, self.c.reached(len(out))
