"""Job validation (batch/v1), the parts the scheduler relies on: counts, completion mode, the pod template checked with
the pod rules under ``spec.template.spec``, and v1.37's ``spec.scheduling`` (WorkloadWithJob, taken as on).

``spec.scheduling`` is checked as kube-apiserver v1.37 does: the hand-written rules with the others (a gang's
minCount at most parallelism; ``disruptionMode: all`` not with the basic policy, which an omitted policy means),
then the building blocks' declarative rules. A v1.36 server has no such field and drops it.
"""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation import group_fields as g
from phalanx.api.validation.meta import validate_object_meta
from phalanx.api.validation.pod import validate_pod

__all__ = ["MAX_INDEXED_PARALLELISM", "validate_job"]

MAX_INDEXED_PARALLELISM = 100_000  # kube-apiserver's cap, which bounds status.completedIndexes


def validate_job(job: m.Job) -> list[FieldError]:
    errs = validate_object_meta(job.metadata, namespaced=True)
    spec = job.spec
    for name, value in (
        ("parallelism", spec.parallelism),
        ("completions", spec.completions),
        ("backoffLimit", spec.backoff_limit),
    ):
        if value is not None and value < 0:
            errs.append(FieldError.invalid(f"spec.{name}", value, "must be greater than or equal to 0"))
        errs += f.int32(f"spec.{name}", value)
    errs += f.enum("spec.completionMode", spec.completion_mode, ["NonIndexed", "Indexed"])
    if spec.completion_mode == "Indexed":
        if spec.completions is None:
            errs.append(FieldError.required("spec.completions", "when completion mode is Indexed"))
        if spec.parallelism is not None and spec.parallelism > MAX_INDEXED_PARALLELISM:
            detail = f"must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed"
            errs.append(FieldError.invalid("spec.parallelism", spec.parallelism, detail))
    # The Job's strategy labels its pod template batch.kubernetes.io/job-name=<name>, so the name must be a label
    # value; kube-apiserver reports it on the template's labels.
    errs += f.label_value("spec.template.labels", job.metadata.name)
    errs += _validate_scheduling_rules(spec)
    # The template is a pod without its own name: check the spec with the pod rules, under the template's path.
    template = m.Pod(metadata=m.ObjectMeta(name="template", namespace=job.metadata.namespace), spec=spec.template.spec)
    for err in validate_pod(template):
        if err.path.startswith("spec."):
            errs.append(FieldError("spec.template." + err.path, err.message))
    if spec.scheduling is not None:
        errs += _validate_scheduling_blocks(_SCHEDULING, spec.scheduling)
    return errs


_SCHEDULING = "spec.scheduling"


def _validate_scheduling_rules(spec: m.JobSpec) -> list[FieldError]:
    """What declarative validation cannot say (validateGangMinCount, the workloadbuilder's policy checks)."""
    scheduling = spec.scheduling
    if scheduling is None:
        return []
    errs: list[FieldError] = []
    policy = scheduling.scheduling_policy
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    count = policy.gang.min_count if policy is not None and policy.gang is not None else None
    if count is not None and count > parallelism:
        detail = f"must not be greater than parallelism ({parallelism})"
        errs.append(FieldError.invalid(f"{_SCHEDULING}.schedulingPolicy.gang.minCount", count, detail))
    basic = policy is None or policy.basic is not None  # an omitted policy resolves to basic
    mode = scheduling.disruption_mode
    if basic and mode is not None and mode.all is not None:
        detail = "the disruptionMode `all` is not supported with the Basic scheduling policy"
        errs.append(FieldError.invalid(f"{_SCHEDULING}.disruptionMode", "", detail))
    return errs


def _validate_scheduling_blocks(path: str, scheduling: m.JobSchedulingConfiguration) -> list[FieldError]:
    errs: list[FieldError] = []
    if scheduling.scheduling_policy is not None:
        errs += g.validate_policy(f"{path}.schedulingPolicy", scheduling.scheduling_policy, optional_count=True)
    errs += g.validate_constraints(f"{path}.schedulingConstraints", scheduling.scheduling_constraints)
    errs += g.validate_disruption_mode(f"{path}.disruptionMode", scheduling.disruption_mode)
    errs += g.validate_claims(f"{path}.resourceClaims", scheduling.resource_claims)
    return errs
