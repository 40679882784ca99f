"""Victim units: which pods preemption evicts together, and which it prefers to keep.

- A PodGroup whose ``disruptionMode`` is PodGroup is one unit (all its placed pods, with the PodGroup's priority),
  in workload-aware preemption (v1.36) and, beyond v1.36 as v1.37 makes explicit, in per-pod preemption
  (``Rules.disruption_mode_in_pod_preemption``). Any other pod is its own unit: a Pod-mode gang loses only the
  members that are needed.
- Beyond v1.36 (``Rules.prefer_non_gang_victims``), members of running gangs are reprieved before other pods of
  the same class, so other pods are preferred as victims: a tie-break, not a change of declared semantics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.cluster.pods import PodInfo

if TYPE_CHECKING:
    from phalanx.scheduling.context import CycleContext

__all__ = ["group_unit", "placed_members", "running_gang_member"]


def group_unit(ctx: CycleContext, pi: PodInfo) -> str | None:
    """The key of the unit ``pi`` is evicted with: a known PodGroup whose disruptionMode is PodGroup, or (v1.37)
    the highest ancestor CompositePodGroup whose disruptionMode is ``all``."""
    return ctx.groups.victim_unit(pi.group_key)


def placed_members(ctx: CycleContext, gk: str) -> list[PodInfo]:
    """The unit's pods placed on nodes of the snapshot (not merely assumed), in key order."""
    state = ctx.state
    members = ctx.groups.unit_members(gk)
    return [state.pods[k] for k in sorted(members) if k in state.placement and k not in state.assumed]


def running_gang_member(ctx: CycleContext, pi: PodInfo) -> bool:
    """A member of a gang (a PodGroup with minCount, GangScheduling on) with members bound: evicting it may leave
    the gang below minCount, so, beyond v1.36, other pods are preferred as victims."""
    return ctx.rules.prefer_non_gang_victims and ctx.groups.gang_key(pi) is not None
