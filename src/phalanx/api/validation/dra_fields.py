"""Field rules the DRA kinds share (``pkg/apis/resource/validation``): driver, pool and attribute names, CEL
selectors, opaque configuration, device taints and tolerations, binding conditions, and the list/set/map limits.

Values are checked as kube-apiserver sees them after defaulting (allocationMode ExactCount, count 1, toleration
operator Equal), since that happens before validation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

import msgspec

from phalanx.api import dra, names
from phalanx.api.cel import Features, check_selector
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f

__all__ = [
    "DRIVER_NAME_MAX_LENGTH",
    "TAINT_EFFECTS",
    "too_long",
    "validate_binding_conditions",
    "validate_cel_expression",
    "validate_driver_name",
    "validate_full_qualified_name",
    "validate_opaque",
    "validate_pool_name",
    "validate_qualified_name",
    "validate_selectors",
    "validate_set",
    "validate_taint",
    "validate_tolerations",
]

DRIVER_NAME_MAX_LENGTH = 63
_POOL_NAME_MAX_LENGTH = 253
_ID_MAX_LENGTH = 32
_SELECTORS_MAX = 32
_TOLERATIONS_MAX = 16
_BINDING_CONDITIONS_MAX = 4
_CEL_MAX_LENGTH = 10 * 1024
_PARAMETERS_MAX_LENGTH = 10 * 1024
_TOO_COMPLEX = "too complex, exceeds cost limit"
DEFAULT_CEL_FEATURES = Features()  # v1.36 defaults: DRAConsumableCapacity on, DRAListTypeAttributes off
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")  # sorted, as kube-apiserver lists them

_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)

Item = TypeVar("Item")


def too_long(path: str, limit: int) -> FieldError:
    return FieldError(path, f"Too long: may not be more than {limit} bytes")


def validate_set(
    path: str,
    items: Sequence[Item],
    limit: int,
    check: Callable[[str, Item], list[FieldError]],
    key: Callable[[Item], Hashable] | None = None,
) -> list[FieldError]:
    """A list with a size limit (checked first, alone, as kube-apiserver does against huge inputs), per-item
    rules, and, with ``key``, "Duplicate value" for every item whose key an earlier one has (reported after)."""
    if limit >= 0 and len(items) > limit:
        return [FieldError.too_many(path, len(items), limit)]
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += check(f"{path}[{i}]", item)
    if key is not None:
        seen: set[Hashable] = set()
        for i, item in enumerate(items):
            k = key(item)
            if k in seen:
                errs.append(FieldError.duplicate(f"{path}[{i}]", k))
            seen.add(k)
    return errs


# --- names -----------------------------------------------------------------------------------------------------


def validate_driver_name(path: str, name: str) -> list[FieldError]:
    """A driver name: a DNS subdomain (checked lower-cased) of at most 63 characters, like a CSI driver's."""
    if not name:
        return [FieldError.required(path)]
    errs = [too_long(path, DRIVER_NAME_MAX_LENGTH)] if len(name) > DRIVER_NAME_MAX_LENGTH else []
    return errs + [FieldError.invalid(path, name, msg) for msg in names.check_dns_subdomain(name.lower())]


def validate_pool_name(path: str, name: str) -> list[FieldError]:
    """A pool name: at most 253 characters, DNS subdomains separated by '/'."""
    if not name:
        return [FieldError.required(path)]
    errs = [too_long(path, _POOL_NAME_MAX_LENGTH)] if len(name) > _POOL_NAME_MAX_LENGTH else []
    for part in name.split("/"):
        errs += f.dns_subdomain(path, part)
    return errs


def _c_identifier(path: str, ident: str) -> list[FieldError]:
    errs = [too_long(path, _ID_MAX_LENGTH)] if len(ident) > _ID_MAX_LENGTH else []
    if not _C_IDENTIFIER.match(ident):
        errs.append(FieldError.invalid(path, ident, _C_IDENTIFIER_MSG))
    return errs


def validate_qualified_name(path: str, name: str) -> list[FieldError]:
    """An attribute or capacity name: a C identifier (≤32), or ``<driver-like domain>/<C identifier>``."""
    # Every device of a slice repeats the same names: remember the valid ones, check the rest in full.
    return [] if _valid_qualified_name(name) else _qualified_name_errors(path, name)


@lru_cache(maxsize=4096)
def _valid_qualified_name(name: str) -> bool:
    return not _qualified_name_errors("", name)


def _qualified_name_errors(path: str, name: str) -> list[FieldError]:
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier(path, name)
    if len(parts) > 2:
        return [FieldError.invalid(path, name, "must not contain more than one slash")]
    domain, ident = parts
    errs = (
        validate_driver_name(path, domain) if domain else [FieldError.invalid(path, "", "the domain must not be empty")]
    )
    errs += _c_identifier(path, ident) if ident else [FieldError.invalid(path, "", "the name must not be empty")]
    return errs


def validate_full_qualified_name(path: str, name: str) -> list[FieldError]:
    """A qualified name that must carry its domain (matchAttribute, distinctAttribute)."""
    errs = validate_qualified_name(path, name)
    if "/" not in name:
        detail = "a fully qualified name must be a domain and a name separated by a slash"
        errs.append(FieldError.invalid(path, name, detail))
    return errs


# --- selectors and configuration ---------------------------------------------------------------------------------


def validate_cel_expression(at: str, expression: str, features: Features = DEFAULT_CEL_FEATURES) -> list[FieldError]:
    """One CEL device selector as kube-apiserver validates it (pkg/apis/resource/validation validateCELSelector):
    compiled with the NewExpressions environment and the feature gates, cost-checked against 1,000,000.
    ``at`` is the field path of the expression; the DeviceTaintRule validator (v1.37) calls this for
    ``spec.deviceSelector.selectors[i].cel.expression``."""
    if len(expression.encode()) > _CEL_MAX_LENGTH:
        return [too_long(at, _CEL_MAX_LENGTH)]  # not worth compiling
    if not expression:
        return [FieldError.required(at, "expression must not be empty")]
    # The cost rule is a Forbidden in kube-apiserver; compile problems are Invalid.
    return [
        FieldError.forbidden(at, msg) if msg == _TOO_COMPLEX else FieldError.invalid(at, expression, msg)
        for msg in check_selector(expression, features)
    ]


def _validate_selector(path: str, selector: dra.DeviceSelector) -> list[FieldError]:
    if selector.cel is None:
        return [FieldError.required(f"{path}.cel")]
    return validate_cel_expression(f"{path}.cel.expression", selector.cel.expression)


def validate_selectors(path: str, selectors: list[dra.DeviceSelector]) -> list[FieldError]:
    return validate_set(path, selectors, _SELECTORS_MAX, _validate_selector)


def validate_opaque(path: str, opaque: dra.OpaqueDeviceConfiguration | None) -> list[FieldError]:
    """An opaque configuration: a driver name and parameters that are a JSON object of at most 10 KiB."""
    if opaque is None:
        return [FieldError.required(f"{path}.opaque")]
    at = f"{path}.opaque"
    errs = validate_driver_name(f"{at}.driver", opaque.driver)
    params = f"{at}.parameters"
    if opaque.parameters is None:
        return [*errs, FieldError.required(params)]
    # The size is measured on compact JSON: the bytes as sent are gone once the file is parsed.
    if len(msgspec.json.encode(opaque.parameters)) > _PARAMETERS_MAX_LENGTH:
        return [*errs, too_long(params, _PARAMETERS_MAX_LENGTH)]
    if not isinstance(opaque.parameters, dict):
        return [*errs, FieldError.invalid(params, "<value omitted>", "must be a valid JSON object")]
    return errs


# --- taints, tolerations, binding conditions ----------------------------------------------------------------------


def validate_taint(path: str, taint: dra.DeviceTaint) -> list[FieldError]:
    errs = f.qualified_name(f"{path}.key", taint.key)
    if taint.value:
        errs += f.label_value(f"{path}.value", taint.value)
    if not taint.effect:
        errs.append(FieldError.required(f"{path}.effect"))
    else:
        errs += f.enum(f"{path}.effect", taint.effect, TAINT_EFFECTS)
    return errs


def _validate_toleration(path: str, tol: dra.DeviceToleration) -> list[FieldError]:
    errs = f.qualified_name(f"{path}.key", tol.key) if tol.key else []
    operator = tol.operator or "Equal"  # defaulted before validation
    if operator == "Exists":
        if tol.value:
            errs.append(FieldError.invalid(f"{path}.value", tol.value, "must be empty for operator `Exists`"))
    elif operator == "Equal":
        errs += f.label_value(f"{path}.value", tol.value)
    else:
        errs.append(FieldError.unsupported(f"{path}.operator", operator, ["Equal", "Exists"]))
    if tol.effect:
        errs += f.enum(f"{path}.effect", tol.effect, TAINT_EFFECTS)
    return errs


def validate_tolerations(path: str, tolerations: list[dra.DeviceToleration]) -> list[FieldError]:
    return validate_set(path, tolerations, _TOLERATIONS_MAX, _validate_toleration)


def validate_binding_conditions(path: str, conditions: list[str], failures: list[str]) -> list[FieldError]:
    """``bindingConditions`` and ``bindingFailureConditions``: ≤4 condition types each, unique, disjoint, and
    only together."""
    on, off = f"{path}.bindingConditions", f"{path}.bindingFailureConditions"
    errs = validate_set(on, conditions, _BINDING_CONDITIONS_MAX, f.qualified_name)
    errs += validate_set(off, failures, _BINDING_CONDITIONS_MAX, f.qualified_name)
    errs += _duplicates(on, conditions)
    errs += _duplicates(off, failures)
    for i, condition in enumerate(failures):
        if condition in conditions:
            detail = "bindingFailureConditions must not overlap with bindingConditions"
            errs.append(FieldError.invalid(f"{off}[{i}]", condition, detail))
    if failures and not conditions:
        detail = "bindingConditions are required to use bindingFailureConditions"
        errs.append(FieldError.invalid(on, f.shown(conditions), detail))
    if conditions and not failures:
        detail = "bindingFailureConditions are required to use bindingConditions"
        errs.append(FieldError.invalid(off, f.shown(failures), detail))
    return errs


def _duplicates(path: str, values: Sequence[str]) -> list[FieldError]:
    seen: set[str] = set()
    errs = []
    for i, value in enumerate(values):
        if value in seen:
            errs.append(FieldError.duplicate(f"{path}[{i}]", value))
        seen.add(value)
    return errs


def map_key_path(path: str, key: str, limit: int = 96) -> str:
    """``path[key]``, with a key longer than ``limit`` cut in the middle as kube-apiserver does."""
    if len(key) > limit:
        remaining = limit - 3
        key = key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]
    return f.key(path, key)


def validate_map_keys(path: str, keys: Mapping[str, object]) -> list[FieldError]:
    """Attribute and capacity names; kube-apiserver reports a bad key on the map's own path."""
    errs: list[FieldError] = []
    for k in keys:
        errs += validate_qualified_name(path, k)
    return errs
