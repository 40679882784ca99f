"""What-if scheduling of a snapshot (``phalanx schedule``): load, validate, run the controllers, schedule. The
engine reports its decisions to an OutcomeLog, from which ``result.py`` builds the ScheduleResult."""

from __future__ import annotations

import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from phalanx.api.admission import AdmissionError, admin_access_problems
from phalanx.api.device_taint_rules import apply_device_taint_rules
from phalanx.api.dra import ResourceClaim, ResourceClaimTemplate
from phalanx.api.errors import InputError
from phalanx.api.loader import Inventory, load, problem_at
from phalanx.api.priority import UnknownPriorityClass
from phalanx.api.validation import validate
from phalanx.controllers.job import DEFAULT_OPTIONS, JobControllerOptions
from phalanx.controllers.run import run_once as run_controllers
from phalanx.scheduling.config import SchedulerConfig
from phalanx.scheduling.outcome import OutcomeLog
from phalanx.scheduling.resource_claims import ResourceObjects
from phalanx.scheduling.scheduler import Scheduler

__all__ = ["Timings", "load_and_validate", "peak_rss_bytes", "schedule_snapshot"]


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
    async_victims: bool = False,
) -> tuple[Scheduler, Inventory, Timings]:
    """Load, validate and schedule a snapshot. Raises InputError for bad input (nothing is scheduled). The
    engine's recorder is an OutcomeLog (``result.build_result`` reads it); ``async_victims``: Scheduler's."""
    timings = Timings()
    inv = load_and_validate(paths, stdin, timings)
    cfg = config or SchedulerConfig()
    gates = cfg.feature_gates.scheduling()
    # Jobs become pods (and gang Workloads/PodGroups), as kube-controller-manager would with the same gates; in a
    # compatibility mode, as that version's Job controller would.
    jobs = JobControllerOptions.for_version(cfg.compat) if cfg.compat else DEFAULT_OPTIONS
    run_controllers(inv, jobs, gates.workload_with_job, gates.workload_resource_claims and gates.generic_workload)
    sched = Scheduler(config, scheduler_name, seed, recorder=OutcomeLog(), async_victims=async_victims)
    start = time.perf_counter()
    try:
        rules = inv.device_taint_rules if gates.device_taint_rules else []
        resources = ResourceObjects(
            inv.device_classes,
            apply_device_taint_rules(inv.resource_slices, rules),  # as kube-scheduler's tracker
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
            composite_pod_groups=inv.composite_pod_groups,
        )
    except (UnknownPriorityClass, AdmissionError) as exc:
        raise InputError([str(exc)]) from exc
    sched.run()
    timings.schedule = time.perf_counter() - start
    return sched, inv, timings
