"""CEL operators on plain values: arithmetic with int64/uint64 overflow errors, ordering, equality, ``in``.

CEL integers are 64-bit: an operation whose result leaves the range is an error ("integer overflow"), integer
division truncates toward zero and ``%`` takes the sign of the dividend, as in Go.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.overloads import Overload
from phalanx.api.cel.values import Optional, UInt

__all__ = ["INT64_MAX", "INT64_MIN", "UINT64_MAX", "cel_equals", "checked_int", "checked_uint", "overloads"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1
_NUMERIC = ("int", "uint", "double")


def checked_int(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise CelError("integer overflow")
    return value


def checked_uint(value: int) -> UInt:
    if not 0 <= value <= UINT64_MAX:
        raise CelError("unsigned integer overflow")
    return UInt(value)


def _divide(a: int, b: int) -> int:
    if b == 0:
        raise CelError("division by zero")
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _modulo(a: int, b: int) -> int:
    if b == 0:
        raise CelError("modulus by zero")
    remainder = abs(a) % abs(b)
    return remainder if a >= 0 else -remainder


def _float_divide(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def cel_equals(a: object, b: object) -> bool:
    """CEL heterogeneous equality: numbers compare across int/uint/double, other types never equal each other."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(cel_equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(k in b and cel_equals(v, b[k]) for k, v in a.items())
    if isinstance(a, Optional) and isinstance(b, Optional):
        return a.present == b.present and (not a.present or cel_equals(a.value, b.value))
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return a == b


def _contains(element: object, container: object) -> bool:
    if isinstance(container, Mapping):
        return (
            any(cel_equals(element, key) for key in container)
            if not isinstance(element, str)
            else (element in container)
        )
    assert isinstance(container, list | tuple)
    return any(cel_equals(element, item) for item in container)


def _arithmetic() -> Iterator[Overload]:
    yield Overload("_+_", False, ("int", "int"), "int", lambda a, b: checked_int(a + b))
    yield Overload("_-_", False, ("int", "int"), "int", lambda a, b: checked_int(a - b))
    yield Overload("_*_", False, ("int", "int"), "int", lambda a, b: checked_int(a * b))
    yield Overload("_/_", False, ("int", "int"), "int", lambda a, b: checked_int(_divide(a, b)))
    yield Overload("_%_", False, ("int", "int"), "int", _modulo)
    yield Overload("_+_", False, ("uint", "uint"), "uint", lambda a, b: checked_uint(a + b))
    yield Overload("_-_", False, ("uint", "uint"), "uint", lambda a, b: checked_uint(a - b))
    yield Overload("_*_", False, ("uint", "uint"), "uint", lambda a, b: checked_uint(a * b))
    yield Overload("_/_", False, ("uint", "uint"), "uint", lambda a, b: UInt(_divide(a, b)))
    yield Overload("_%_", False, ("uint", "uint"), "uint", lambda a, b: UInt(_modulo(a, b)))
    yield Overload("_+_", False, ("double", "double"), "double", lambda a, b: a + b)
    yield Overload("_-_", False, ("double", "double"), "double", lambda a, b: a - b)
    yield Overload("_*_", False, ("double", "double"), "double", lambda a, b: a * b)
    yield Overload("_/_", False, ("double", "double"), "double", _float_divide)
    yield Overload("_+_", False, ("string", "string"), "string", lambda a, b: a + b, 0.1)
    yield Overload("_+_", False, ("bytes", "bytes"), "bytes", lambda a, b: a + b, 0.1)
    yield Overload("_+_", False, ("list", "list"), "list", lambda a, b: [*a, *b], 1.0)
    yield Overload("-_", False, ("int",), "int", lambda a: checked_int(-a))
    yield Overload("-_", False, ("double",), "double", lambda a: -a)
    yield Overload("!_", False, ("bool",), "bool", lambda a: not a)


def _ordering() -> Iterator[Overload]:
    operators = {"_<_": lambda a, b: a < b, "_<=_": lambda a, b: a <= b,
                 "_>_": lambda a, b: a > b, "_>=_": lambda a, b: a >= b}  # fmt: skip
    for name, compare in operators.items():
        # CrossTypeNumericComparisons: int, uint and double compare with each other by value.
        for left in _NUMERIC:
            for right in _NUMERIC:
                yield Overload(name, False, (left, right), "bool", compare)
        for same in ("string", "bytes", "bool"):
            yield Overload(name, False, (same, same), "bool", compare, 0.1 if same != "bool" else 0.0)


def overloads() -> Iterator[Overload]:
    yield from _arithmetic()
    yield from _ordering()
    yield Overload("_==_", False, ("dyn", "dyn"), "bool", cel_equals)
    yield Overload("_!=_", False, ("dyn", "dyn"), "bool", lambda a, b: not cel_equals(a, b))
    yield Overload("@in", False, ("dyn", "list"), "bool", _contains, 1.0)
    yield Overload("@in", False, ("dyn", "map"), "bool", _contains)
