"""Workload and PodGroup validation of ``scheduling.k8s.io/v1alpha2`` (Kubernetes v1.36), on the objects as written.

Follows the declarative rules of v1.36 (workload-api spec §1.10) with every feature gate on, so the gated fields
(schedulingConstraints, resourceClaims, disruptionMode, priorityClassName, priority) are allowed. v1.37's rules are
in :mod:`phalanx.api.validation.pod_group` and :mod:`phalanx.api.validation.workload`.
"""

from __future__ import annotations

from phalanx.api import scheduling_v1alpha2 as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation import group_fields as g
from phalanx.api.validation.meta import validate_object_meta

__all__ = ["validate_pod_group_v1alpha2", "validate_topology_annotations", "validate_workload_v1alpha2"]

DISRUPTION_MODES = m.DISRUPTION_MODES
MAX_POD_GROUP_TEMPLATES = 8
_PRIORITY_RANGE = (-2_147_483_648, 1_000_000_000)


def validate_pod_group_v1alpha2(pg: m.PodGroup) -> list[FieldError]:
    """Every problem with a v1alpha2 PodGroup, as kube-apiserver v1.36 reports them on create."""
    errs = validate_object_meta(pg.metadata, namespaced=True)
    # spec is a required struct in the API: an absent spec is an empty one, so its own rules report it.
    spec = pg.spec or m.PodGroupSpec()
    errs += _validate_template_ref(spec.pod_group_template_ref)
    errs += _validate_group_fields("spec", spec)
    claim_names = {claim.name for claim in spec.resource_claims}
    errs += g.validate_claim_statuses("status.resourceClaimStatuses", pg.status.resource_claim_statuses, claim_names)
    errs += validate_topology_annotations(pg.metadata.annotations)
    return errs


# phalanx's topology intents (docs/topology.md); kube-apiserver ignores annotations, phalanx reads them.
_TOPOLOGY_KEYS = ("scheduling.phalanx.dev/topology-required", "scheduling.phalanx.dev/topology-preferred")
_UNCONSTRAINED = "scheduling.phalanx.dev/topology-unconstrained"


def validate_topology_annotations(notes: dict[str, str]) -> list[FieldError]:
    """phalanx's own topology annotations on a PodGroup (any version)."""
    errs: list[FieldError] = []
    for key in _TOPOLOGY_KEYS:
        if key in notes:
            errs += f.qualified_name(f"metadata.annotations[{key}]", notes[key])
    if _UNCONSTRAINED in notes and notes[_UNCONSTRAINED] not in ("true", "false"):
        errs.append(
            FieldError.unsupported(f"metadata.annotations[{_UNCONSTRAINED}]", notes[_UNCONSTRAINED], ["true", "false"])
        )
    given = [k for k in (*_TOPOLOGY_KEYS, _UNCONSTRAINED) if k in notes]
    if len(given) > 1:
        errs.append(FieldError.forbidden("metadata.annotations", f"at most one of {', '.join(given)} may be set"))
    return errs


def _validate_group_fields(path: str, group: m.PodGroupSpec | m.PodGroupTemplate) -> list[FieldError]:
    """The fields a PodGroup spec and a PodGroupTemplate have in common, in the API's field order."""
    errs = g.validate_policy(f"{path}.schedulingPolicy", group.scheduling_policy)
    errs += g.validate_constraints(f"{path}.schedulingConstraints", group.scheduling_constraints)
    errs += g.validate_claims(f"{path}.resourceClaims", group.resource_claims)
    errs += f.enum(f"{path}.disruptionMode", group.disruption_mode, DISRUPTION_MODES)
    if group.priority_class_name:
        errs += f.dns_subdomain(f"{path}.priorityClassName", group.priority_class_name)
    if group.priority is not None:
        errs += _validate_priority(f"{path}.priority", group.priority)
    return errs


def _validate_template_ref(ref: m.PodGroupTemplateReference | None) -> list[FieldError]:
    if ref is None:
        return []
    path = "spec.podGroupTemplateRef"
    errs = f.union(path, {"workload": ref.workload is not None})
    if ref.workload is not None:
        at = f"{path}.workload"
        errs += f.required(f"{at}.workloadName", ref.workload.workload_name, f.dns_subdomain)
        errs += f.required(f"{at}.podGroupTemplateName", ref.workload.pod_group_template_name, f.dns_label)
    return errs


def _validate_priority(path: str, priority: int) -> list[FieldError]:
    low, high = _PRIORITY_RANGE
    if priority < low:
        return [FieldError.invalid(path, priority, f"must be greater than or equal to {low}")]
    if priority > high:
        return [FieldError.invalid(path, priority, f"must be less than or equal to {high}")]
    return []


def validate_workload_v1alpha2(workload: m.Workload) -> list[FieldError]:
    """Every problem with a v1alpha2 Workload, as kube-apiserver v1.36 reports them on create."""
    errs = validate_object_meta(workload.metadata, namespaced=True)
    # spec is a required struct in the API: an absent spec is an empty one, so its own rules report it.
    spec = workload.spec or m.WorkloadSpec()
    if spec.controller_ref is not None:
        errs += g.validate_controller_ref(spec.controller_ref)
    errs += _validate_templates(spec.pod_group_templates)
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
        errs += _validate_group_fields(at, template)
    return errs
