"""The runtime cost of one call, as Kubernetes' cost tracker charges it.

In cel-go's order: the list extension's per-overload trackers, then Kubernetes' ``library.CostEstimator.CallCost``
(by function name), then cel-go's defaults by overload id (string traversals cost one unit per ten characters,
``in`` a list one per element, ``matches`` string length times regex length / 4), and 1 for everything else.
:func:`call_coster` returns a constant when the cost never depends on the values, which is the common case.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from phalanx.api.cel.decls import Overload
from phalanx.api.cel.runtime import size_of

__all__ = ["Coster", "call_coster", "traversal_cost"]

Coster = Callable[[str, Sequence[object], object], int]
_S = 0.1  # cel-go's StringTraversalCostFactor
_R = 0.25  # RegexStringLengthCostFactor

_K8S_UNIT = {
    "sign",
    "asInteger",
    "isInteger",
    "asApproximateFloat",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
    "major",
    "minor",
    "patch",
    "getScheme",
    "getHostname",
    "getHost",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "format.named",
    "masked",
    "prefixLength",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
}
_K8S_TRAVERSE_ARG = {
    "url",
    "jsonpatch.escapeKey",
    "lowerAscii",
    "upperAscii",
    "substring",
    "trim",
    "cidr",
    "isIP",
    "isCIDR",
    "quantity",
    "isQuantity",
    "semver",
    "isSemver",
}
_K8S_TYPES = {"Quantity", "IP", "CIDR", "NamedFormat", "URL", "Semver"}


def traversal_cost(value: object) -> int:
    """Kubernetes' traversalCost: string/bytes length (bytes, not characters) / 10 rounded down, lists and maps the
    sum over their elements, anything else 1."""
    if isinstance(value, str):
        return int(len(value.encode()) * _S)
    if isinstance(value, bytes):
        return int(len(value) * _S)
    if isinstance(value, list | tuple):
        return sum(traversal_cost(v) for v in value)
    if isinstance(value, Mapping):
        return sum(traversal_cost(k) + traversal_cost(v) for k, v in value.items())
    return 1


def _ceil(x: float) -> int:
    return math.ceil(x)


def _self_compare(items: object) -> int:
    size = size_of(items)
    factor = 2.0
    if size and isinstance(items, list | tuple) and isinstance(items[0], str | bytes):
        factor += _S
    return int(size * size * factor) + 1 + 10


def _list_tracker(overload_id: str) -> Coster | None:
    """cel-go ext.Lists version 3 and ext.Sets cost trackers."""
    if overload_id in ("list_sets_contains_list", "list_sets_intersects_list", "list_sets_equivalent_list"):
        scale = 2.0 if overload_id == "list_sets_equivalent_list" else 1.0
        return lambda _, args, result: 1 + int(size_of(args[0]) * size_of(args[1]) * scale)
    if overload_id in ("list_slice", "lists_range", "list_reverse"):
        return lambda _, args, result: int(size_of(result)) + 11
    if overload_id in ("list_flatten", "list_flatten_int"):
        return lambda _, args, result: int(size_of(args[0]) * (int(args[1]) if len(args) == 2 else 1)) + 11  # type: ignore[call-overload]
    if overload_id == "list_distinct" or overload_id.endswith("_sort"):
        return lambda _, args, result: _self_compare(args[0])
    if overload_id.endswith("_sortByAssociatedKeys"):
        return lambda _, args, result: _self_compare(args[1])
    return None


def _regex_cost(text: object, pattern: object) -> int:
    return _ceil((1.0 + size_of(text)) * _S) * _ceil(size_of(pattern) * _R)


def _kubernetes(function: str) -> Coster | int | None:
    """Kubernetes' ``CostEstimator.CallCost``, by function name."""
    if function in _K8S_UNIT:
        return 1
    if function in _K8S_TRAVERSE_ARG:
        return lambda _, args, result: _ceil(size_of(args[0]) * _S)
    if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
        return lambda _, args, result: traversal_cost(args[0])
    if function in ("replace", "split"):
        return lambda _, args, result: _ceil(size_of(args[0]) * 2 * _S)
    if function == "join":
        return lambda _, args, result: _ceil(size_of(result) * 2 * _S)
    if function in ("find", "findAll"):
        return lambda _, args, result: _regex_cost(args[0], args[1])
    if function == "ip":
        return lambda oid, args, result: 1 if oid == "cidr_ip" else _ceil(size_of(args[0]) * _S)
    if function == "ip.isCanonical":
        return lambda _, args, result: _ceil(size_of(args[0]) * 2 * _S)
    if function in ("containsIP", "containsCIDR"):
        return _contains_network_cost
    if function == "validate":
        return lambda _, args, result: (
            _ceil((1.0 + size_of(args[1])) * _S) * _ceil(getattr(args[0], "max_regex_size", 1) * _R)
        )
    return None


def _contains_network_cost(overload_id: str, args: Sequence[object], result: object) -> int:
    cidr, other = size_of(args[0]), size_of(args[1])
    cost = _ceil((cidr + cidr) * _S)
    if overload_id.startswith("cidr_contains_cidr"):
        cost += _ceil(cidr * _S) + 1
    if overload_id in ("cidr_contains_ip_string", "cidr_contains_cidr_string"):
        cost += _ceil(other * _S)
    return cost


def _default(overload_id: str) -> Coster | int:
    """cel-go's ``CostTracker.costCall`` defaults."""
    if overload_id in (
        "starts_with_string",
        "ends_with_string",
        "string_to_bytes",
        "bytes_to_string",
        "strings_quote",
        "string_format",
    ):
        return lambda _, args, result: _ceil(size_of(args[0]) * _S)
    if overload_id == "in_list":
        return lambda _, args, result: size_of(args[1])
    if overload_id in ("equals", "not_equals") or (
        overload_id.split("_")[-1] in ("string", "bytes") and (overload_id.startswith(("less", "greater")))
    ):
        return lambda _, args, result: _ceil(min(size_of(args[0]), size_of(args[1])) * _S)
    if overload_id in ("add_string", "add_bytes"):
        return lambda _, args, result: _ceil((size_of(args[0]) + size_of(args[1])) * _S)
    if overload_id in ("matches", "matches_string"):
        return lambda _, args, result: _regex_cost(args[0], args[1])
    if overload_id == "contains_string":
        return lambda _, args, result: _ceil(size_of(args[0]) * _S) * _ceil(size_of(args[1]) * _S)
    return 1


def _equality(_: str, args: Sequence[object], result: object) -> int:
    if type(args[0]).__name__ in _K8S_TYPES:
        return 1
    return _ceil(min(size_of(args[0]), size_of(args[1])) * _S)


def call_coster(function: str, overloads: Sequence[Overload]) -> Coster | int:
    """The cost rule of a call site; an int when it is the same for every call."""
    if function in ("_==_", "_!=_"):
        return _equality
    kubernetes = _kubernetes(function)
    per_overload = {o.id: _list_tracker(o.id) or kubernetes or _default(o.id) for o in overloads}
    rules = set(map(id, per_overload.values()))
    if len(rules) == 1:
        only = next(iter(per_overload.values()))
        return only
    return lambda oid, args, result: _apply(per_overload.get(oid, 1), oid, args, result)


def _apply(rule: Coster | int, overload_id: str, args: Sequence[object], result: object) -> int:
    return rule if isinstance(rule, int) else rule(overload_id, args, result)
