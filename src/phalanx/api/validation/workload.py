"""Workload validation (``scheduling.k8s.io/v1alpha2``): the controller reference and 1..8 PodGroup templates."""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation.meta import validate_object_meta
from phalanx.api.validation.pod_group import validate_group_fields

__all__ = ["MAX_POD_GROUP_TEMPLATES", "validate_workload"]

MAX_POD_GROUP_TEMPLATES = 8


def validate_workload(workload: m.Workload) -> list[FieldError]:
    """Every problem with a Workload, as kube-apiserver reports them on create."""
    errs = validate_object_meta(workload.metadata, namespaced=True)
    # spec is a required struct in the API: an absent spec is an empty one, so its own rules report it.
    spec = workload.spec or m.WorkloadSpec()
    if spec.controller_ref is not None:
        errs += _validate_controller_ref(spec.controller_ref)
    errs += _validate_templates(spec.pod_group_templates)
    return errs


def _validate_controller_ref(ref: m.TypedLocalObjectReference) -> list[FieldError]:
    path = "spec.controllerRef"
    errs = f.dns_subdomain(f"{path}.apiGroup", ref.api_group) if ref.api_group else []
    errs += f.required(f"{path}.kind", ref.kind, f.path_segment_name)
    errs += f.required(f"{path}.name", ref.name, f.path_segment_name)
    return errs


def _validate_templates(templates: list[m.PodGroupTemplate]) -> list[FieldError]:
    path = "spec.podGroupTemplates"
    if not templates:
        return [FieldError.required(path)]
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        return [FieldError.too_many(path, len(templates), MAX_POD_GROUP_TEMPLATES)]
    errs = f.unique(path, templates, lambda template: template.name)
    for i, template in enumerate(templates):
        at = f"{path}[{i}]"
        errs += f.required(f"{at}.name", template.name, f.dns_label)
        errs += validate_group_fields(at, template)
    return errs
