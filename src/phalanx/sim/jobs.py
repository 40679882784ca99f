"""A trace job (``JobRecord``) and its Kubernetes objects: a batch/v1 Indexed Job, which the Job controller (the one
``schedule`` runs) turns into pods and, for a multi-pod job, a Workload and PodGroup carrying the trace's priority,
minCount and topology intent. A multi-pod job asks for its gang in ``spec.scheduling`` (v1.37); a single pod has no
group."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import msgspec

from phalanx.api.dra import ResourceClaimTemplate
from phalanx.api.models import (
    Container,
    GangSchedulingPolicy,
    Job,
    JobSchedulingConfiguration,
    JobSpec,
    Node,
    ObjectMeta,
    Pod,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    PodSpec,
    PodTemplateSpec,
    ResourceRequirements,
    Toleration,
)
from phalanx.controllers.job import reconcile_job
from phalanx.sim.cluster_spec import GPU
from phalanx.sim.device_claims import GpuClaim, claim_template, pod_claims
from phalanx.sim.tree_jobs import TreeRecord

__all__ = [
    "GPU",
    "NAMESPACE",
    "JobRecord",
    "batch_job",
    "claim_template_of",
    "job_name",
    "job_objects",
    "tolerations_for",
    "trace_pod_group",
]

NAMESPACE = "sim"
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True)
class JobRecord:
    """One job of a trace: ``pods`` identical pods, all needed at once when ``min_count`` equals ``pods``."""

    name: str
    submit: float  # seconds from the start
    duration: float  # seconds of running once all pods run
    pods: int
    cpu: str = "1"
    memory: str = "4Gi"
    gpus: int = 0
    min_count: int = 0  # 0: all pods
    priority: int = 0
    topology: str = ""  # "" or "required:<label>" or "preferred:<label>"
    failure_probability: float = 0.0  # chance that an attempt fails (one pod fails) before it completes
    backoff_limit: int = 6  # the Job's spec.backoffLimit: pod failures tolerated before the job fails
    claim: GpuClaim | None = None  # the pod's ``gpus`` come from a ResourceClaimTemplate instead of nvidia.com/gpu
    queue: str = ""  # the trace's queue or virtual cluster (public traces); shown in the report, not scheduled on
    tree: TreeRecord | None = None  # a CompositePodGroup job (sim.tree_jobs): ``pods`` and ``gpus`` are its groups'

    @property
    def gang(self) -> int:
        return self.min_count or self.pods


def batch_job(job: JobRecord, attempt: int, tolerations: Sequence[Toleration] = ()) -> Job:
    """The Job of one attempt. A restarted job is a new Job (``-r<n>``), as a controller recreating it would
    make, so its pods and PodGroup get new names."""
    name = job_name(job, attempt)
    requests: dict[str, str | int | float] = {"cpu": job.cpu, "memory": job.memory}
    limits: dict[str, str | int | float] = {}
    entries, refs = pod_claims(_template_name(name)) if job.claim is not None else ([], [])
    if job.gpus and job.claim is None:
        requests[GPU] = limits[GPU] = job.gpus  # an extended resource cannot be overcommitted: limit = request
    resources = ResourceRequirements(requests=requests, limits=limits, claims=refs)
    template = PodSpec(
        containers=[Container(name="main", resources=resources)],
        priority=job.priority,
        tolerations=list(tolerations),
        resource_claims=entries,
    )
    gang = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy())  # minCount: the Job's parallelism
    return Job(
        metadata=ObjectMeta(name=name, namespace=NAMESPACE, creation_timestamp=_created(job)),
        spec=JobSpec(
            parallelism=job.pods,
            completions=job.pods,
            completion_mode="Indexed",
            backoff_limit=job.backoff_limit,
            template=PodTemplateSpec(spec=template),
            scheduling=JobSchedulingConfiguration(scheduling_policy=gang) if job.pods > 1 else None,
        ),
    )


def job_name(job: JobRecord, attempt: int) -> str:
    return job.name if attempt == 0 else f"{job.name}-r{attempt}"


def _template_name(job: str) -> str:
    return f"{job}-gpus"


def claim_template_of(job: JobRecord, attempt: int) -> ResourceClaimTemplate | None:
    """The ResourceClaimTemplate the attempt's pods claim their GPUs from (None: no DRA claim)."""
    if job.claim is None:
        return None
    return claim_template(_template_name(job_name(job, attempt)), NAMESPACE, job.gpus, job.claim)


def _created(job: JobRecord) -> datetime:
    return _EPOCH + timedelta(seconds=job.submit)


def tolerations_for(nodes: Iterable[Node]) -> list[Toleration]:
    """Tolerate every taint key the cluster's nodes carry (dedicated GPU pools usually have one), but not the
    cordon: a blanket ``operator: Exists`` would also tolerate ``node.kubernetes.io/unschedulable`` and let
    pods onto drained nodes, as DaemonSet pods may."""
    keys = {t.key for n in nodes for t in n.spec.taints} - {UNSCHEDULABLE_TAINT}
    return [Toleration(key=k, operator="Exists") for k in sorted(keys)]


def job_objects(
    job: JobRecord, attempt: int, gang: bool, topology: bool, tolerations: Sequence[Toleration] = ()
) -> tuple[PodGroup | None, list[Pod]]:
    """The PodGroup (None without ``gang``: ``pod-by-pod`` models a cluster without the Workload API) and the
    pods the Job controller creates for one attempt."""
    out = reconcile_job(batch_job(job, attempt, tolerations), [], [], [])
    # A single pod's basic PodGroup (v1.37 gives every Job one) changes nothing: the pod is scheduled alone.
    pg = out.pod_group if gang and job.pods > 1 else None
    group = _with_trace_intent(pg, job, topology) if pg is not None else None
    created = _created(job)
    pods = []
    for k, pod in enumerate(out.pods):
        # The controller creates a job's pods one after another (a millisecond apart here): jobs that arrive
        # together interleave in the queue, as on a real cluster.
        meta = msgspec.structs.replace(pod.metadata, creation_timestamp=created + timedelta(milliseconds=k))
        spec = pod.spec if group is not None else msgspec.structs.replace(pod.spec, scheduling_group=None)
        pods.append(msgspec.structs.replace(pod, metadata=meta, spec=spec))
    return group, pods


def _with_trace_intent(pg: PodGroup, job: JobRecord, topology: bool) -> PodGroup:
    notes = dict(pg.metadata.annotations)
    if topology and job.topology:
        mode, _, key = job.topology.partition(":")
        notes[f"scheduling.phalanx.dev/topology-{mode}"] = key
    assert pg.spec is not None
    policy_spec = pg.spec.scheduling_policy
    if job.min_count and job.min_count != job.pods:
        policy_spec = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=job.min_count))
    # Workload-aware preemption ranks groups by the PodGroup's priority, which admission resolves.
    spec = msgspec.structs.replace(pg.spec, scheduling_policy=policy_spec, priority=job.priority)
    return msgspec.structs.replace(pg, metadata=msgspec.structs.replace(pg.metadata, annotations=notes), spec=spec)


def trace_pod_group(job: JobRecord) -> PodGroup | None:
    """The PodGroup a gang policy gives the job (None for a single pod), as the Job controller would create it
    with the trace's intent, but without creating the job's pods: what validating a trace row needs."""
    if job.pods <= 1:
        return None
    policy = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=job.pods))
    group = PodGroup(
        metadata=ObjectMeta(name=job.name, namespace=NAMESPACE), spec=PodGroupSpec(scheduling_policy=policy)
    )
    return _with_trace_intent(group, job, topology=True)
