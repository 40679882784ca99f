"""PriorityClass validation: reserved ``system-`` names, the user-definable maximum and the preemption policy."""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation.meta import validate_object_meta
from phalanx.api.validation.pod import validate_preemption_policy

__all__ = ["HIGHEST_USER_DEFINABLE_PRIORITY", "SYSTEM_PRIORITY_CLASSES", "validate_priority_class"]

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
# The classes kube-apiserver creates itself; any other name with the prefix is refused.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
_INT32 = (-(2**31), 2**31 - 1)


def validate_priority_class(pc: m.PriorityClass) -> list[FieldError]:
    """Every problem with a PriorityClass, as kube-apiserver reports them on create."""
    errs = validate_object_meta(pc.metadata, namespaced=False)
    name = pc.metadata.name
    if pc.value is None:
        errs.append(FieldError.required("value"))
    elif not _INT32[0] <= pc.value <= _INT32[1]:
        errs.append(FieldError.invalid("value", pc.value, "must be a 32-bit integer"))
    elif name.startswith("system-"):
        problem = _system_class_problem(name, pc.value, pc.global_default)
        if problem:
            detail = f"priority class names with 'system-' prefix are reserved for system use only. error: {problem}"
            errs.append(FieldError.forbidden("metadata.name", detail))
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errs.append(FieldError.forbidden("value", detail))
    errs += validate_preemption_policy("preemptionPolicy", pc.preemption_policy)
    return errs


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    expected = SYSTEM_PRIORITY_CLASSES.get(name)
    if expected is None:
        return f"{name} is not a known system priority class"
    if value != expected:
        return f"value of {name} PriorityClass must be {expected}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""
