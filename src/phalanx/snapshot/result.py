"""The ScheduleResult of DESIGN.md (schema in ``docs/schedule-result.schema.json``), built from the decisions the
engine recorded (an OutcomeLog) and its read-only queries; and the per-node summary of the table view."""

from __future__ import annotations

from typing import Any

import msgspec

from phalanx.scheduling.outcome import PHASE_WAITING, OutcomeLog
from phalanx.scheduling.scheduler import Scheduler
from phalanx.snapshot.schedule import Timings, peak_rss_bytes

__all__ = ["API_VERSION", "build_result", "mode", "node_summary", "resource_claims"]

API_VERSION = "phalanx.dev/v1alpha1"


def _log(sched: Scheduler) -> OutcomeLog:
    log = sched.recorder
    if not isinstance(log, OutcomeLog):
        raise TypeError("build_result needs an engine whose recorder is an OutcomeLog (schedule_snapshot makes one)")
    return log


def build_result(sched: Scheduler, timings: Timings) -> dict[str, Any]:
    """The ScheduleResult document: every pod, every PodGroup (and CompositePodGroup), claims, evictions and
    stats."""
    log = _log(sched)
    composites = _composites(sched, log)
    return {
        "apiVersion": API_VERSION,
        "kind": "ScheduleResult",
        "mode": mode(sched),
        "pods": _pods(sched, log),
        "podGroups": _groups(sched, log),
        **({"compositePodGroups": composites} if composites else {}),
        "resourceClaims": resource_claims(sched),
        "evictions": [
            {
                "namespace": e.namespace,
                "name": e.name,
                "node": e.node,
                "reason": "PreemptionByScheduler",
                "preemptor": {"kind": e.preemptor_kind, "namespace": e.preemptor_namespace, "name": e.preemptor_name},
            }
            for e in log.evictions
        ],
        "stats": _stats(sched, timings),
    }


def _pods(sched: Scheduler, log: OutcomeLog) -> list[dict[str, Any]]:
    pods = []
    for key in sched.pod_keys():
        pod = sched.pod(key)
        assert pod is not None
        out = log.outcomes.get(key)
        entry: dict[str, Any] = {
            "namespace": pod.metadata.namespace,
            "name": pod.metadata.name,
            "node": out.node if out else None,
            "phase": out.phase if out else PHASE_WAITING,
            "reason": out.reason if out else "",
            "message": out.message if out else "",
        }
        if out is not None and out.nominated_node:
            entry["nominatedNode"] = out.nominated_node
        if key in log.choices and out is not None and out.phase in ("Scheduled", "Unschedulable"):
            entry["candidateNodes"] = log.choices[key]
        if key in log.rules:
            entry["rules"] = sorted(log.rules[key])
        if pod.status.resource_claim_statuses:
            entry["resourceClaimStatuses"] = [msgspec.to_builtins(st) for st in pod.status.resource_claim_statuses]
        pods.append(entry)
    return pods


def _condition(cond: Any) -> dict[str, Any]:
    return {"type": cond.type, "status": cond.status, "reason": cond.reason, "message": cond.message}


def _groups(sched: Scheduler, log: OutcomeLog) -> list[dict[str, Any]]:
    groups = []
    for g in sched.group_statuses():
        entry: dict[str, Any] = {
            "namespace": g.namespace,
            "name": g.name,
            "minCount": g.min_count,
            "scheduledPods": g.scheduled,
            "condition": None if g.condition is None else _condition(g.condition),
        }
        if g.parent:
            entry["parent"] = g.parent
        target = log.disruption_targets.get(g.key)
        if target is not None:
            entry["disruptionTarget"] = _condition(target)
        if g.key in log.choices:
            entry["candidatePlacements"] = log.choices[g.key]
        if g.key in log.rules:
            entry["rules"] = sorted(log.rules[g.key])
        groups.append(entry)
    return groups


def _composites(sched: Scheduler, log: OutcomeLog) -> list[dict[str, Any]]:
    out = []
    for c in sched.composite_statuses():
        entry: dict[str, Any] = {"namespace": c.namespace, "name": c.name, "minGroupCount": c.min_group_count}
        if c.parent:
            entry["parent"] = c.parent
        entry["children"] = [child.replace(f"/{c.namespace}/", "/", 1) for child in c.children]
        entry["satisfiedChildren"] = c.satisfied
        entry["condition"] = None if c.condition is None else _condition(c.condition)
        if c.key in log.rules:
            entry["rules"] = sorted(log.rules[c.key])
        out.append(entry)
    return out


def mode(sched: Scheduler) -> dict[str, Any]:
    """How the run was made: the compatibility mode (or null: phalanx's own rules), the beyond-v1.36 rules that
    were on, and the feature gates whose value differs from kube-scheduler v1.36's default."""
    return {"compat": sched.compat, "rules": sched.rules.names(), "featureGates": sched.feature_gates.changed()}


def _stats(sched: Scheduler, timings: Timings) -> dict[str, Any]:
    bound = sched.stats.pods_bound
    return {
        "loadSeconds": round(timings.load, 6),
        "validateSeconds": round(timings.validate, 6),
        "scheduleSeconds": round(timings.schedule, 6),
        "podsScheduled": bound,
        "podsPerSecond": round(bound / timings.schedule, 1) if timings.schedule > 0 else 0.0,
        "peakRssBytes": peak_rss_bytes(),
    }


def resource_claims(sched: Scheduler) -> list[dict[str, Any]]:
    """Every claim, input or generated, with ``status.allocation`` and ``reservedFor`` as the scheduler leaves them."""
    out = []
    for claim in sched.resource_claims():
        entry: dict[str, Any] = {"namespace": claim.namespace, "name": claim.name}
        if claim.generated_from is not None:
            entry["generatedFrom"] = claim.generated_from
        entry["allocation"] = msgspec.to_builtins(claim.allocation) if claim.allocation is not None else None
        entry["reservedFor"] = [msgspec.to_builtins(r) for r in claim.reserved_for]
        out.append(entry)
    return out


def node_summary(sched: Scheduler) -> list[dict[str, Any]]:
    """Per node: pods placed and requested/allocatable of every resource some node has (for the table view)."""
    u = sched.node_usage()
    shown = [c for c in range(len(u.resources)) if u.allocatable[:, c].any()]
    rows = []
    for i, name in enumerate(u.names):
        usage = {u.resources[c]: (int(u.requested[i, c]), int(u.allocatable[i, c])) for c in shown}
        rows.append({"name": name, "pods": (int(u.pods[i]), int(u.max_pods[i])), "resources": usage})
    return rows
