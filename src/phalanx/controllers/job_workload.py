"""Job integration phase 2, as kube-controller-manager v1.37 does it (pkg/controller/job/job_scheduling_manager.go).

Algorithm (``ensure_workload_and_pod_group``):

1. Management mode. A Job whose pod template names a ``schedulingGroup`` brought its own group: nothing. A Job
   with no controller owner is a root: the controller makes its Workload and PodGroup. A Job whose parent (JobSet,
   LWS ...) put the annotation ``scheduling.k8s.io/group-template-name`` on it is delegated: the parent made the
   Workload, the controller makes the PodGroup from the named template. Any other owned Job: nothing.
2. Root: the Workload the Job controls (``spec.controllerRef`` names the Job, its controller owner is the Job) is
   found, or, for a Job that never started, compiled from ``spec.scheduling``: one template ``<job>-pgt-0``, basic
   unless ``schedulingPolicy.gang`` (``minCount`` defaulting to parallelism, at least 1), with the constraints,
   disruption mode and shared claims, and the pod template's priorityClassName. Then the PodGroup the Job controls
   that points at the Workload, or a new one from the template, owned by the Job (controller) and the Workload.
3. Elastic gangs: when the minCount the Job now asks for differs from the Workload's or the PodGroup's, both are
   changed (``JobObjects.updated``); the delegated PodGroup follows its parent's template instead.

More than one Workload or PodGroup of the Job: none is used (an event says so) and the pods are scheduled one by one.
"""

from __future__ import annotations

import msgspec

from phalanx.api import models as m
from phalanx.api.scheduling import GROUP_TEMPLATE_NAME_ANNOTATION, PARENT_COMPOSITE_POD_GROUP_ANNOTATION
from phalanx.controllers import job_names as names
from phalanx.controllers.job_objects import JobControllerOptions, JobObjects
from phalanx.controllers.job_owners import controlled_by, is_new_job, job_owner, uid_of

__all__ = ["compile_workload_template", "ensure_workload_and_pod_group"]

_WORKLOAD_VERSION = "scheduling.k8s.io/v1beta1"
_SINGLE = m.DisruptionMode(single=m.SingleDisruptionMode())


def ensure_workload_and_pod_group(
    job: m.Job,
    workloads: list[m.Workload],
    groups: list[m.PodGroup],
    has_pods: bool,
    options: JobControllerOptions,
    out: JobObjects,
) -> m.PodGroup | None:
    """The PodGroup the Job's pods name (found or created into ``out``), or None: scheduled one by one."""
    if job.spec.template.spec.scheduling_group is not None:
        return None
    new = is_new_job(job, has_pods)
    controller = next((r for r in job.metadata.owner_references if r.controller), None)
    if controller is None:
        workload = _root_workload(job, workloads, new, out)
        if workload is None:
            return None
        group = _root_pod_group(job, workload, groups, new, out)
        _sync_min_count(job, workload, group, out)
        return group
    if GROUP_TEMPLATE_NAME_ANNOTATION in job.metadata.annotations:
        return _delegated_pod_group(job, controller, workloads, groups, new, options, out)
    return None


# --- 2. the root Job's Workload and PodGroup --------------------------------------------------------------------


def compile_workload_template(job: m.Job) -> m.PodGroupTemplate:
    """The one PodGroupTemplate a Job's spec.scheduling compiles to (workloadbuilder with the Job's defaults)."""
    scheduling = job.spec.scheduling or m.JobSchedulingConfiguration()
    policy = scheduling.scheduling_policy
    if policy is not None and policy.gang is not None:
        parallelism = 1 if job.spec.parallelism is None else job.spec.parallelism
        count = policy.gang.min_count if policy.gang.min_count is not None else max(1, parallelism)
        compiled = m.PodGroupSchedulingPolicy(gang=m.GangSchedulingPolicy(min_count=count))
    else:
        compiled = m.PodGroupSchedulingPolicy(basic=m.BasicSchedulingPolicy())  # omitted, basic or empty
    constraints = scheduling.scheduling_constraints
    return m.PodGroupTemplate(
        name=names.template_name(job.metadata.name),
        scheduling_policy=compiled,
        scheduling_constraints=constraints if constraints is not None and constraints.topology else None,
        resource_claims=list(scheduling.resource_claims),
        disruption_mode=scheduling.disruption_mode if _is_union(scheduling.disruption_mode) else None,
        priority_class_name=job.spec.template.spec.priority_class_name,
    )


def _is_union(mode: m.DisruptionMode | None) -> bool:
    return mode is not None and (mode.single is not None or mode.all is not None)


def _root_workload(job: m.Job, workloads: list[m.Workload], new: bool, out: JobObjects) -> m.Workload | None:
    # User-made Workloads naming the Job are ignored: the controller schedules only against what it owns.
    mine = [w for w in workloads if _names_job(w, job) and controlled_by(w.metadata, job)]
    if len(mine) > 1:
        out.events.append("AmbiguousWorkload")
        return None
    if mine:
        return mine[0] if mine[0].spec is not None and len(mine[0].spec.pod_group_templates) == 1 else None
    if not new:
        return None
    workload = m.Workload(
        metadata=m.ObjectMeta(
            name=names.workload_name(job.metadata.name, uid_of("Job", job.metadata)),
            namespace=job.metadata.namespace,
            creation_timestamp=job.metadata.creation_timestamp,
            owner_references=[job_owner(job)],
        ),
        spec=m.WorkloadSpec(
            controller_ref=m.TypedLocalObjectReference(api_group="batch", kind="Job", name=job.metadata.name),
            pod_group_templates=[compile_workload_template(job)],
        ),
    )
    out.workload = workload
    out.events.append("WorkloadCreated")
    return workload


def _names_job(workload: m.Workload, job: m.Job) -> bool:
    ref = workload.spec.controller_ref if workload.spec else None
    return ref is not None and (ref.api_group, ref.kind, ref.name) == ("batch", "Job", job.metadata.name)


def _root_pod_group(
    job: m.Job, workload: m.Workload, groups: list[m.PodGroup], new: bool, out: JobObjects
) -> m.PodGroup | None:
    mine = [g for g in groups if _points_at(g, workload.metadata.name) and controlled_by(g.metadata, job)]
    if len(mine) > 1:
        out.events.append("AmbiguousPodGroup")
        return None
    if mine:
        return mine[0]
    if not new:
        return None
    assert workload.spec is not None
    workload_owner = m.OwnerReference(
        api_version=_WORKLOAD_VERSION,
        kind="Workload",
        name=workload.metadata.name,
        uid=uid_of("Workload", workload.metadata),
    )
    out.pod_group = _new_pod_group(
        job, workload, workload.spec.pod_group_templates[0], [job_owner(job), workload_owner]
    )
    out.events.append("PodGroupCreated")
    return out.pod_group


def _points_at(group: m.PodGroup, workload: str) -> bool:
    ref = group.spec.workload_ref if group.spec else None
    return ref is not None and ref.workload_name == workload


def _new_pod_group(
    job: m.Job,
    workload: m.Workload,
    template: m.PodGroupTemplate,
    owners: list[m.OwnerReference],
    parent: str | None = None,
) -> m.PodGroup:
    """``newPodGroup``: the template's scheduling fields copied, ``workloadRef`` pointing back, then the API
    server's defaults (``disruptionMode: {single: {}}``)."""
    spec = m.PodGroupSpec(
        parent_composite_pod_group_name=parent,
        workload_ref=m.WorkloadReference(workload_name=workload.metadata.name, template_name=template.name),
        scheduling_policy=template.scheduling_policy,
        scheduling_constraints=template.scheduling_constraints,
        resource_claims=list(template.resource_claims),
        disruption_mode=template.disruption_mode or _SINGLE,
        priority_class_name=template.priority_class_name,
        priority=template.priority,
        preemption_policy=template.preemption_policy,
    )
    meta = m.ObjectMeta(
        name=names.pod_group_name(workload.metadata.name, template.name),
        namespace=job.metadata.namespace,
        creation_timestamp=job.metadata.creation_timestamp,
        owner_references=owners,
    )
    return m.PodGroup(metadata=meta, spec=spec)


# --- 3. elastic gangs -------------------------------------------------------------------------------------------


def _gang_count(policy: m.PodGroupSchedulingPolicy | None) -> int | None:
    return policy.gang.min_count if policy is not None and policy.gang is not None else None


def _with_count(policy: m.PodGroupSchedulingPolicy, count: int) -> m.PodGroupSchedulingPolicy:
    return m.PodGroupSchedulingPolicy(gang=m.GangSchedulingPolicy(min_count=count))


def _sync_min_count(job: m.Job, workload: m.Workload, group: m.PodGroup | None, out: JobObjects) -> None:
    """``syncGangMinCount``: the gang minCount the Job asks for now, onto its Workload and PodGroup."""
    want = _gang_count(compile_workload_template(job).scheduling_policy)
    if want is None or workload.spec is None:
        return
    template = workload.spec.pod_group_templates[0]
    have = _gang_count(template.scheduling_policy)
    if have is not None and have != want and workload is not out.workload:
        assert template.scheduling_policy is not None
        updated = msgspec.structs.replace(template, scheduling_policy=_with_count(template.scheduling_policy, want))
        spec = msgspec.structs.replace(workload.spec, pod_group_templates=[updated])
        out.updated.append(msgspec.structs.replace(workload, spec=spec))
    _sync_group(group, want, out)


def _sync_group(group: m.PodGroup | None, want: int, out: JobObjects) -> None:
    if group is None or group is out.pod_group or group.spec is None:
        return
    have = _gang_count(group.spec.scheduling_policy)
    if have is not None and have != want:
        assert group.spec.scheduling_policy is not None
        spec = msgspec.structs.replace(group.spec, scheduling_policy=_with_count(group.spec.scheduling_policy, want))
        out.updated.append(msgspec.structs.replace(group, spec=spec))


# --- 1. a Job inside a larger workload (delegated) --------------------------------------------------------------


def _delegated_pod_group(
    job: m.Job,
    controller: m.OwnerReference,
    workloads: list[m.Workload],
    groups: list[m.PodGroup],
    new: bool,
    options: JobControllerOptions,
    out: JobObjects,
) -> m.PodGroup | None:
    """``getOrCreateDelegatedPodGroup``: the parent's Workload (its controllerRef names the Job's controller), the
    template the annotation names, and the PodGroup the Job controls, made from that template when missing. It is
    owned by the Job alone: the Workload belongs to the parent."""
    group_name = controller.api_version.split("/")[0] if "/" in controller.api_version else ""
    parent = next(
        (
            w
            for w in workloads
            if w.spec is not None
            and w.spec.controller_ref is not None
            and (w.spec.controller_ref.api_group, w.spec.controller_ref.kind, w.spec.controller_ref.name)
            == (group_name, controller.kind, controller.name)
        ),
        None,
    )
    if parent is None or parent.spec is None:
        return None  # the parent has not made it yet: the Job is synced again when it appears
    wanted = job.metadata.annotations[GROUP_TEMPLATE_NAME_ANNOTATION]
    template = next((t for t in parent.spec.pod_group_templates if t.name == wanted), None)
    if template is None:
        return None
    group = next((g for g in groups if _points_at(g, parent.metadata.name) and controlled_by(g.metadata, job)), None)
    if group is None and new:
        composite = (
            job.metadata.annotations.get(PARENT_COMPOSITE_POD_GROUP_ANNOTATION) if options.parent_annotation else None
        )
        group = out.pod_group = _new_pod_group(job, parent, template, [job_owner(job)], composite)
        out.events.append("PodGroupCreated")
    want = _gang_count(template.scheduling_policy)
    if want is not None:
        _sync_group(group, want, out)
    return group
