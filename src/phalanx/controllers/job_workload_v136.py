"""Job integration phase 1, as kube-controller-manager v1.36 does it (WorkloadWithJob, alpha): ``--compat v1.36``.

Only a gang-shaped Job takes part: ``parallelism > 1``, ``completionMode: Indexed``, ``completions ==
parallelism`` and no ``schedulingGroup`` in its pod template. Its Workload has one template ``<job>-pgt-0``
(gang, ``minCount = parallelism``); its PodGroup copies the policy and nothing else, and is owned by the Job
(controller) and the Workload. ``spec.scheduling`` does not exist in v1.36 and is ignored.
"""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.controllers import job_names as names
from phalanx.controllers.job_objects import JobObjects
from phalanx.controllers.job_owners import controlled_by, is_new_job, job_owner, uid_of

__all__ = ["ensure_gang_v136", "gang_eligible"]

_WORKLOAD_VERSION = "scheduling.k8s.io/v1alpha2"


def gang_eligible(job: m.Job) -> bool:
    spec = job.spec
    return (
        spec.parallelism is not None
        and spec.parallelism > 1
        and spec.completion_mode == "Indexed"
        and spec.completions == spec.parallelism
        and spec.template.spec.scheduling_group is None
    )


def ensure_gang_v136(
    job: m.Job, workloads: list[m.Workload], groups: list[m.PodGroup], has_pods: bool, out: JobObjects
) -> m.PodGroup | None:
    """ensureWorkloadAndPodGroup of v1.36: discover or create the Workload and PodGroup; the PodGroup, or None."""
    if not gang_eligible(job):
        return None
    found = [w for w in workloads if _references(w, job)]
    if len(found) > 1:
        out.events.append("AmbiguousWorkload")
        return None
    if not found and not is_new_job(job, has_pods):
        return None  # the Job predates the gate: leave it alone
    workload = found[0] if found else _new_workload(job, out)
    if (
        not controlled_by(workload.metadata, job)
        or workload.spec is None
        or len(workload.spec.pod_group_templates) != 1
    ):
        return None
    refs = [
        g
        for g in groups
        if g.spec and g.spec.workload_ref and g.spec.workload_ref.workload_name == workload.metadata.name
    ]
    if len(refs) > 1:
        out.events.append("AmbiguousPodGroup")
        return None
    if refs:
        return refs[0] if controlled_by(refs[0].metadata, job) else None
    out.pod_group = _new_pod_group(job, workload, workload.spec.pod_group_templates[0])
    return out.pod_group


def _references(workload: m.Workload, job: m.Job) -> bool:
    ref = workload.spec.controller_ref if workload.spec else None
    return ref is not None and (ref.api_group, ref.kind, ref.name) == ("batch", "Job", job.metadata.name)


def _new_workload(job: m.Job, out: JobObjects) -> m.Workload:
    assert job.spec.parallelism is not None
    gang = m.PodGroupSchedulingPolicy(gang=m.GangSchedulingPolicy(min_count=job.spec.parallelism))
    workload = m.Workload(
        metadata=m.ObjectMeta(
            name=names.workload_name(job.metadata.name, uid_of("Job", job.metadata)),
            namespace=job.metadata.namespace,
            creation_timestamp=job.metadata.creation_timestamp,
            owner_references=[job_owner(job)],
        ),
        spec=m.WorkloadSpec(
            controller_ref=m.TypedLocalObjectReference(api_group="batch", kind="Job", name=job.metadata.name),
            pod_group_templates=[
                m.PodGroupTemplate(name=names.template_name(job.metadata.name), scheduling_policy=gang)
            ],
        ),
    )
    out.workload = workload
    out.events.append("WorkloadCreated")
    return workload


def _new_pod_group(job: m.Job, workload: m.Workload, template: m.PodGroupTemplate) -> m.PodGroup:
    workload_owner = m.OwnerReference(
        api_version=_WORKLOAD_VERSION,
        kind="Workload",
        name=workload.metadata.name,
        uid=uid_of("Workload", workload.metadata),
    )
    ref = m.WorkloadReference(workload_name=workload.metadata.name, template_name=template.name)
    return m.PodGroup(
        metadata=m.ObjectMeta(
            name=names.pod_group_name(workload.metadata.name, template.name),
            namespace=job.metadata.namespace,
            creation_timestamp=job.metadata.creation_timestamp,
            owner_references=[job_owner(job), workload_owner],
        ),
        # v1alpha2 defaults disruptionMode to Pod: the internal model says single.
        spec=m.PodGroupSpec(
            workload_ref=ref,
            scheduling_policy=template.scheduling_policy,
            disruption_mode=m.DisruptionMode(single=m.SingleDisruptionMode()),
        ),
    )
