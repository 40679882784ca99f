"""v1.37's update rules for Workload, PodGroup and CompositePodGroup: what may change on a live object.

Read off the declarative tags of ``k8s.io/api`` v0.37.2 (``scheduling/v1beta1`` and ``v1alpha3``), with their
messages as apimachinery's ``validate`` package words them:

- ``+k8s:immutable`` fields: ``Invalid value: null: field is immutable``;
- a gang policy (``+k8s:update=NoSet,NoUnset``): ``field cannot be set once created`` / ``... cleared once set``;
- template lists keyed by name (``+k8s:update=NoAddItem,NoRemoveItem``): ``Forbidden: item may not be added`` at
  the new item, ``Forbidden: item may not be removed`` at the list.

What stays mutable is a gang's ``minCount`` (PodGroup and Workload templates) and a composite template's
``minGroupCount`` in a Workload: elastic gangs. A CompositePodGroup's ``schedulingPolicy`` is immutable as a whole
in v1.37.2 (types.go), so its ``minGroupCount`` cannot change on the live object. Like the API server, which
compares after defaulting, an omitted ``disruptionMode`` counts as ``{single: {}}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.api import scheduling as s
from phalanx.api.errors import FieldError

__all__ = ["validate_composite_pod_group_update", "validate_pod_group_update", "validate_workload_update"]

_SINGLE = s.DisruptionMode(single=s.SingleDisruptionMode())
# camelCase name -> attribute, for the immutable fields of a PodGroup or template (and a CompositePodGroup's).
_GROUP_FIELDS = {
    "schedulingConstraints": "scheduling_constraints",
    "resourceClaims": "resource_claims",
    "disruptionMode": "disruption_mode",
    "priorityClassName": "priority_class_name",
    "priority": "priority",
    "preemptionPolicy": "preemption_policy",
}
_COMPOSITE_FIELDS = {k: v for k, v in _GROUP_FIELDS.items() if k != "resourceClaims"}


def _immutable(path: str) -> FieldError:
    return FieldError.invalid(path, None, "field is immutable")


def _defaulted(name: str, value: Any) -> Any:
    return _SINGLE if name == "disruptionMode" and value is None else value


def _fields(path: str, old: object, new: object, fields: dict[str, str]) -> list[FieldError]:
    return [
        _immutable(f"{path}.{name}")
        for name, attr in fields.items()
        if _defaulted(name, getattr(old, attr)) != _defaulted(name, getattr(new, attr))
    ]


def _policy(path: str, old: Any, new: Any) -> list[FieldError]:
    """A scheduling policy (PodGroup's or composite's): ``basic`` immutable, ``gang`` neither set nor unset."""
    old_basic, new_basic = getattr(old, "basic", None), getattr(new, "basic", None)
    old_gang, new_gang = getattr(old, "gang", None), getattr(new, "gang", None)
    errs = [_immutable(f"{path}.basic")] if old_basic != new_basic else []
    if old_gang is None and new_gang is not None:
        errs.append(FieldError.invalid(f"{path}.gang", None, "field cannot be set once created"))
    elif old_gang is not None and new_gang is None:
        errs.append(FieldError.invalid(f"{path}.gang", None, "field cannot be cleared once set"))
    return errs


def _keyed_list(
    path: str, old: Sequence[Any], new: Sequence[Any]
) -> tuple[list[FieldError], list[tuple[int, Any, Any]]]:
    """NoAddItem/NoRemoveItem over a list keyed by ``name``; also the (index, old, new) pairs that match."""
    before = {item.name: item for item in old}
    after = {item.name for item in new}
    errs = [
        FieldError.forbidden(f"{path}[{i}]", "item may not be added") for i, t in enumerate(new) if t.name not in before
    ]
    if any(name not in after for name in before):
        errs.append(FieldError.forbidden(path, "item may not be removed"))
    return errs, [(i, before[t.name], t) for i, t in enumerate(new) if t.name in before]


def _templates(path: str, old: Sequence[s.PodGroupTemplate], new: Sequence[s.PodGroupTemplate]) -> list[FieldError]:
    errs, pairs = _keyed_list(path, old, new)
    for i, was, now in pairs:
        at = f"{path}[{i}]"
        errs += _policy(f"{at}.schedulingPolicy", was.scheduling_policy, now.scheduling_policy)
        errs += _fields(at, was, now, _GROUP_FIELDS)
    return errs


def _composite_templates(
    path: str, old: Sequence[s.CompositePodGroupTemplate], new: Sequence[s.CompositePodGroupTemplate]
) -> list[FieldError]:
    errs, pairs = _keyed_list(path, old, new)
    for i, was, now in pairs:
        at = f"{path}[{i}]"
        errs += _policy(f"{at}.schedulingPolicy", was.scheduling_policy, now.scheduling_policy)
        errs += _fields(at, was, now, _COMPOSITE_FIELDS)
        errs += _templates(f"{at}.podGroupTemplates", was.pod_group_templates, now.pod_group_templates)
        errs += _composite_templates(
            f"{at}.compositePodGroupTemplates", was.composite_pod_group_templates, now.composite_pod_group_templates
        )
    return errs


def validate_workload_update(old: s.Workload, new: s.Workload) -> list[FieldError]:
    """What an update from ``old`` to ``new`` changes that v1.37 does not allow."""
    was, now = old.spec or s.WorkloadSpec(), new.spec or s.WorkloadSpec()
    errs = [_immutable("spec.controllerRef")] if was.controller_ref != now.controller_ref else []
    errs += _templates("spec.podGroupTemplates", was.pod_group_templates, now.pod_group_templates)
    errs += _composite_templates(
        "spec.compositePodGroupTemplates", was.composite_pod_group_templates, now.composite_pod_group_templates
    )
    return errs


def validate_pod_group_update(old: s.PodGroup, new: s.PodGroup) -> list[FieldError]:
    was, now = old.spec or s.PodGroupSpec(), new.spec or s.PodGroupSpec()
    errs = _fields("spec", was, now, {"parentCompositePodGroupName": "parent_composite_pod_group_name"})
    errs += _fields("spec", was, now, {"workloadRef": "workload_ref"})
    errs += _policy("spec.schedulingPolicy", was.scheduling_policy, now.scheduling_policy)
    return errs + _fields("spec", was, now, _GROUP_FIELDS)


def validate_composite_pod_group_update(old: s.CompositePodGroup, new: s.CompositePodGroup) -> list[FieldError]:
    was, now = old.spec or s.CompositePodGroupSpec(), new.spec or s.CompositePodGroupSpec()
    fields = {
        "parentCompositePodGroupName": "parent_composite_pod_group_name",
        "workloadRef": "workload_ref",
        "schedulingPolicy": "scheduling_policy",
        **_COMPOSITE_FIELDS,
    }
    return _fields("spec", was, now, fields)
