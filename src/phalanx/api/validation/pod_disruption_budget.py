"""PodDisruptionBudget validation: minAvailable / maxUnavailable (one of, int or percent) and the selector."""

from __future__ import annotations

import re

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation.meta import validate_label_selector, validate_object_meta

__all__ = ["validate_pod_disruption_budget"]

_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)
_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def validate_pod_disruption_budget(pdb: m.PodDisruptionBudget) -> list[FieldError]:
    """Every problem with a PodDisruptionBudget, as kube-apiserver reports them on create."""
    spec = pdb.spec
    errs = validate_object_meta(pdb.metadata, namespaced=True)
    if spec.min_available is not None and spec.max_unavailable is not None:
        errs.append(FieldError.invalid("spec", f.shown(spec), "minAvailable and maxUnavailable cannot be both set"))
    if spec.min_available is not None:
        errs += _validate_int_or_percent("spec.minAvailable", spec.min_available)
    if spec.max_unavailable is not None:
        errs += _validate_int_or_percent("spec.maxUnavailable", spec.max_unavailable)
    errs += validate_label_selector(spec.selector, "spec.selector")
    errs += f.enum("spec.unhealthyPodEvictionPolicy", spec.unhealthy_pod_eviction_policy, _EVICTION_POLICIES)
    return errs


def _validate_int_or_percent(path: str, value: int | str) -> list[FieldError]:
    if isinstance(value, int):
        if value < 0:
            return [FieldError.invalid(path, value, "must be greater than or equal to 0")]
        return f.int32(path, value)  # an IntOrString's integer is an int32
    if not _PERCENT.fullmatch(value):
        return [FieldError.invalid(path, value, _PERCENT_MSG)]
    if int(value[:-1]) > 100:
        return [FieldError.invalid(path, value, "must not be greater than 100%")]
    return []
