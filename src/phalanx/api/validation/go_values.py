"""Values in error messages printed as kube-apiserver prints them, where that is Go's JSON of a Go struct.

A "Duplicate value" shows the versioned item with its JSON tags (``schedulingConstraints: null`` stays, because that
field of a PodGroupTemplate has no ``omitempty``; a gang's ``minCount: 0`` stays for the same reason). The template
hierarchy depth error shows the internal Go types, which have no JSON tags: Go field names, every field, ``null``
for what is unset.
"""

from __future__ import annotations

from typing import Any

import msgspec

from phalanx.api import scheduling as s
from phalanx.api.validation.fields import Shown

__all__ = ["composite_template_json", "internal_composite_templates", "pod_group_template_json"]


def _encode(value: Any) -> Shown:
    return Shown(msgspec.json.encode(value).decode())


def _policy(policy: s.PodGroupSchedulingPolicy | None) -> dict[str, Any]:
    policy = policy or s.PodGroupSchedulingPolicy()
    out: dict[str, Any] = {}
    if policy.basic is not None:
        out["basic"] = {}
    if policy.gang is not None:
        out["gang"] = {"minCount": policy.gang.min_count or 0}
    return out


def _composite_policy(policy: s.CompositePodGroupSchedulingPolicy | None) -> dict[str, Any]:
    policy = policy or s.CompositePodGroupSchedulingPolicy()
    out: dict[str, Any] = {}
    if policy.basic is not None:
        out["basic"] = {}
    if policy.gang is not None:
        out["gang"] = {"minGroupCount": policy.gang.min_group_count or 0}
    return out


def _optional(out: dict[str, Any], obj: msgspec.Struct, *names: str) -> None:
    """Fields tagged ``omitempty``: present only when set, in the model's JSON."""
    encoded = msgspec.to_builtins(obj)
    for name in names:
        if name in encoded:
            out[name] = encoded[name]


def _template_dict(t: s.PodGroupTemplate) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name, "schedulingPolicy": _policy(t.scheduling_policy)}
    constraints = t.scheduling_constraints
    out["schedulingConstraints"] = msgspec.to_builtins(constraints) if constraints is not None else None
    _optional(out, t, "resourceClaims", "disruptionMode", "priorityClassName", "priority", "preemptionPolicy")
    return out


def pod_group_template_json(t: s.PodGroupTemplate) -> Shown:
    """A v1beta1 PodGroupTemplate as Go's encoding/json writes it."""
    return _encode(_template_dict(t))


def _composite_dict(t: s.CompositePodGroupTemplate) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name, "schedulingPolicy": _composite_policy(t.scheduling_policy)}
    _optional(out, t, "schedulingConstraints", "disruptionMode", "priorityClassName", "priority", "preemptionPolicy")
    if t.pod_group_templates:
        out["podGroupTemplates"] = [_template_dict(c) for c in t.pod_group_templates]
    if t.composite_pod_group_templates:
        out["compositePodGroupTemplates"] = [_composite_dict(c) for c in t.composite_pod_group_templates]
    return out


def composite_template_json(t: s.CompositePodGroupTemplate) -> Shown:
    """A v1beta1 CompositePodGroupTemplate as Go's encoding/json writes it."""
    return _encode(_composite_dict(t))


# --- the internal Go types (no JSON tags) -----------------------------------------------------------------------


def _go_mode(mode: s.DisruptionMode | None) -> dict[str, Any] | None:
    if mode is None:
        return None
    return {"Single": {} if mode.single is not None else None, "All": {} if mode.all is not None else None}


def _go_constraints(c: s.PodGroupSchedulingConstraints | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"Topology": [{"Key": t.key} for t in c.topology] or None}


def _go_template(t: s.PodGroupTemplate) -> dict[str, Any]:
    policy = t.scheduling_policy or s.PodGroupSchedulingPolicy()
    claims = [
        {
            "Name": c.name,
            "ResourceClaimName": c.resource_claim_name,
            "ResourceClaimTemplateName": c.resource_claim_template_name,
        }
        for c in t.resource_claims
    ]
    return {
        "Name": t.name,
        "SchedulingPolicy": {
            "Basic": {} if policy.basic is not None else None,
            "Gang": {"MinCount": policy.gang.min_count or 0} if policy.gang is not None else None,
        },
        "SchedulingConstraints": _go_constraints(t.scheduling_constraints),
        "ResourceClaims": claims or None,
        "DisruptionMode": _go_mode(t.disruption_mode),
        "PriorityClassName": t.priority_class_name,
        "Priority": t.priority,
        "PreemptionPolicy": t.preemption_policy,
    }


def _go_composite(t: s.CompositePodGroupTemplate) -> dict[str, Any]:
    policy = t.scheduling_policy or s.CompositePodGroupSchedulingPolicy()
    gang = policy.gang
    return {
        "Name": t.name,
        "SchedulingPolicy": {
            "Basic": {} if policy.basic is not None else None,
            "Gang": {"MinGroupCount": gang.min_group_count or 0} if gang is not None else None,
        },
        "SchedulingConstraints": _go_constraints(t.scheduling_constraints),
        "DisruptionMode": _go_mode(t.disruption_mode),
        "PriorityClassName": t.priority_class_name,
        "Priority": t.priority,
        "PreemptionPolicy": t.preemption_policy,
        "PodGroupTemplates": [_go_template(c) for c in t.pod_group_templates] or None,
        "CompositePodGroupTemplates": [_go_composite(c) for c in t.composite_pod_group_templates] or None,
    }


def internal_composite_templates(templates: list[s.CompositePodGroupTemplate]) -> Shown:
    """A list of internal CompositePodGroupTemplates as ``json.Marshal`` writes it (``null`` when empty)."""
    return _encode([_go_composite(t) for t in templates] or None)
