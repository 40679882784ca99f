"""The per-pod cycle (``scheduleOnePod``) for a pod that belongs to no PodGroup: filter, score and select a node;
when none fits, DefaultPreemption's PostFilter may nominate one and evict its victims."""

from __future__ import annotations

import time

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling.context import CycleContext, Preemptor
from phalanx.scheduling.diagnosis import FILTER_ERROR_PLUGIN
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.preemption.default_preemption import preempt_pod
from phalanx.scheduling.profile import Attempt
from phalanx.scheduling.recorder import Rejection

__all__ = ["rejection_of", "schedule_pod"]


def rejection_of(attempt: Attempt) -> Rejection:
    """An attempt that placed nothing, as the Rejection the pod is reported with (kube-scheduler's FitError)."""
    diag = attempt.diagnosis
    if diag is None:
        return Rejection(o.REASON_UNSCHEDULABLE, o.MSG_GROUP_UNSCHEDULABLE)
    return Rejection(o.REASON_UNSCHEDULABLE, diag.message(), frozenset(diag.rejected_by), diag)


def schedule_pod(ctx: CycleContext, pi: PodInfo) -> None:
    """Schedule a pod that belongs to no PodGroup."""
    start = time.perf_counter()
    profile = ctx.profile_for(pi)
    attempt = profile.schedule(pi, ctx.state.table, nominated=ctx.nominated_row(pi.key))
    error = attempt.diagnosis.filter_error() if attempt.node is None and attempt.diagnosis is not None else None
    if error is not None and not ctx.rules.allocator_error_per_node:
        # v1.36: a Filter error aborts the attempt; no PostFilter runs.
        ctx.reject(pi, Rejection(o.REASON_SCHEDULER_ERROR, error, frozenset({FILTER_ERROR_PLUGIN})))
        ctx.stats.cycle_seconds.append(time.perf_counter() - start)
        return
    if error is not None:
        ctx.changed_by("allocator_error_per_node", [pi.key])
    if attempt.node is None:
        candidate = None
        if profile.preemption and attempt.diagnosis is not None:
            began = time.perf_counter()
            candidate = preempt_pod(ctx, profile, pi, attempt.diagnosis)
            ctx.stats.preemption_seconds.append(time.perf_counter() - began)
        if candidate is None:
            ctx.reject(pi, rejection_of(attempt))
            if ctx.claims.deallocate_unusable(pi, ctx.state.table):
                # DynamicResources PostFilter: the claim change requeues the pod for a fresh allocation.
                ctx.on_event(ClusterEvent.RESOURCE_CLAIM_CHANGE)
        else:
            # The pod waits for its victims to go; their PodDelete event requeues it (nominatedNodeName set).
            ctx.reject(pi, rejection_of(attempt), nominated=ctx.state.table.names[candidate.row])
            ctx.evict(candidate.victims, Preemptor("Pod", pi.namespace, pi.name, profile.scheduler_name))
    elif not (status := ctx.reserve(pi, attempt.node, attempt.candidates, attempt.rules)).ok:
        ctx.reject(pi, Rejection(o.REASON_SCHEDULER_ERROR, status.message, frozenset({status.plugin})))
    else:
        ctx.bind(pi)
    ctx.stats.cycle_seconds.append(time.perf_counter() - start)
