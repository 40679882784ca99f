"""Resource names and quantities: container requests and limits, pod overhead, node capacity and allocatable.

Quantities are parsed exactly (:mod:`phalanx.api.quantity`); values are echoed in messages as they were written.
"""

from __future__ import annotations

from fractions import Fraction

from phalanx.api import models as m
from phalanx.api import names
from phalanx.api.errors import FieldError
from phalanx.api.quantity import QuantityError, parse_quantity
from phalanx.api.validation import fields as f

__all__ = [
    "is_extended",
    "is_hugepages",
    "validate_container_resources",
    "validate_node_resource",
    "validate_overhead",
]

_CONTAINER_STANDARD = frozenset({"cpu", "memory", "ephemeral-storage"})
# Names a node may report without a domain prefix (node status is written by the kubelet, not by users).
_NODE_STANDARD = _CONTAINER_STANDARD | {"pods", "storage"}
_CPU_OR_MEMORY = frozenset({"cpu", "memory"})


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """An extended resource (``nvidia.com/gpu``): domain-prefixed, not native, whole units, never overcommitted."""
    if _is_native(name) or name.startswith("requests."):
        return False
    return not names.check_qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not is_hugepages(name)


def _validate_name(path: str, name: str, standard: frozenset[str]) -> list[FieldError]:
    errs = f.qualified_name(path, name)
    if errs:
        return errs
    if "/" not in name and name not in standard and not is_hugepages(name):
        return [FieldError.invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def _validate_container_name(path: str, name: str) -> list[FieldError]:
    errs = _validate_name(path, name, _CONTAINER_STANDARD | _NODE_STANDARD)
    if "/" not in name:
        if name not in _CONTAINER_STANDARD and not is_hugepages(name):
            errs.append(FieldError.invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not is_extended(name):
        errs.append(FieldError.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _validate_value(path: str, name: str, raw: m.Quantity) -> tuple[Fraction | None, list[FieldError]]:
    """Parse one quantity; returns it (None when unparseable) and its problems."""
    written = str(raw)
    try:
        quantity = parse_quantity(raw)
    except QuantityError as exc:
        return None, [FieldError.invalid(path, written, str(exc))]
    if quantity < 0:
        return quantity, [FieldError.invalid(path, written, "must be greater than or equal to 0")]
    if is_extended(name) and quantity.denominator != 1:
        return quantity, [FieldError.invalid(path, written, "must be an integer")]
    return quantity, []


def validate_container_resources(res: m.ResourceRequirements, path: str) -> list[FieldError]:
    """``ValidateContainerResourceRequirements``: names, values, requests <= limits, no overcommit where banned."""
    errs: list[FieldError] = []
    limits: dict[str, Fraction | None] = {}
    for name, raw in res.limits.items():
        at = f.key(f"{path}.limits", name)
        errs += _validate_container_name(at, name)
        limits[name], value_errs = _validate_value(at, name, raw)
        errs += value_errs
    for name, raw in res.requests.items():
        at = f.key(f"{path}.requests", name)
        errs += _validate_container_name(at, name)
        request, value_errs = _validate_value(at, name, raw)
        errs += value_errs
        errs += _compare_with_limit(path, name, raw, request, res.limits, limits)
    used = set(res.requests) | set(res.limits)
    if any(is_hugepages(n) for n in used) and not used & _CPU_OR_MEMORY:
        errs.append(FieldError.forbidden(path, "HugePages require cpu or memory"))
    return errs


def _compare_with_limit(
    path: str,
    name: str,
    raw: m.Quantity,
    request: Fraction | None,
    raw_limits: m.ResourceList,
    limits: dict[str, Fraction | None],
) -> list[FieldError]:
    if name not in limits:
        if _overcommit_allowed(name):
            return []
        return [FieldError.required(f"{path}.limits", "Limit must be set for non overcommitable resources")]
    limit = limits[name]
    if request is None or limit is None:
        return []
    written_limit = str(raw_limits[name])
    if request != limit and not _overcommit_allowed(name):
        return [FieldError.invalid(f"{path}.requests", str(raw), f"must be equal to {name} limit of {written_limit}")]
    if request > limit:
        detail = f"must be less than or equal to {name} limit of {written_limit}"
        return [FieldError.invalid(f"{path}.requests", str(raw), detail)]
    return []


def validate_overhead(overhead: m.ResourceList, path: str) -> list[FieldError]:
    """Pod overhead, checked as kube-apiserver does: as the limits of a container (so ``spec.overhead.limits[r]``)."""
    return validate_container_resources(m.ResourceRequirements(limits=overhead), path)


def validate_node_resource(path: str, name: str, raw: m.Quantity) -> list[FieldError]:
    """One entry of node capacity or allocatable."""
    return _validate_name(path, name, _NODE_STANDARD) + _validate_value(path, name, raw)[1]
