"""The discrete-event loop: jobs arrive, their pods are handed to the engine, a job runs once all its pods are
bound, and finishing frees its pods. Events at one instant are applied together, then the engine runs until no
queued pod can progress, as the live scheduler would after a burst of watch events.

The heap is ordered by (time, kind, tag, index): completions first at one instant (capacity is freed first), then
pod failures, node events, arrivals and minCount changes (``sim.elastic``), then by index, so a run is a pure
function of its inputs. A job whose
attempt ends early (preemption, a drain, a failed node or pod) starts over under new pod names; the events of the
cut-short attempt are recognised by their tag and ignored. Failures count toward the Job's backoffLimit
(``controllers.job``); disruptions (preemption, drain) do not, as with a podFailurePolicy ignoring DisruptionTarget.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import msgspec
import numpy as np

from phalanx.api.errors import InputError
from phalanx.api.models import Node, Pod, PodGroup
from phalanx.controllers.job import backoff_limit_exceeded
from phalanx.controllers.resource_claim import generate_claims
from phalanx.scheduling.config import SchedulerConfig, TopologyArgs, default_profile, load_config, with_mode
from phalanx.scheduling.outcome import Eviction
from phalanx.scheduling.recorder import BaseRecorder, Recorder, Recorders
from phalanx.scheduling.resource_claims import ResourceObjects
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.devices import ClusterDevices
from phalanx.sim.elastic import MinCountChange, MinCountEvent
from phalanx.sim.faults import NodeEvent, NodeFailures
from phalanx.sim.jobs import GPU, NAMESPACE, batch_job, claim_template_of, job_name, job_objects, tolerations_for
from phalanx.sim.tree_jobs import tree_objects, tree_satisfied
from phalanx.sim.workload import BLOCK, HOSTNAME, RACK, JobRecord

__all__ = ["CAUSES", "POLICIES", "JobRun", "Observer", "Policy", "Sample", "SimulationResult", "policy_of", "simulate"]

_COMPLETE, _POD_FAILURE, _NODE, _ARRIVE, _MIN_COUNT = 0, 1, 2, 3, 4
POOL_LABEL = "phalanx.dev/pool"
# Why an attempt ended early: the first two are disruptions, the last two failures (they count toward backoffLimit).
CAUSES = ("preemption", "drain", "nodeFailure", "podFailure")


@dataclass(frozen=True)
class Policy:
    """A scheduler configuration and how jobs are expressed for it."""

    name: str
    gang: bool
    topology: bool
    description: str
    preemption: bool = False
    scheduler_config: SchedulerConfig | None = None  # a user's KubeSchedulerConfiguration (``--policy NAME=FILE``)
    # The engine's mode for every policy (``simulate --compat`` / ``--feature-gates``).
    compat: str | None = None
    gates: tuple[tuple[str, bool], ...] = ()

    def config(self) -> SchedulerConfig:
        if self.scheduler_config is not None:
            return with_mode(self.scheduler_config, self.compat, dict(self.gates))
        profile = default_profile()
        profile.gang = self.gang
        profile.preemption = self.preemption
        if self.topology:
            profile.args["TopologyPlacementGenerator"] = TopologyArgs([BLOCK, RACK, HOSTNAME])
        else:
            profile.placement_generators = []
        return with_mode(SchedulerConfig(profiles=[profile]), self.compat, dict(self.gates))


POLICIES = {
    p.name: p
    for p in (
        Policy("pod-by-pod", False, False, "no PodGroups: every pod on its own (partial gangs hold GPUs)"),
        Policy("gang", True, False, "v1.36 gang scheduling: all pods of a job at once or none"),
        Policy("gang-tas", True, True, "gang scheduling with phalanx's topology intents (rack, then block)"),
        Policy("gang-tas-preemption", True, True, "gang-tas, and higher-priority jobs preempt lower ones", True),
    )
}


def policy_of(spec: str) -> Policy:
    """A built-in policy by name, or ``NAME=FILE`` / ``FILE.yaml``: a KubeSchedulerConfiguration to compare. Jobs
    are expressed as for the gang policies (eligible Jobs get PodGroups, as the v1.36 Job controller does); the
    configuration decides what the scheduler does with them (GangScheduling, topology placement, preemption).
    Raises InputError for an unknown name or a bad file."""
    if spec in POLICIES:
        return POLICIES[spec]
    name, sep, path = spec.partition("=")
    if not sep:
        name, path = Path(spec).stem, spec
    if not path.endswith((".yaml", ".yml")) or not name:
        known = ", ".join(POLICIES)
        raise InputError(
            [f'unknown policy "{spec}" (known: {known}, or NAME=FILE.yaml with a KubeSchedulerConfiguration)']
        )
    config = load_config(path)
    first = config.profiles[0]
    topology = "TopologyPlacementGenerator" in first.placement_generators
    return Policy(name, True, topology, f"KubeSchedulerConfiguration {path}", first.preemption, config)


@dataclass
class JobRun:
    job: JobRecord
    pods: list[str]
    start: float | None = None  # start of the current (or last) attempt
    end: float | None = None
    group: str | None = None  # its PodGroup's key, when it has one
    restarts: int = 0  # attempts that ended early and started over, whatever the cause
    lost_gpu_seconds: float = 0.0  # GPU time of attempts cut short, whatever the cause
    failed_pods: int = 0  # pods that failed (node or pod failures): the Job controller's count for backoffLimit
    failed: float | None = None  # when the job failed for good (BackoffLimitExceeded)
    restarts_by: Counter[str] = field(default_factory=Counter)  # cause -> restarts
    lost_by: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0.0))  # cause -> GPU-seconds
    composite: str | None = None  # a tree job's root CompositePodGroup key (its PodGroups: ``tree_groups``)
    tree_groups: list[str] = field(default_factory=list)
    queued_since: float = 0.0  # when the current attempt was submitted
    min_count_changes: list[MinCountChange] = field(default_factory=list)  # the trace's jobEvents, as applied

    @property
    def elastic(self) -> bool:
        """A job whose minCount a trace event changed: it starts with its gang's minCount pods running."""
        return bool(self.min_count_changes)


class Observer(Recorder, Protocol):
    """Hears the engine's decisions as they are made (a Recorder) and sees (now, the engine, the jobs' runs, the
    indices of the jobs waiting to start) after every instant."""

    def __call__(self, now: float, sched: Scheduler, runs: Sequence[JobRun], waiting: AbstractSet[int]) -> None: ...


@dataclass
class Sample:
    time: float
    allocated_gpus: int
    running_jobs: int
    queued_jobs: int
    held_gpus: int  # GPUs bound to pods of jobs that cannot start yet (partial gangs)
    fragmented_gpus: int  # free GPUs on nodes where no queued pod's GPU request fits
    rack_allocation: list[float]
    alive_gpus: int = 0  # allocatable GPUs of the nodes up (cordoned ones included)


@dataclass
class SimulationResult:
    policy: str
    capacity_gpus: int
    runs: list[JobRun]
    samples: list[Sample] = field(default_factory=list)
    racks: list[str] = field(default_factory=list)
    cycles: int = 0
    node_log: list[tuple[float, str, str]] = field(default_factory=list)  # (time, action, node) as applied


def simulate(
    nodes: list[Node],
    jobs: list[JobRecord],
    policy: Policy,
    progress: Callable[[int], None] | None = None,
    node_events: Sequence[NodeEvent] = (),
    failures: NodeFailures | None = None,
    seed: int = 0,
    on_step: Callable[[Scheduler, float], None] | None = None,
    devices: ClusterDevices | None = None,
    observer: Observer | None = None,
    job_events: Sequence[MinCountEvent] = (),
) -> SimulationResult:
    """Run ``jobs`` on ``nodes`` under ``policy`` until no event is left. ``node_events`` and ``failures`` fail,
    drain and recover nodes; ``seed`` drives generated node failures and pod failures. ``on_step`` sees the engine
    after every instant (tests use it to check invariants). ``devices`` are the cluster's DeviceClasses and
    ResourceSlices; its GPU devices count as GPUs in every metric, next to ``nvidia.com/gpu``. ``observer`` sees
    the engine, the jobs and the waiting ones after every instant (``sim.timeline`` records the report's per-job
    timeline and wait reasons from it). ``job_events`` change jobs' gang minCount during the run (elastic gangs).
    """
    sim = _Simulation(nodes, jobs, policy, node_events, failures, seed, devices, observer, job_events)
    return sim.run(progress, on_step)


class _Evictions(BaseRecorder):
    """What the simulation needs to hear from the engine: its preemption victims, in order."""

    def __init__(self) -> None:
        self.victims: list[Eviction] = []

    def evicted(self, eviction: Eviction) -> None:
        self.victims.append(eviction)

    def take(self) -> list[Eviction]:
        out, self.victims = self.victims, []
        return out


class _Simulation:
    """One run's state: the engine, the event heap, the jobs and the nodes that are down or cordoned."""

    def __init__(
        self,
        nodes: list[Node],
        jobs: list[JobRecord],
        policy: Policy,
        node_events: Sequence[NodeEvent],
        failures: NodeFailures | None,
        seed: int,
        devices: ClusterDevices | None = None,
        observer: Observer | None = None,
        job_events: Sequence[MinCountEvent] = (),
    ) -> None:
        self.policy, self.seed, self.failures = policy, seed, failures
        self.evictions = _Evictions()
        self.observer = observer
        recorder: Recorder = self.evictions if observer is None else Recorders([self.evictions, observer])
        self.sched = Scheduler(policy.config(), recorder=recorder)
        resources = ResourceObjects(devices.classes, devices.slices) if devices is not None else None
        self.sched.load(nodes, [], resources=resources)
        self.gpu_drivers = devices.gpu_drivers if devices is not None else frozenset()
        self.claims: dict[str, list[str]] = {}  # pod key -> keys of the claims generated for it
        racks = self.sched.node_label(RACK)[1]
        self.result = SimulationResult(policy.name, int(self._gpus()[0].sum()), [], racks=racks)
        self.nodes = {n.metadata.name: n for n in nodes}
        self.tolerations = tolerations_for(nodes)
        self.down: set[str] = set()
        self.cordoned: set[str] = set()
        self.runs = self.result.runs = [JobRun(job, []) for job in jobs]
        self.owner: dict[str, int] = {}  # pod key -> job index
        self.waiting: set[int] = set()
        self.heap: list[tuple[float, int, int, int]] = [(job.submit, _ARRIVE, i, i) for i, job in enumerate(jobs)]
        self.events: list[tuple[NodeEvent, bool]] = []  # (event, generated): node events by heap index
        self.rngs = {name: random.Random(f"{seed}:{name}") for name in sorted(self.nodes)} if failures else {}
        _check_targets(node_events, self.nodes)
        for event in node_events:
            self._push_node_event(event, False)
        self.job_events = list(job_events)
        index = {job.name: i for i, job in enumerate(jobs)}
        unknown = [f'jobEvents[{k}]: no job "{e.job}"' for k, e in enumerate(self.job_events) if e.job not in index]
        if unknown:
            raise InputError(unknown)
        self.heap += [(e.time, _MIN_COUNT, index[e.job], k) for k, e in enumerate(self.job_events)]
        self.horizon = max((j.submit for j in jobs), default=0.0) + sum(j.duration for j in jobs)
        if failures is not None:
            for name in sorted(self.nodes):
                self._push_failure(name, 0.0)
        heapq.heapify(self.heap)

    # --- the loop ------------------------------------------------------------------------------------------------

    def run(
        self,
        progress: Callable[[int], None] | None,
        on_step: Callable[[Scheduler, float], None] | None,
    ) -> SimulationResult:
        while self.heap:
            now = self.heap[0][0]
            while self.heap and self.heap[0][0] == now:
                _, kind, tag, i = heapq.heappop(self.heap)
                self._dispatch(now, kind, tag, i, progress)
            self.sched.run()
            self.result.cycles += 1
            # Preemption victims' jobs start over: their other pods are deleted and the job is submitted again.
            hit = sorted({self.owner[e.namespace + "/" + e.name] for e in self.evictions.take()})
            for i in hit:
                self._restart(i, now, "preemption")
            if hit:
                self.sched.run()
            self._start_ready(now)
            self.result.samples.append(self._sample(now))
            if on_step is not None:
                on_step(self.sched, now)
            if self.observer is not None:
                self.observer(now, self.sched, self.runs, self.waiting)
        return self.result

    def _dispatch(self, now: float, kind: int, tag: int, i: int, progress: Callable[[int], None] | None) -> None:
        if kind == _NODE:
            self._node_event(now, i)
            return
        if kind == _MIN_COUNT:
            self._min_count(now, tag, self.job_events[i].min_count)
            return
        run = self.runs[i]
        if kind == _ARRIVE:
            run.pods = self._submit(i, now)
        elif tag != run.restarts or run.start is None or run.end is not None:
            return  # an event of an attempt that ended early
        elif kind == _COMPLETE:
            self._delete_pods(run)
            run.end = now
            if progress:
                progress(1)
        else:
            self._attempt_failed(i, now, 1, "podFailure")

    def _start_ready(self, now: float) -> None:
        node_of = self.sched.node_of
        for i in sorted(self.waiting):
            run = self.runs[i]
            tree = run.job.tree
            if tree:
                ready = tree_satisfied(tree, run.pods, node_of)
            else:
                needed = min(run.job.gang, len(run.pods)) if run.elastic else len(run.pods)
                ready = sum(1 for k in run.pods if node_of(k) is not None) >= needed
            if ready:
                run.start = now
                self.waiting.discard(i)
                for change in run.min_count_changes:
                    if change.waited_before is not None and change.waited_after is None:
                        change.waited_after = now - change.time
                heapq.heappush(self.heap, (now + run.job.duration, _COMPLETE, run.restarts, i))
                self._maybe_pod_failure(i, now)

    def _maybe_pod_failure(self, i: int, now: float) -> None:
        """Draw whether this attempt fails, and when: one draw per (seed, job, attempt), so it is reproducible."""
        run = self.runs[i]
        p = run.job.failure_probability
        if p <= 0:
            return
        rng = random.Random(f"{self.seed}:{run.job.name}:{run.restarts}")
        if rng.random() < p:
            heapq.heappush(self.heap, (now + rng.random() * run.job.duration, _POD_FAILURE, run.restarts, i))

    # --- jobs ----------------------------------------------------------------------------------------------------

    def _submit(self, i: int, now: float) -> list[str]:
        run = self.runs[i]
        run.queued_since = now
        if run.job.tree is not None:
            return self._submit_tree(i)
        gang = self.policy.gang
        group, pods = job_objects(run.job, run.restarts, gang, self.policy.topology, self.tolerations)
        run.group = None
        if group is not None:
            self.sched.add_pod_group(group)
            run.group = f"{NAMESPACE}/{group.metadata.name}"
        self._generate_claims(run, pods, group)
        keys = [self.sched.add_pod(pod).key for pod in pods]
        self.owner.update((k, i) for k in keys)
        self.waiting.add(i)
        return keys

    def _submit_tree(self, i: int) -> list[str]:
        """A tree job's CompositePodGroup, then its PodGroups, then its pods (the order a snapshot loads them)."""
        run, job = self.runs[i], self.runs[i].job
        assert job.tree is not None
        name = job_name(job, run.restarts)
        root, groups, pods = tree_objects(
            name, job.tree, job.priority, self.policy.gang, self.policy.topology, self.tolerations, job.submit
        )
        run.group, run.composite, run.tree_groups = None, None, []
        if root is not None:
            self.sched.add_composite_pod_group(root)
            run.composite = f"{NAMESPACE}/{name}"
        for group in groups:
            self.sched.add_pod_group(group)
            run.tree_groups.append(f"{NAMESPACE}/{group.metadata.name}")
        keys = [self.sched.add_pod(pod).key for pod in pods]
        self.owner.update((k, i) for k in keys)
        self.waiting.add(i)
        return keys

    def _generate_claims(self, run: JobRun, pods: list[Pod], group: PodGroup | None) -> None:
        """The resourceclaim controller's step, before the pods reach the scheduler: each pod's claim from the
        attempt's template (the pods' ``status.resourceClaimStatuses`` name them)."""
        template = claim_template_of(run.job, run.restarts)
        if template is None:
            return
        out = generate_claims(pods, [group] if group is not None else [], [template], [])
        for claim in out.claims:
            self.sched.add_resource_claim(claim, template.metadata.name)
        for pod in pods:
            names = [s.resource_claim_name for s in pod.status.resource_claim_statuses if s.resource_claim_name]
            self.claims[f"{NAMESPACE}/{pod.metadata.name}"] = [f"{NAMESPACE}/{name}" for name in names]

    def _delete_pods(self, run: JobRun) -> None:
        """Delete the attempt's pods and, as the garbage collector does for claims a pod owns, their claims: the
        engine frees a claim with its last consumer, but a pod deleted before it was bound leaves its claim."""
        for key in run.pods:
            self.sched.delete_pod(key)
            for claim in self.claims.pop(key, ()):
                if self.sched.claim(claim) is not None:
                    self.sched.delete_resource_claim(*claim.split("/", 1))

    def _stop(self, run: JobRun, now: float, cause: str) -> None:
        """End the current attempt: count its lost GPU time and delete its pods and PodGroup."""
        if run.start is not None:
            lost = (now - run.start) * run.job.gpus * run.job.pods
            run.lost_gpu_seconds += lost
            run.lost_by[cause] += lost
        self._delete_pods(run)
        if run.group:
            self.sched.delete_pod_group(run.group)
        for key in run.tree_groups:
            self.sched.delete_pod_group(key)
        if run.composite:
            self.sched.delete_composite_pod_group(run.composite)
        run.start = None

    def _restart(self, i: int, now: float, cause: str) -> None:
        run = self.runs[i]
        self._stop(run, now, cause)
        run.restarts += 1
        run.restarts_by[cause] += 1
        run.pods = self._submit(i, now)

    def _attempt_failed(self, i: int, now: float, pods: int, cause: str) -> None:
        """``pods`` of the job failed: the job restarts, or fails once more pods failed than its backoffLimit."""
        run = self.runs[i]
        run.failed_pods += pods
        if not backoff_limit_exceeded(batch_job(run.job, run.restarts), run.failed_pods):
            self._restart(i, now, cause)
            return
        self._stop(run, now, cause)
        run.failed = now
        run.pods = []
        self.waiting.discard(i)

    def _min_count(self, now: float, i: int, min_count: int) -> None:
        """The job's gang minCount changes (``jobEvents``): later attempts have it too, and a PodGroup waiting to be
        scheduled is updated in the engine, which retries its gang at once (a decrease may let it fit)."""
        run = self.runs[i]
        arrived = bool(run.pods) and run.failed is None and run.end is None
        waiting = arrived and run.start is None
        old = run.job.gang
        run.job = replace(run.job, min_count=min_count)
        run.min_count_changes.append(MinCountChange(now, old, min_count, now - run.queued_since if waiting else None))
        if waiting and run.group is not None and run.job.tree is None:
            group, _ = job_objects(run.job, run.restarts, self.policy.gang, self.policy.topology, self.tolerations)
            if group is not None:
                self.sched.add_pod_group(group)

    # --- nodes ---------------------------------------------------------------------------------------------------

    def _push_node_event(self, event: NodeEvent, generated: bool) -> None:
        self.events.append((event, generated))
        heapq.heappush(self.heap, (event.time, _NODE, 0, len(self.events) - 1))

    def _push_failure(self, name: str, after: float) -> None:
        assert self.failures is not None
        at = self.failures.next_failure(self.rngs[name], after)
        if at <= self.horizon:
            self._push_node_event(NodeEvent(at, "fail", name, duration=self.failures.repair_hours * 3600), True)

    def _node_event(self, now: float, index: int) -> None:
        event, generated = self.events[index]
        if generated and event.action == "fail" and all(r.end is not None or r.failed is not None for r in self.runs):
            return  # every job is done: stop failing nodes, so the run ends
        targets = _targets(event, self.nodes, self.down, self.cordoned)
        if generated and not targets and event.action == "fail":
            self._push_failure(event.node, now)  # down already (an explicit event): try again later
        for name in targets:
            {"fail": self._fail, "drain": self._drain, "recover": self._recover}[event.action](now, name)
            self.result.node_log.append((now, event.action, name))
            if event.duration is not None and event.action != "recover":
                self._push_node_event(NodeEvent(now + event.duration, "recover", name), generated)
            if generated and event.action == "recover":
                self._push_failure(name, now)

    def _fail(self, now: float, name: str) -> None:
        """The node disappears; its pods fail, and each job that had pods there restarts or fails."""
        self.down.add(name)
        hit = Counter(self.owner[pi.key] for pi in self.sched.delete_node(name))
        for i in sorted(hit):
            self._attempt_failed(i, now, hit[i], "nodeFailure")

    def _drain(self, now: float, name: str) -> None:
        """Cordon the node and evict its pods: their jobs start over, as preemption victims do."""
        self.cordoned.add(name)
        node = self.nodes[name]
        spec = msgspec.structs.replace(node.spec, unschedulable=True)
        self.sched.update_node(msgspec.structs.replace(node, spec=spec))
        for i in sorted({self.owner[key] for key in self.sched.pods_on(name)}):
            self._restart(i, now, "drain")

    def _recover(self, now: float, name: str) -> None:
        """A failed node comes back, or a cordoned one is uncordoned, as its Node object was at the start."""
        if name in self.down:
            self.sched.add_node(self.nodes[name])
        else:
            self.sched.update_node(self.nodes[name])
        self.down.discard(name)
        self.cordoned.discard(name)

    # --- samples -------------------------------------------------------------------------------------------------

    def _gpus(self) -> tuple[np.ndarray, np.ndarray]:
        """(allocatable, allocated) GPUs per node row: ``nvidia.com/gpu`` plus GPU devices."""
        alloc, used = self.sched.resource_usage(GPU)
        if not self.gpu_drivers:
            return alloc, used
        total, taken = self.sched.gpu_devices(self.gpu_drivers)
        # On a node that does not advertise nvidia.com/gpu, a pod's request for it is served by a device claim
        # (DRAExtendedResource) and already counted among the allocated devices.
        return alloc + total, np.where(alloc > 0, used, 0) + taken

    def _sample(self, now: float) -> Sample:
        alloc, used = self._gpus()
        node_of = self.sched.node_of
        runs = self.runs
        held = sum(runs[i].job.gpus * sum(1 for k in runs[i].pods if node_of(k) is not None) for i in self.waiting)
        pending = [runs[i].job.gpus for i in self.waiting if runs[i].job.gpus]
        free = alloc - used
        smallest = min(pending) if pending else 0
        fragmented = int(free[(free > 0) & (free < smallest)].sum()) if smallest else 0
        running = sum(1 for r in runs if r.start is not None and r.end is None)
        return Sample(
            now,
            int(used.sum()),
            running,
            len(self.waiting),
            held,
            fragmented,
            self._rack_allocation(alloc, used),
            int(alloc.sum()),
        )

    def _rack_allocation(self, alloc: np.ndarray, used: np.ndarray) -> list[float]:
        """Allocated / allocatable GPUs per rack of the starting cluster (a rack whose nodes are all down is 0)."""
        racks = self.result.racks
        if not racks:
            return []
        rack_codes, values = self.sched.node_label(RACK)
        # The column's value ids follow the current rows; map them onto the racks of the starting cluster.
        order = np.array([racks.index(v) for v in values], dtype=np.int64)
        has = rack_codes >= 0
        codes = order[rack_codes[has]] if len(order) else np.zeros(0, dtype=np.int64)
        a = np.bincount(codes, weights=alloc[has], minlength=len(racks))
        u = np.bincount(codes, weights=used[has], minlength=len(racks))
        return [round(float(x), 3) for x in np.where(a > 0, u / np.maximum(a, 1), 0.0)]


def _check_targets(events: Sequence[NodeEvent], nodes: dict[str, Node]) -> None:
    pools = {n.metadata.labels.get(POOL_LABEL) for n in nodes.values()}
    problems = [
        f"nodeEvents[{k}]: " + (f'node "{e.node}" is not in the cluster' if e.node else f'no pool "{e.pool}"')
        for k, e in enumerate(events)
        if (e.node and e.node not in nodes) or (e.pool and e.pool not in pools)
    ]
    if problems:
        raise InputError(problems)


def _targets(event: NodeEvent, nodes: dict[str, Node], down: set[str], cordoned: set[str]) -> list[str]:
    """The nodes ``event`` acts on: the named one, or the first ``count`` of its pool (name order) the action
    applies to; an action that does not apply (failing a node that is down) is skipped."""
    names = (
        [event.node]
        if event.node
        else sorted(n for n in nodes if nodes[n].metadata.labels.get(POOL_LABEL) == event.pool)
    )
    return [n for n in names if _applies(event.action, n, down, cordoned)][: event.count]


def _applies(action: str, name: str, down: set[str], cordoned: set[str]) -> bool:
    if action == "fail":
        return name not in down
    if action == "drain":
        return name not in down and name not in cordoned
    return name in down or name in cordoned
