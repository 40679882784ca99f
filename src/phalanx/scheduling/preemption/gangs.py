"""Beyond v1.36 (gang-safe eviction, ``Rules.gang_safe_eviction``): a running gang is a victim whole or not at all,
so preemption never leaves it below minCount holding resources it cannot use."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from phalanx.cluster.pods import PodInfo

if TYPE_CHECKING:
    from phalanx.scheduling.context import CycleContext

__all__ = ["complete_gangs", "evictable_gang", "gang_evictable", "whole_gangs"]


def evictable_gang(ctx: CycleContext, pi: PodInfo, v: PodInfo) -> bool:
    """Beyond v1.36 (gang-safe): a gang member may be a victim only if its whole gang could go with it, i.e. every
    bound member is visible, not assumed, and of lower priority than the preemptor."""
    if not ctx.rules.gang_safe_eviction:
        return True
    return ctx.groups.gang_key(v) is None or gang_evictable(ctx, v, pi.priority)


def whole_gangs(ctx: CycleContext, victims: list[PodInfo], below: int) -> list[PodInfo]:
    """``_whole_gangs`` for workload-aware preemption: only gangs whose every bound member has priority < ``below``
    and is visible are completed; others are left as v1.36 leaves them."""
    if not ctx.rules.gang_safe_eviction:
        return victims
    safe = [v for v in victims if ctx.groups.gang_key(v) is not None and gang_evictable(ctx, v, below)]
    if not safe:
        return victims
    extra = [p for p in complete_gangs(ctx, safe) if p.key not in {v.key for v in safe}]
    chosen = {v.key for v in victims}
    return victims + [p for p in extra if p.key not in chosen]


def gang_evictable(ctx: CycleContext, v: PodInfo, below: int) -> bool:
    """Every bound member of ``v``'s gang is visible (on a node of the snapshot), not assumed, and of priority
    below ``below``."""
    gk = ctx.groups.gang_key(v)
    placement = ctx.state.placement
    for key in ctx.groups.members_of(gk or ""):
        if key not in placement:
            if ctx.is_bound(key):
                return False  # bound to a node the snapshot lacks
            continue
        if ctx.state.pods[key].priority >= below or key in ctx.state.assumed:
            return False
    return True


def complete_gangs(ctx: CycleContext, victims: list[PodInfo]) -> list[PodInfo]:
    """Beyond v1.36 (gang-safe): a victim set that would leave a running gang below its minCount takes the gang's
    other bound members too; a partial gang does no useful work and would only hold its resources."""
    if not ctx.rules.gang_safe_eviction:
        return victims
    chosen = {v.key for v in victims}
    per_gang: Counter[str] = Counter(gk for v in victims if (gk := ctx.groups.gang_key(v)) is not None)
    extra: list[PodInfo] = []
    for gk, lost in per_gang.items():
        group = ctx.groups.groups[gk]
        bound = [k for k in ctx.groups.members_of(gk) if k in ctx.state.placement or k in chosen]
        if group.min_count is None or len(bound) - lost >= group.min_count:
            continue
        extra += [ctx.state.pods[k] for k in sorted(bound) if k not in chosen]
    return victims + extra
