"""Node validation: name, taints, capacity and allocatable. Also holds the taint-effect rule tolerations share."""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation.meta import validate_object_meta
from phalanx.api.validation.resources import validate_node_resource

__all__ = ["TAINT_EFFECTS", "validate_node", "validate_taint_effect"]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_node(node: m.Node) -> list[FieldError]:
    """Every problem with a Node, as kube-apiserver reports them on create."""
    errs = validate_object_meta(node.metadata, namespaced=False)
    errs += _validate_taints(node.spec.taints)
    # kube-apiserver names node resources with a child path (status.capacity.cpu), not a map key.
    for name, raw in node.status.capacity.items():
        errs += validate_node_resource(f"status.capacity.{name}", name, raw)
    for name, raw in node.status.allocatable.items():
        errs += validate_node_resource(f"status.allocatable.{name}", name, raw)
    return errs


def validate_taint_effect(path: str, effect: str, allow_empty: bool) -> list[FieldError]:
    if not effect:
        return [] if allow_empty else [FieldError.required(path)]
    return f.enum(path, effect, TAINT_EFFECTS)


def _validate_taints(taints: list[m.Taint]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        at = f"spec.taints[{i}]"
        errs += f.qualified_name(f"{at}.key", taint.key)
        errs += f.joined_label_value(f"{at}.value", taint.value)
        errs += validate_taint_effect(f"{at}.effect", taint.effect, allow_empty=False)
        if (taint.key, taint.effect) in seen:
            value = f.shown({"key": taint.key, "effect": taint.effect})
            errs.append(FieldError(at, f"Duplicate value: {value}: taints must be unique by key and effect pair"))
        seen.add((taint.key, taint.effect))
    return errs
