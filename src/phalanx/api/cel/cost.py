"""Worst-case cost estimate of an expression, for API validation ("too complex, exceeds cost limit").

Like cel-go's estimator with the DRA size bounds: a string from a device is at most 64 characters, a domain map
or attribute map has at most 32 entries and a list attribute at most 64 elements. A comprehension costs its range
size times its body; sized functions cost by the size of their arguments. It approximates cel-go's numbers (the
same order of magnitude), which is what the limit needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phalanx.api.cel.syntax import Call, Comprehension, Expr, Has, Ident, ListLit, Literal, MapLit, Select

__all__ = ["estimate_cost"]

_MAX_STRING = 64
_MAX_ENTRIES = 32
_MAX_LIST = 64
_SIZED_FUNCTIONS = {"contains", "startsWith", "endsWith", "matches", "find", "findAll", "lowerAscii", "upperAscii",
                    "trim", "reverse", "indexOf", "lastIndexOf", "substring", "split", "replace", "join", "_+_",
                    "isSorted", "sum", "min", "max", "includes", "@in", "distinct", "flatten"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Estimate:
    cost: int
    size: int  # upper bound of the value's size (characters, elements or entries)


def estimate_cost(node: Expr, sizes: dict[str, int] | None = None) -> int:
    """The estimated maximum runtime cost of evaluating ``node`` against any valid device."""
    return _estimate(node, sizes or {}).cost


def _estimate(node: Expr, sizes: dict[str, int]) -> _Estimate:
    if isinstance(node, Literal):
        size = len(node.value) if isinstance(node.value, str | bytes) else 1
        return _Estimate(0, size)
    if isinstance(node, Ident):
        return _Estimate(1, sizes.get(node.name, _MAX_ENTRIES))
    if isinstance(node, Select | Has):
        inner = _estimate(node.operand, sizes)
        return _Estimate(inner.cost + 1, max(_MAX_STRING, _MAX_LIST))
    if isinstance(node, ListLit):
        parts = [_estimate(e, sizes) for e in node.elements]
        return _Estimate(1 + sum(p.cost for p in parts), len(parts))
    if isinstance(node, MapLit):
        costs = [_estimate(k, sizes).cost + _estimate(v, sizes).cost for k, v, _ in node.entries]
        return _Estimate(1 + sum(costs), len(costs))
    if isinstance(node, Comprehension):
        return _comprehension(node, sizes)
    assert isinstance(node, Call)
    return _call(node, sizes)


def _call(node: Call, sizes: dict[str, int]) -> _Estimate:
    operands = ((node.target,) if node.target is not None else ()) + node.args
    parts = [_estimate(arg, sizes) for arg in operands]
    if node.function in ("_&&_", "_||_"):
        return _Estimate(1 + sum(p.cost for p in parts), 1)
    if node.function == "_?_:_":
        return _Estimate(1 + parts[0].cost + max(parts[1].cost, parts[2].cost), max(parts[1].size, parts[2].size))
    cost = 1 + sum(p.cost for p in parts)
    if node.function in _SIZED_FUNCTIONS:
        cost += math.ceil(0.1 * sum(p.size for p in parts))
    size = sum(p.size for p in parts) if node.function in ("_+_", "split", "findAll", "flatten") else _MAX_STRING
    return _Estimate(cost, size)


def _comprehension(node: Comprehension, sizes: dict[str, int]) -> _Estimate:
    source = _estimate(node.range, sizes)
    inner = {**sizes, **dict.fromkeys(node.variables, _MAX_STRING)}
    body = sum(_estimate(arg, inner).cost for arg in node.args)
    if node.kind in ("bind", "optMap", "optFlatMap"):
        return _Estimate(source.cost + body, _MAX_STRING)
    # Every iteration pays for its body plus the loop step.
    return _Estimate(source.cost + source.size * (body + 1), source.size)
