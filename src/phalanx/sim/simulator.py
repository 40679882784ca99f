"""The discrete-event loop: jobs arrive, their pods are handed to the engine, a job runs once all its pods are
bound, and finishing frees its pods. Events at one instant are applied together, then the engine runs until no
queued pod can progress, as the live scheduler would after a burst of watch events.

The heap is ordered by (time, kind, tag, job): completions before arrivals at the same instant (capacity is freed
first), then by job index, so a run is a pure function of its inputs. A job that preemption evicts starts over
under new pod names; the completion event of its cut-short run is recognised by its tag and ignored.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import msgspec
import numpy as np

from phalanx.api.models import (
    Container,
    GangSchedulingPolicy,
    Job,
    JobSpec,
    Node,
    ObjectMeta,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodSpec,
    PodTemplateSpec,
    ResourceRequirements,
    Toleration,
)
from phalanx.controllers.job import reconcile_job
from phalanx.scheduling.config import SchedulerConfig, TopologyArgs, default_profile
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.workload import BLOCK, HOSTNAME, RACK, JobRecord

__all__ = ["POLICIES", "JobRun", "Policy", "Sample", "SimulationResult", "simulate"]

_COMPLETE, _ARRIVE = 0, 1
_NS = "sim"
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class Policy:
    """A scheduler configuration and how jobs are expressed for it."""

    name: str
    gang: bool
    topology: bool
    description: str
    preemption: bool = False

    def config(self) -> SchedulerConfig:
        profile = default_profile()
        profile.gang = self.gang
        profile.preemption = self.preemption
        if self.topology:
            profile.args["TopologyPlacementGenerator"] = TopologyArgs([BLOCK, RACK, HOSTNAME])
        else:
            profile.placement_generators = []
        return SchedulerConfig(profiles=[profile])


POLICIES = {
    p.name: p
    for p in (
        Policy("pod-by-pod", False, False, "no PodGroups: every pod on its own (partial gangs hold GPUs)"),
        Policy("gang", True, False, "v1.36 gang scheduling: all pods of a job at once or none"),
        Policy("gang-tas", True, True, "gang scheduling with phalanx's topology intents (rack, then block)"),
        Policy("gang-tas-preemption", True, True, "gang-tas, and higher-priority jobs preempt lower ones", True),
    )
}


@dataclass
class JobRun:
    job: JobRecord
    pods: list[str]
    start: float | None = None
    end: float | None = None
    group: str | None = None  # its PodGroup's key, when it has one
    restarts: int = 0  # times preemption evicted it and it started over
    lost_gpu_seconds: float = 0.0  # GPU time of runs that preemption cut short


@dataclass
class Sample:
    time: float
    allocated_gpus: int
    running_jobs: int
    queued_jobs: int
    held_gpus: int  # GPUs bound to pods of jobs that cannot start yet (partial gangs)
    fragmented_gpus: int  # free GPUs on nodes where no queued pod's GPU request fits
    rack_allocation: list[float]


@dataclass
class SimulationResult:
    policy: str
    capacity_gpus: int
    runs: list[JobRun]
    samples: list[Sample] = field(default_factory=list)
    racks: list[str] = field(default_factory=list)
    cycles: int = 0


def simulate(
    nodes: list[Node], jobs: list[JobRecord], policy: Policy, progress: Callable[[int], None] | None = None
) -> SimulationResult:
    """Run ``jobs`` on ``nodes`` under ``policy`` until no event is left."""
    sched = Scheduler(policy.config())
    sched.load(nodes, [])
    table = sched.state.table
    gpu_col = table.ensure_resource(GPU)
    rack_col = table.label(RACK)
    result = SimulationResult(policy.name, int(table.allocatable[:, gpu_col].sum()), [], racks=list(rack_col.values))
    heap: list[tuple[float, int, int, int]] = []
    for i, job in enumerate(jobs):
        heapq.heappush(heap, (job.submit, _ARRIVE, i, i))
    runs = [JobRun(job, []) for job in jobs]
    result.runs = runs
    owner: dict[str, int] = {}  # pod key -> job index
    waiting: set[int] = set()
    seen_evictions = 0
    while heap:
        now = heap[0][0]
        while heap and heap[0][0] == now:
            _, kind, tag, i = heapq.heappop(heap)
            if kind == _COMPLETE:
                if tag != _run_tag(runs[i]) or runs[i].start is None:
                    continue  # a completion of a run that preemption cut short
                for key in runs[i].pods:
                    sched.delete_pod(key)
                runs[i].end = now
                if progress:
                    progress(1)
            else:
                runs[i].pods = _submit(sched, runs[i], policy)
                owner.update((k, i) for k in runs[i].pods)
                waiting.add(i)
        sched.run()
        result.cycles += 1
        # Victims' jobs start over: their other pods are deleted and the job is submitted again.
        hit = sorted({owner[e.namespace + "/" + e.name] for e in sched.evictions[seen_evictions:]})
        seen_evictions = len(sched.evictions)
        for i in hit:
            _restart(sched, runs[i], now, policy)
            owner.update((k, i) for k in runs[i].pods)
            waiting.add(i)
        if hit:
            sched.run()
        for i in sorted(waiting):
            if all(k in sched.state.placement for k in runs[i].pods):
                runs[i].start = now
                waiting.discard(i)
                heapq.heappush(heap, (now + runs[i].job.duration, _COMPLETE, _run_tag(runs[i]), i))
        result.samples.append(_sample(sched, now, runs, waiting, gpu_col, rack_col.codes, len(rack_col.values)))
    return result


def _run_tag(run: JobRun) -> int:
    """Tells a run's completion event from those of runs preemption cut short (heap entries are never removed)."""
    return run.restarts


def _restart(sched: Scheduler, run: JobRun, now: float, policy: Policy) -> None:
    if run.start is not None:
        run.lost_gpu_seconds += (now - run.start) * run.job.gpus * run.job.pods
    for key in run.pods:
        sched.delete_pod(key)
    if run.group:
        sched.delete_pod_group(run.group)
    run.start = None
    run.restarts += 1
    run.pods = _submit(sched, run, policy)


def _group_name(job: JobRecord, attempt: int) -> str:
    return job.name if attempt == 0 else f"{job.name}-r{attempt}"


def _submit(sched: Scheduler, run: JobRun, policy: Policy) -> list[str]:
    """Create the job as a batch/v1 Indexed Job and let the Job controller (the one ``schedule`` runs) make its
    pods and, for a multi-pod job, its Workload and PodGroup. The trace's priority, minCount and topology go on
    the PodGroup. ``pod-by-pod`` models a cluster without the Workload API: no PodGroup, pods on their own. A
    restarted job is a new Job (``-r<n>``), as a controller recreating it would make."""
    job = run.job
    name = _group_name(job, run.restarts)
    requests: dict[str, str | int | float] = {"cpu": job.cpu, "memory": job.memory}
    if job.gpus:
        requests[GPU] = job.gpus
    template = PodSpec(
        containers=[Container(name="main", resources=ResourceRequirements(requests=requests))],
        priority=job.priority,
        tolerations=[Toleration(operator="Exists")],
    )
    created = _EPOCH + timedelta(seconds=job.submit)
    batch = Job(
        metadata=ObjectMeta(name=name, namespace=_NS, creation_timestamp=created),
        spec=JobSpec(
            parallelism=job.pods,
            completions=job.pods,
            completion_mode="Indexed",
            template=PodTemplateSpec(spec=template),
        ),
    )
    out = reconcile_job(batch, [], [], [])
    run.group = None
    if out.pod_group is not None and policy.name != "pod-by-pod":
        sched.add_pod_group(_with_trace_intent(out.pod_group, job, policy))
        run.group = f"{_NS}/{out.pod_group.metadata.name}"
    keys = []
    for k, pod in enumerate(out.pods):
        # The controller creates a job's pods one after another (a millisecond apart here): jobs that arrive
        # together interleave in the queue, as on a real cluster.
        meta = msgspec.structs.replace(pod.metadata, creation_timestamp=created + timedelta(milliseconds=k))
        spec = pod.spec if run.group else msgspec.structs.replace(pod.spec, scheduling_group=None)
        keys.append(sched.add_pod(msgspec.structs.replace(pod, metadata=meta, spec=spec)).key)
    return keys


def _with_trace_intent(pg: PodGroup, job: JobRecord, policy: Policy) -> PodGroup:
    notes = dict(pg.metadata.annotations)
    if policy.topology and job.topology:
        mode, _, key = job.topology.partition(":")
        notes[f"scheduling.phalanx.dev/topology-{mode}"] = key
    assert pg.spec is not None
    policy_spec = pg.spec.scheduling_policy
    if job.min_count and job.min_count != job.pods:
        policy_spec = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=job.min_count))
    # Workload-aware preemption ranks groups by the PodGroup's priority, which admission resolves.
    spec = msgspec.structs.replace(pg.spec, scheduling_policy=policy_spec, priority=job.priority)
    return msgspec.structs.replace(pg, metadata=msgspec.structs.replace(pg.metadata, annotations=notes), spec=spec)


def _sample(
    sched: Scheduler,
    now: float,
    runs: list[JobRun],
    waiting: set[int],
    gpu_col: int,
    rack_codes: np.ndarray,
    racks: int,
) -> Sample:
    t = sched.state.table
    used = t.requested[:, gpu_col]
    alloc = t.allocatable[:, gpu_col]
    placed = sched.state.placement
    held = sum(runs[i].job.gpus * sum(1 for k in runs[i].pods if k in placed) for i in waiting)
    pending = [runs[i].job.gpus for i in waiting if runs[i].job.gpus]
    free = alloc - used
    smallest = min(pending) if pending else 0
    fragmented = int(free[(free > 0) & (free < smallest)].sum()) if smallest else 0
    per_rack = []
    if racks:
        has = rack_codes >= 0
        a = np.bincount(rack_codes[has], weights=alloc[has], minlength=racks)
        u = np.bincount(rack_codes[has], weights=used[has], minlength=racks)
        per_rack = [round(float(x), 3) for x in np.where(a > 0, u / np.maximum(a, 1), 0.0)]
    running = sum(1 for r in runs if r.start is not None and r.end is None)
    return Sample(now, int(used.sum()), running, len(waiting), held, fragmented, per_rack)
