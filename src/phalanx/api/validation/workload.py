"""Workload validation, v1.37 (``scheduling.k8s.io/v1beta1`` and ``v1alpha3``), on the internal object.

kube-apiserver runs the hand-written rules first (pkg/apis/scheduling/validation ``ValidateWorkloadSpec``): template
names unique across the whole tree, composite templates nested at most 4 deep counting the PodGroupTemplates under
them, one priority configuration for every template, every composite template with a child. Then the declarative
rules: exactly one of ``podGroupTemplates`` and ``compositePodGroupTemplates``, at most 8 entries per list, names
unique per list, and each template's fields. v1.36's v1alpha2 Workloads are checked by
:mod:`phalanx.api.validation.scheduling_v1alpha2`.
"""

from __future__ import annotations

from phalanx.api import scheduling as s
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation import group_fields as g
from phalanx.api.validation.go_values import (
    composite_template_json,
    internal_composite_templates,
    pod_group_template_json,
)
from phalanx.api.validation.meta import validate_object_meta

__all__ = ["validate_workload"]

_PG = "podGroupTemplates"
_CPG = "compositePodGroupTemplates"


def validate_workload(workload: s.Workload) -> list[FieldError]:
    """Every problem with a Workload, as kube-apiserver v1.37 reports them on create."""
    errs = validate_object_meta(workload.metadata, namespaced=True)
    # spec is a required struct in the API: an absent spec is an empty one, so its own rules report it.
    spec = workload.spec or s.WorkloadSpec()
    errs += _unique_names(spec)
    errs += _depth(spec.composite_pod_group_templates)
    errs += _one_priority(spec)
    for i, composite in enumerate(spec.composite_pod_group_templates):
        errs += _has_children(composite, f"spec.{_CPG}[{i}]")
    errs += _declarative(spec)
    return errs


# --- hand-written rules -----------------------------------------------------------------------------------------


def _unique_names(spec: s.WorkloadSpec) -> list[FieldError]:
    """Template names are unique across the tree. Duplicates inside one list are declarative validation's."""
    names = {t.name for t in spec.pod_group_templates}
    return _composite_list_names("spec", spec.composite_pod_group_templates, names)


def _composite_list_names(path: str, templates: list[s.CompositePodGroupTemplate], names: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    listed = set()
    for i, child in enumerate(templates):
        if child.name in names:
            errs.append(FieldError.duplicate(f"{path}.{_CPG}[{i}].name", child.name))
        listed.add(child.name)
    names |= listed
    for i, child in enumerate(templates):
        errs += _composite_names(child, f"{path}.{_CPG}[{i}]", names)
    return errs


def _composite_names(composite: s.CompositePodGroupTemplate, path: str, names: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    listed = set()
    for i, child in enumerate(composite.pod_group_templates):
        if child.name in names:
            errs.append(FieldError.duplicate(f"{path}.{_PG}[{i}].name", child.name))
        listed.add(child.name)
    names |= listed
    return errs + _composite_list_names(path, composite.composite_pod_group_templates, names)


def _within_depth(composite: s.CompositePodGroupTemplate, depth: int) -> bool:
    # A composite template at depth 4 leaves no room for the PodGroups under it.
    if depth == s.MAX_TREE_DEPTH:
        return False
    return all(_within_depth(child, depth + 1) for child in composite.composite_pod_group_templates)


def _depth(templates: list[s.CompositePodGroupTemplate]) -> list[FieldError]:
    detail = f"maximum template hierarchy depth is {s.MAX_TREE_DEPTH}"
    return [
        FieldError.invalid(f"spec.{_CPG}[{i}]", internal_composite_templates(t.composite_pod_group_templates), detail)
        for i, t in enumerate(templates)
        if not _within_depth(t, 1)
    ]


def _one_priority(spec: s.WorkloadSpec) -> list[FieldError]:
    """Every template of the Workload has the same priorityClassName and priority (a tree is scheduled and
    preempted as one unit). The first template seen sets them."""
    first: list[tuple[str, int | None]] = []

    def same(t: s.PodGroupTemplate | s.CompositePodGroupTemplate) -> bool:
        if not first:
            first.append((t.priority_class_name, t.priority))
        return first[0] == (t.priority_class_name, t.priority)

    def same_tree(t: s.CompositePodGroupTemplate) -> bool:
        return (
            same(t)
            and all(same_tree(c) for c in t.composite_pod_group_templates)
            and all(same(c) for c in t.pod_group_templates)
        )

    if not all(same(t) for t in spec.pod_group_templates):
        return [FieldError.invalid("spec", None, "detected multiple priority configurations")]
    if not all(same_tree(t) for t in spec.composite_pod_group_templates):
        detail = "all priority and priorityClassName values must be identical, detected multiple values"
        return [FieldError.invalid("spec", None, detail)]
    return []


def _has_children(composite: s.CompositePodGroupTemplate, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not composite.pod_group_templates and not composite.composite_pod_group_templates:
        detail = "must have at least one child PodGroupTemplate or CompositePodGroupTemplate"
        errs.append(FieldError.invalid(path, composite.name, detail))
    for i, child in enumerate(composite.composite_pod_group_templates):
        errs += _has_children(child, f"{path}.{_CPG}[{i}]")
    return errs


# --- declarative rules ------------------------------------------------------------------------------------------


def _declarative(spec: s.WorkloadSpec) -> list[FieldError]:
    members = {_PG: bool(spec.pod_group_templates), _CPG: bool(spec.composite_pod_group_templates)}
    errs = f.union("spec", members)
    if spec.controller_ref is not None:
        errs += g.validate_controller_ref(spec.controller_ref)
    errs += _templates(f"spec.{_PG}", spec.pod_group_templates)
    errs += _composites(f"spec.{_CPG}", spec.composite_pod_group_templates)
    return errs


def _templates(path: str, templates: list[s.PodGroupTemplate]) -> list[FieldError]:
    if len(templates) > s.MAX_TEMPLATES:
        return [FieldError.too_many(path, len(templates), s.MAX_TEMPLATES)]
    errs = f.unique(path, templates, lambda t: t.name, pod_group_template_json)
    for i, t in enumerate(templates):
        at = f"{path}[{i}]"
        errs += f.required(f"{at}.name", t.name, f.dns_label)
        errs += g.validate_policy(f"{at}.schedulingPolicy", t.scheduling_policy)
        errs += g.validate_constraints(f"{at}.schedulingConstraints", t.scheduling_constraints)
        errs += g.validate_claims(f"{at}.resourceClaims", t.resource_claims)
        errs += g.validate_disruption_mode(f"{at}.disruptionMode", t.disruption_mode)
        errs += g.validate_priority_fields(at, t.priority_class_name, t.priority)
        errs += g.validate_preemption_policy(f"{at}.preemptionPolicy", t.preemption_policy)
    return errs


def _composites(path: str, templates: list[s.CompositePodGroupTemplate]) -> list[FieldError]:
    if len(templates) > s.MAX_TEMPLATES:
        return [FieldError.too_many(path, len(templates), s.MAX_TEMPLATES)]
    errs = f.unique(path, templates, lambda t: t.name, composite_template_json)
    for i, t in enumerate(templates):
        at = f"{path}[{i}]"
        errs += f.required(f"{at}.name", t.name, f.dns_label)
        errs += g.validate_composite_policy(f"{at}.schedulingPolicy", t.scheduling_policy)
        errs += g.validate_constraints(f"{at}.schedulingConstraints", t.scheduling_constraints)
        errs += g.validate_disruption_mode(f"{at}.disruptionMode", t.disruption_mode)
        errs += g.validate_priority_fields(at, t.priority_class_name, t.priority)
        errs += g.validate_preemption_policy(f"{at}.preemptionPolicy", t.preemption_policy)
        errs += _templates(f"{at}.{_PG}", t.pod_group_templates)
        errs += _composites(f"{at}.{_CPG}", t.composite_pod_group_templates)
    return errs
