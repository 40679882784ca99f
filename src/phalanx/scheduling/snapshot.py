"""What-if scheduling of a snapshot (``phalanx schedule``): load, validate, schedule, and build the
ScheduleResult of DESIGN.md (schema in ``docs/schedule-result.schema.json``)."""

from __future__ import annotations

import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import msgspec

from phalanx.api.admission import AdmissionError, admin_access_problems
from phalanx.api.dra import ResourceClaim, ResourceClaimTemplate
from phalanx.api.errors import InputError
from phalanx.api.loader import Inventory, load, problem_at
from phalanx.api.priority import UnknownPriorityClass
from phalanx.api.validation import validate
from phalanx.controllers.run import run_once as run_controllers
from phalanx.scheduling.config import SchedulerConfig
from phalanx.scheduling.resource_claims import ResourceObjects
from phalanx.scheduling.scheduler import Scheduler

__all__ = ["API_VERSION", "Timings", "build_result", "node_summary", "peak_rss_bytes", "schedule_snapshot"]

API_VERSION = "phalanx.dev/v1alpha1"


@dataclass
class Timings:
    load: float = 0.0
    validate: float = 0.0
    schedule: float = 0.0


def peak_rss_bytes() -> int:
    """The process's peak resident set size (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def load_and_validate(paths: Sequence[str], stdin: TextIO | None, timings: Timings) -> Inventory:
    start = time.perf_counter()
    inv = load(paths, stdin)
    timings.load = time.perf_counter() - start
    start = time.perf_counter()
    problems = validate(inv)
    # Admission (DRAAdminAccess): adminAccess requests only in namespaces labelled for it.
    claims: list[ResourceClaim | ResourceClaimTemplate] = [*inv.resource_claims, *inv.resource_claim_templates]
    for claim in claims:
        problems += [problem_at(inv, claim, err) for err in admin_access_problems(claim, inv.namespaces)]
    timings.validate = time.perf_counter() - start
    if problems:
        raise InputError(problems)
    return inv


def schedule_snapshot(
    paths: Sequence[str],
    config: SchedulerConfig | None = None,
    scheduler_name: str | None = None,
    stdin: TextIO | None = None,
    seed: int = 0,
) -> tuple[Scheduler, Inventory, Timings]:
    """Load, validate and schedule a snapshot. Raises InputError for bad input (nothing is scheduled)."""
    timings = Timings()
    inv = load_and_validate(paths, stdin, timings)
    run_controllers(inv)  # Jobs become pods (and gang Workloads/PodGroups), as kube-controller-manager would
    sched = Scheduler(config, scheduler_name, seed)
    start = time.perf_counter()
    try:
        resources = ResourceObjects(
            inv.device_classes,
            inv.resource_slices,
            inv.resource_claims,
            inv.resource_claim_templates,
            inv.generated_claims,
        )
        sched.load(
            inv.nodes,
            inv.pods,
            inv.pod_groups,
            inv.priority_classes,
            inv.runtime_classes,
            inv.namespaces,
            inv.pdbs,
            resources=resources,
        )
    except (UnknownPriorityClass, AdmissionError) as exc:
        raise InputError([str(exc)]) from exc
    sched.run()
    timings.schedule = time.perf_counter() - start
    return sched, inv, timings


def build_result(sched: Scheduler, timings: Timings) -> dict[str, Any]:
    """The ScheduleResult document: every pod, every PodGroup, claims, evictions and stats."""
    pods = []
    for key in sorted(sched.pods):
        pi = sched.pods[key]
        out = sched.outcomes.get(key)
        entry: dict[str, Any] = {
            "namespace": pi.namespace,
            "name": pi.name,
            "node": out.node if out else None,
            "phase": out.phase if out else "Waiting",
            "reason": out.reason if out else "",
            "message": out.message if out else "",
        }
        if out is not None and out.nominated_node:
            entry["nominatedNode"] = out.nominated_node
        if pi.pod.status.resource_claim_statuses:
            entry["resourceClaimStatuses"] = [msgspec.to_builtins(st) for st in pi.pod.status.resource_claim_statuses]
        pods.append(entry)
    groups = []
    for key in sorted(sched.groups):
        group = sched.groups[key]
        scheduled = sum(1 for k in sched.members_of(group) if sched.is_bound(k))
        cond = sched.conditions.get(key)
        target = sched.disruption_targets.get(key)
        groups.append(
            {
                "namespace": group.pod_group.metadata.namespace,
                "name": group.pod_group.metadata.name,
                "minCount": group.min_count,
                "scheduledPods": scheduled,
                "condition": None
                if cond is None
                else {"type": cond.type, "status": cond.status, "reason": cond.reason, "message": cond.message},
            }
        )
        if target is not None:
            groups[-1]["disruptionTarget"] = {
                "type": target.type,
                "status": target.status,
                "reason": target.reason,
                "message": target.message,
            }
    bound = sched.stats.pods_bound
    return {
        "apiVersion": API_VERSION,
        "kind": "ScheduleResult",
        "pods": pods,
        "podGroups": groups,
        "resourceClaims": resource_claims(sched),
        "evictions": [
            {
                "namespace": e.namespace,
                "name": e.name,
                "node": e.node,
                "reason": "PreemptionByScheduler",
                "preemptor": {"kind": e.preemptor_kind, "namespace": e.preemptor_namespace, "name": e.preemptor_name},
            }
            for e in sched.evictions
        ],
        "stats": {
            "loadSeconds": round(timings.load, 6),
            "validateSeconds": round(timings.validate, 6),
            "scheduleSeconds": round(timings.schedule, 6),
            "podsScheduled": bound,
            "podsPerSecond": round(bound / timings.schedule, 1) if timings.schedule > 0 else 0.0,
            "peakRssBytes": peak_rss_bytes(),
        },
    }


def resource_claims(sched: Scheduler) -> list[dict[str, Any]]:
    """Every claim, input or generated, with ``status.allocation`` and ``reservedFor`` as the scheduler leaves them."""
    out = []
    records = sched.claims.tracker.records
    for key in sorted(records):
        record = records[key]
        entry: dict[str, Any] = {"namespace": record.claim.metadata.namespace, "name": record.claim.metadata.name}
        if record.generated_from is not None:
            entry["generatedFrom"] = record.generated_from
        entry["allocation"] = msgspec.to_builtins(record.allocation) if record.allocation is not None else None
        entry["reservedFor"] = [msgspec.to_builtins(r) for r in record.reserved_for]
        out.append(entry)
    return out


def node_summary(sched: Scheduler) -> list[dict[str, Any]]:
    """Per node: pods placed and requested/allocatable of every resource some node has (for the table view)."""
    t = sched.state.table
    shown = [c for c in range(len(t.resources)) if t.allocatable[:, c].any()]
    rows = []
    for i, name in enumerate(t.names):
        usage = {t.resources.names[c]: (int(t.requested[i, c]), int(t.allocatable[i, c])) for c in shown}
        rows.append({"name": name, "pods": (int(t.pod_count[i]), int(t.max_pods[i])), "resources": usage})
    return rows
