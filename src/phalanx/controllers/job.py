"""The Job controller's part that matters for scheduling (spec §6, Job integration phase 1, gate WorkloadWithJob).

An eligible Job (``parallelism > 1``, ``completionMode: Indexed``, ``completions == parallelism``, no
``schedulingGroup`` in its template) gets a Workload with one template ``worker-0`` (gang, minCount = parallelism)
and a PodGroup copying its policy; its pods name the PodGroup. Other Jobs get pods only, scheduled one by one.
Pods are created for the indexes (or slots) not yet active or succeeded, up to ``parallelism`` at once.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from phalanx.api import models as m

__all__ = [
    "INDEX_LABEL",
    "REASON_BACKOFF_LIMIT_EXCEEDED",
    "JobObjects",
    "backoff_limit_exceeded",
    "gang_eligible",
    "pod_group_name",
    "reconcile_job",
    "uid_of",
    "workload_name",
]

TEMPLATE_NAME = "worker-0"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
_MAX_NAME = 253
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"  # the reason of the Job's Failed condition


@dataclass
class JobObjects:
    """What reconciling one Job creates (objects that already exist are not repeated)."""

    workload: m.Workload | None = None
    pod_group: m.PodGroup | None = None
    pods: list[m.Pod] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # WorkloadCreated, AmbiguousWorkload, AmbiguousPodGroup


def backoff_limit_exceeded(job: m.Job, failed_pods: int) -> bool:
    """Whether the Job has failed (condition Failed, reason BackoffLimitExceeded): more pods failed than
    ``spec.backoffLimit``. Every failed pod counts, as without a podFailurePolicy; the controller then creates no
    more pods."""
    return failed_pods > job.spec.backoff_limit


def gang_eligible(job: m.Job) -> bool:
    spec = job.spec
    return (
        spec.parallelism is not None
        and spec.parallelism > 1
        and spec.completion_mode == "Indexed"
        and spec.completions == spec.parallelism
        and spec.template.spec.scheduling_group is None
    )


def _hash(text: str) -> str:
    return format(zlib.crc32(text.encode()), "08x")


def workload_name(job: m.Job) -> str:
    """``<job name>-<hash of the Job's uid>``, truncated to a DNS subdomain (the hash differs from upstream's)."""
    suffix = _hash(job.metadata.uid or f"{job.metadata.namespace}/{job.metadata.name}")
    return f"{job.metadata.name[: _MAX_NAME - len(suffix) - 1]}-{suffix}"


def pod_group_name(workload: str, template: str = TEMPLATE_NAME) -> str:
    suffix = _hash(workload + template)
    return f"{f'{workload}-{template}'[: _MAX_NAME - len(suffix) - 1]}-{suffix}"


def uid_of(kind: str, meta: m.ObjectMeta) -> str:
    """The object's uid, or a stable one derived from its identity (objects a snapshot holds or we generate)."""
    return meta.uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"phalanx:{kind}/{meta.namespace}/{meta.name}"))


def _owner(job: m.Job) -> m.OwnerReference:
    return m.OwnerReference(
        api_version="batch/v1",
        kind="Job",
        name=job.metadata.name,
        uid=uid_of("Job", job.metadata),
        controller=True,
        block_owner_deletion=True,
    )


def reconcile_job(
    job: m.Job, workloads: Iterable[m.Workload], pod_groups: Iterable[m.PodGroup], pods: Iterable[m.Pod]
) -> JobObjects:
    """One sync of ``job`` against the objects of its namespace; returns what the controller would create."""
    ns = job.metadata.namespace
    out = JobObjects()
    if job.spec.suspend:
        return out
    own = [p for p in pods if p.metadata.namespace == ns and _owned_by(p, job)]
    group_name = _ensure_gang(
        job,
        [w for w in workloads if w.metadata.namespace == ns],
        [g for g in pod_groups if g.metadata.namespace == ns],
        bool(own),
        out,
    )
    out.pods = _missing_pods(job, own, group_name)
    return out


def _owned_by(pod: m.Pod, job: m.Job) -> bool:
    return any(r.kind == "Job" and r.name == job.metadata.name and r.controller for r in pod.metadata.owner_references)


def _ensure_gang(
    job: m.Job, workloads: list[m.Workload], groups: list[m.PodGroup], has_pods: bool, out: JobObjects
) -> str | None:
    """ensureWorkloadAndPodGroup: discover or create the Workload and PodGroup; the PodGroup's name, or None."""
    if not gang_eligible(job):
        return None
    found = [
        w
        for w in workloads
        if w.spec
        and w.spec.controller_ref
        and w.spec.controller_ref.kind == "Job"
        and w.spec.controller_ref.api_group == "batch"
        and w.spec.controller_ref.name == job.metadata.name
    ]
    if len(found) > 1:
        out.events.append("AmbiguousWorkload")
        return None
    if not found and has_pods:
        return None  # the Job predates the gate: leave it alone
    workload = found[0] if found else _new_workload(job, out)
    if workload.spec is None or len(workload.spec.pod_group_templates) != 1:
        return None
    template = workload.spec.pod_group_templates[0]
    refs = [
        g
        for g in groups
        if g.spec
        and g.spec.pod_group_template_ref
        and g.spec.pod_group_template_ref.workload
        and g.spec.pod_group_template_ref.workload.workload_name == workload.metadata.name
    ]
    if len(refs) > 1:
        out.events.append("AmbiguousPodGroup")
        return None
    if refs:
        return refs[0].metadata.name
    out.pod_group = _new_pod_group(job, workload, template)
    return out.pod_group.metadata.name


def _new_workload(job: m.Job, out: JobObjects) -> m.Workload:
    assert job.spec.parallelism is not None
    workload = m.Workload(
        metadata=m.ObjectMeta(
            name=workload_name(job),
            namespace=job.metadata.namespace,
            creation_timestamp=job.metadata.creation_timestamp,
            owner_references=[_owner(job)],
        ),
        spec=m.WorkloadSpec(
            controller_ref=m.TypedLocalObjectReference(api_group="batch", kind="Job", name=job.metadata.name),
            pod_group_templates=[
                m.PodGroupTemplate(
                    name=TEMPLATE_NAME,
                    scheduling_policy=m.PodGroupSchedulingPolicy(
                        gang=m.GangSchedulingPolicy(min_count=job.spec.parallelism)
                    ),
                )
            ],
        ),
    )
    out.workload = workload
    out.events.append("WorkloadCreated")
    return workload


def _new_pod_group(job: m.Job, workload: m.Workload, template: m.PodGroupTemplate) -> m.PodGroup:
    workload_owner = m.OwnerReference(
        api_version="scheduling.k8s.io/v1alpha2",
        kind="Workload",
        name=workload.metadata.name,
        uid=uid_of("Workload", workload.metadata),
    )
    return m.PodGroup(
        metadata=m.ObjectMeta(
            name=pod_group_name(workload.metadata.name, template.name),
            namespace=job.metadata.namespace,
            creation_timestamp=job.metadata.creation_timestamp,
            owner_references=[_owner(job), workload_owner],
        ),
        spec=m.PodGroupSpec(
            pod_group_template_ref=m.PodGroupTemplateReference(
                workload=m.WorkloadPodGroupTemplateReference(
                    workload_name=workload.metadata.name, pod_group_template_name=template.name
                )
            ),
            scheduling_policy=template.scheduling_policy,
        ),
    )


def _missing_pods(job: m.Job, own: list[m.Pod], group: str | None) -> list[m.Pod]:
    spec = job.spec
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    completions = spec.completions
    succeeded = [p for p in own if p.status.phase == "Succeeded"]
    failed = [p for p in own if p.status.phase == "Failed"]
    active = [p for p in own if p.status.phase not in ("Succeeded", "Failed")]
    if backoff_limit_exceeded(job, len(failed)):
        return []
    if spec.completion_mode == "Indexed":
        total = completions if completions is not None else parallelism
        taken = {p.metadata.labels.get(INDEX_LABEL) for p in (*succeeded, *active)}
        free = [i for i in range(total) if str(i) not in taken]
        # A failed index is retried by a pod of a new name (the failures so far make the suffix differ).
        return [_pod(job, i, group, len(failed)) for i in free[: max(parallelism - len(active), 0)]]
    remaining = parallelism if completions is None else min(parallelism, completions - len(succeeded))
    start = len(own)
    return [_pod(job, None, group, start + k) for k in range(max(remaining - len(active), 0))]


def _pod(job: m.Job, index: int | None, group: str | None, serial: int = 0) -> m.Pod:
    template = job.spec.template
    labels = {**template.metadata.labels, JOB_NAME_LABEL: job.metadata.name, "job-name": job.metadata.name}
    annotations = dict(template.metadata.annotations)
    if index is not None:
        labels[INDEX_LABEL] = str(index)
        annotations[INDEX_LABEL] = str(index)
    base = f"{job.metadata.name}-{index}" if index is not None else job.metadata.name
    # kube appends a random suffix (generateName); a hash keeps snapshots reproducible.
    name = f"{base}-{_hash(f'{job.metadata.namespace}/{base}/{serial}')[:5]}"
    spec = template.spec
    if group is not None:
        spec = msgspec.structs.replace(spec, scheduling_group=m.PodSchedulingGroup(pod_group_name=group))
    return m.Pod(
        metadata=m.ObjectMeta(
            name=name,
            namespace=job.metadata.namespace,
            labels=labels,
            annotations=annotations,
            creation_timestamp=job.metadata.creation_timestamp,
            owner_references=[_owner(job)],
        ),
        spec=spec,
    )
