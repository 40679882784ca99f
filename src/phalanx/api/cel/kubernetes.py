"""The Kubernetes CEL libraries selectors use: quantity, semver, lists, sets, optional values and DRA ``includes``.

Quantities are exact (:mod:`phalanx.api.quantity`), so ``compareTo`` never suffers float rounding. ``includes``
is the DRA list-attribute test: membership for a list, equality for a scalar, an error past 48 elements.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from fractions import Fraction

from phalanx.api.cel.arithmetic import INT64_MAX, INT64_MIN, cel_equals
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.overloads import Overload
from phalanx.api.cel.values import NONE, Optional, Quantity, Semver, UInt, parse_semver, type_name
from phalanx.api.quantity import QuantityError, parse_quantity

__all__ = ["MAX_INCLUDES_LIST", "overloads"]

MAX_INCLUDES_LIST = 48
_Q, _V = "kubernetes.Quantity", "kubernetes.Semver"


def _quantity(text: str) -> Quantity:
    try:
        return Quantity(parse_quantity(text))
    except QuantityError as error:
        raise CelError(f"quantities {error}") from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _operand(value: object) -> Fraction:
    if isinstance(value, Quantity):
        return value.value
    assert isinstance(value, int)
    return Fraction(value)


def _as_integer(q: Quantity) -> int:
    if q.value.denominator != 1 or not INT64_MIN <= q.value <= INT64_MAX:
        raise CelError("cannot convert value to integer")
    return int(q.value)


def _compare(a: Fraction | tuple[object, ...], b: Fraction | tuple[object, ...]) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]


def _quantity_functions() -> Iterator[Overload]:
    yield Overload("quantity", False, ("string",), _Q, _quantity)
    yield Overload("isQuantity", False, ("string",), "bool", _is_quantity)
    yield Overload("compareTo", True, (_Q, _Q), "int", lambda a, b: _compare(a.value, b.value))
    yield Overload("isGreaterThan", True, (_Q, _Q), "bool", lambda a, b: a.value > b.value)
    yield Overload("isLessThan", True, (_Q, _Q), "bool", lambda a, b: a.value < b.value)
    for other in (_Q, "int"):
        yield Overload("add", True, (_Q, other), _Q, lambda a, b: Quantity(a.value + _operand(b)))
        yield Overload("sub", True, (_Q, other), _Q, lambda a, b: Quantity(a.value - _operand(b)))
    yield Overload("sign", True, (_Q,), "int", lambda q: _compare(q.value, Fraction(0)))
    yield Overload("isInteger", True, (_Q,), "bool",
                   lambda q: q.value.denominator == 1 and INT64_MIN <= q.value <= INT64_MAX)  # fmt: skip
    yield Overload("asInteger", True, (_Q,), "int", _as_integer)
    yield Overload("asApproximateFloat", True, (_Q,), "double", lambda q: float(q.value))


def _semver(text: str, normalize: bool = False) -> Semver:
    try:
        return parse_semver(text, normalize)
    except ValueError as error:
        raise CelError(str(error)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _semver_functions() -> Iterator[Overload]:
    yield Overload("semver", False, ("string",), _V, _semver)
    yield Overload("semver", False, ("string", "bool"), _V, _semver)
    yield Overload("isSemver", False, ("string",), "bool", _is_semver)
    yield Overload("isSemver", False, ("string", "bool"), "bool", _is_semver)
    yield Overload("major", True, (_V,), "int", lambda v: v.major)
    yield Overload("minor", True, (_V,), "int", lambda v: v.minor)
    yield Overload("patch", True, (_V,), "int", lambda v: v.patch)
    yield Overload("compareTo", True, (_V, _V), "int", lambda a, b: _compare(a.key(), b.key()))
    yield Overload("isGreaterThan", True, (_V, _V), "bool", lambda a, b: a.key() > b.key())
    yield Overload("isLessThan", True, (_V, _V), "bool", lambda a, b: a.key() < b.key())


def _comparable(items: Sequence[object], function: str) -> Sequence[object]:
    kinds = {type_name(i) for i in items}
    numeric = kinds <= {"int", "uint", "double"}
    if len(kinds) > 1 and not numeric:
        raise CelError(f"{function}: list elements must have the same type, got {sorted(kinds)}")
    if kinds & {"bool", "list", "map", "null_type", "optional_type"}:
        raise CelError(f"{function}: list elements are not comparable")
    if kinds & {_Q, _V}:
        return [i.value if isinstance(i, Quantity) else i.key() for i in items]  # type: ignore[attr-defined]
    return items


def _extreme(items: Sequence[object], function: str) -> object:
    if not items:
        raise CelError(f"{function} called on empty list")
    keys = _comparable(items, function)
    index = min if function == "min" else max
    return items[index(range(len(items)), key=lambda i: keys[i])]  # type: ignore[arg-type, return-value]


def _sum(items: Sequence[object]) -> object:
    kinds = {type_name(i) for i in items}
    if len(kinds) > 1:
        raise CelError(f"sum: list elements must have the same type, got {sorted(kinds)}")
    if not items:
        return 0
    if kinds == {_Q}:
        return Quantity(sum((i.value for i in items), Fraction(0)))  # type: ignore[attr-defined]
    if kinds <= {"int", "uint"}:
        total = sum(items)  # type: ignore[arg-type]
        if not INT64_MIN <= total <= INT64_MAX:
            raise CelError("integer overflow")
        return UInt(total) if kinds == {"uint"} else total
    if kinds == {"double"}:
        return math.fsum(items)  # type: ignore[arg-type]
    raise no_sum(kinds)


def no_sum(kinds: set[str]) -> CelError:
    return CelError(f"sum: unsupported element type {sorted(kinds)}")


def _index_of(items: Sequence[object], value: object, last: bool = False) -> int:
    order = range(len(items) - 1, -1, -1) if last else range(len(items))
    return next((i for i in order if cel_equals(items[i], value)), -1)


def _is_sorted(items: Sequence[object]) -> bool:
    keys = _comparable(items, "isSorted")
    return all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))  # type: ignore[operator]


def _includes(container: object, value: object) -> bool:
    if isinstance(container, list | tuple):
        if len(container) > MAX_INCLUDES_LIST:
            raise CelError(f"includes: list has {len(container)} elements, more than {MAX_INCLUDES_LIST}")
        return any(cel_equals(item, value) for item in container)
    return cel_equals(container, value)


def _flatten(items: Sequence[object]) -> list[object]:
    return [x for i in items for x in (i if isinstance(i, list | tuple) else [i])]


def _list_functions() -> Iterator[Overload]:
    yield Overload("isSorted", True, ("list",), "bool", _is_sorted, 1.0)
    yield Overload("sum", True, ("list",), "dyn", _sum, 1.0)
    yield Overload("min", True, ("list",), "dyn", lambda items: _extreme(items, "min"), 1.0)
    yield Overload("max", True, ("list",), "dyn", lambda items: _extreme(items, "max"), 1.0)
    yield Overload("indexOf", True, ("list", "dyn"), "int", _index_of, 1.0)
    yield Overload("lastIndexOf", True, ("list", "dyn"), "int", lambda a, v: _index_of(a, v, last=True), 1.0)
    yield Overload("includes", True, ("dyn", "dyn"), "bool", _includes, 1.0)
    yield Overload("distinct", True, ("list",), "list",
                   lambda a: [x for i, x in enumerate(a) if _index_of(a, x) == i], 1.0)  # fmt: skip
    yield Overload("flatten", True, ("list",), "list", _flatten, 1.0)
    yield Overload("reverse", True, ("list",), "list", lambda a: list(reversed(a)), 1.0)
    yield Overload("slice", True, ("list", "int", "int"), "list", _slice, 1.0)
    yield Overload("lists.range", False, ("int",), "list", lambda n: list(range(n)), 1.0)
    yield Overload("sets.contains", False, ("list", "list"), "bool",
                   lambda a, b: all(_index_of(a, x) >= 0 for x in b), 1.0)  # fmt: skip
    yield Overload("sets.intersects", False, ("list", "list"), "bool",
                   lambda a, b: any(_index_of(a, x) >= 0 for x in b), 1.0)  # fmt: skip
    yield Overload(
        "sets.equivalent",
        False,
        ("list", "list"),
        "bool",
        lambda a, b: all(_index_of(a, x) >= 0 for x in b) and all(_index_of(b, x) >= 0 for x in a),
        1.0,
    )


def _slice(items: Sequence[object], start: int, end: int) -> list[object]:
    if not 0 <= start <= end <= len(items):
        raise CelError(f"cannot slice({start}, {end}), list has {len(items)} elements")
    return list(items[start:end])


def _value(optional: Optional) -> object:
    if not optional.present:
        raise CelError("optional.none() dereference")
    return optional.value


def _non_zero(value: object) -> Optional:
    zero = value is None or value in (0, "", b"", False) or (isinstance(value, list | tuple | dict) and not value)
    return NONE if zero else Optional(True, value)


def _optional_functions() -> Iterator[Overload]:
    o = "optional_type"
    yield Overload("optional.of", False, ("dyn",), o, lambda v: Optional(True, v))
    yield Overload("optional.none", False, (), o, lambda: NONE)
    yield Overload("optional.ofNonZeroValue", False, ("dyn",), o, _non_zero)
    yield Overload("hasValue", True, (o,), "bool", lambda opt: opt.present)
    yield Overload("value", True, (o,), "dyn", _value)
    yield Overload("orValue", True, (o, "dyn"), "dyn", lambda opt, d: opt.value if opt.present else d)
    yield Overload("or", True, (o, o), o, lambda opt, other: opt if opt.present else other)


def overloads() -> Iterator[Overload]:
    yield from _quantity_functions()
    yield from _semver_functions()
    yield from _list_functions()
    yield from _optional_functions()
