"""The Job controller's part that matters for scheduling: a Job's pods, and its Workload and PodGroup.

The Job integration follows the Kubernetes version the controller acts as (:class:`JobControllerOptions`):

- v1.37 (the default; phase 2, :mod:`phalanx.controllers.job_workload`): every root Job gets a Workload and a
  PodGroup compiled from ``spec.scheduling`` (basic when it is omitted), a delegated Job a PodGroup from its
  parent's template;
- v1.36 (``--compat v1.36``; phase 1, :mod:`phalanx.controllers.job_workload_v136`): only a gang-shaped Indexed Job
  gets them, gang ``minCount = parallelism``.

Pods name the PodGroup in ``spec.schedulingGroup``. Pods are created for the indexes (or slots) not yet active or
succeeded, up to ``parallelism`` at once; a suspended Job gets its scheduling objects but no pods.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import msgspec

from phalanx.api import models as m
from phalanx.controllers import job_names
from phalanx.controllers.job_objects import V1_36, V1_37, VERSIONS, JobControllerOptions, JobObjects
from phalanx.controllers.job_owners import job_owner, uid_of
from phalanx.controllers.job_workload import ensure_workload_and_pod_group
from phalanx.controllers.job_workload_v136 import ensure_gang_v136, gang_eligible

__all__ = [
    "DEFAULT_OPTIONS",
    "INDEX_LABEL",
    "REASON_BACKOFF_LIMIT_EXCEEDED",
    "V1_36",
    "V1_37",
    "VERSIONS",
    "JobControllerOptions",
    "JobObjects",
    "backoff_limit_exceeded",
    "gang_eligible",
    "pod_group_name",
    "reconcile_job",
    "uid_of",
    "workload_name",
]

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"  # the reason of the Job's Failed condition
DEFAULT_OPTIONS = JobControllerOptions()


def backoff_limit_exceeded(job: m.Job, failed_pods: int) -> bool:
    """Whether the Job has failed (condition Failed, reason BackoffLimitExceeded): more pods failed than
    ``spec.backoffLimit``. Every failed pod counts, as without a podFailurePolicy; the controller then creates no
    more pods."""
    return failed_pods > job.spec.backoff_limit


def _hash(text: str) -> str:
    return format(zlib.crc32(text.encode()), "08x")


def workload_name(job: m.Job) -> str:
    """The name the controller gives the Job's Workload: ``<job name>-<hash of the Job's uid>``, as upstream."""
    return job_names.workload_name(job.metadata.name, uid_of("Job", job.metadata))


def pod_group_name(workload: str, template: str) -> str:
    return job_names.pod_group_name(workload, template)


def reconcile_job(
    job: m.Job,
    workloads: Iterable[m.Workload],
    pod_groups: Iterable[m.PodGroup],
    pods: Iterable[m.Pod],
    options: JobControllerOptions = DEFAULT_OPTIONS,
) -> JobObjects:
    """One sync of ``job`` against the objects of its namespace; returns what the controller would create."""
    ns = job.metadata.namespace
    out = JobObjects()
    own = [p for p in pods if p.metadata.namespace == ns and _owned_by(p, job)]
    ns_workloads = [w for w in workloads if w.metadata.namespace == ns]
    ns_groups = [g for g in pod_groups if g.metadata.namespace == ns]
    if options.version == V1_36:
        group = ensure_gang_v136(job, ns_workloads, ns_groups, bool(own), out)
    else:
        group = ensure_workload_and_pod_group(job, ns_workloads, ns_groups, bool(own), options, out)
    if not job.spec.suspend:
        out.pods = _missing_pods(job, own, group.metadata.name if group is not None else None)
    return out


def _owned_by(pod: m.Pod, job: m.Job) -> bool:
    return any(r.kind == "Job" and r.name == job.metadata.name and r.controller for r in pod.metadata.owner_references)


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
            owner_references=[job_owner(job)],
        ),
        spec=spec,
    )
