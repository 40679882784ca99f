"""Job validation (batch/v1), the parts the scheduler relies on: counts, completion mode, and the pod template
checked with the pod rules under ``spec.template.spec``."""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
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
    # The template is a pod without its own name: check the spec with the pod rules, under the template's path.
    template = m.Pod(metadata=m.ObjectMeta(name="template", namespace=job.metadata.namespace), spec=spec.template.spec)
    for err in validate_pod(template):
        if err.path.startswith("spec."):
            errs.append(FieldError("spec.template." + err.path, err.message))
    return errs
