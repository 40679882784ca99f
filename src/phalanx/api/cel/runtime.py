"""Runtime rules shared by the interpreter and the function libraries: equality, ordering, type guards, sizes.

Equality is CEL's heterogeneous equality (cel-go ``ref.Val.Equal``): numbers compare by value across int, uint
and double, lists and maps element-wise, values of different types are simply unequal. Ordering is defined per
type (cross-type for numbers). A type guard checks runtime values against an overload's parameter types, which
is how a call on ``dyn`` values finds its overload, or fails with "no such overload".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.types import CelType, Kind
from phalanx.api.cel.values import Duration, Optional, Quantity, Semver, Timestamp, UInt, runtime_type

__all__ = ["accepts", "accepts_all", "cel_compare", "cel_equals", "map_lookup", "no_such_overload", "size_of"]


def no_such_overload() -> CelError:
    return CelError("no such overload")


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def cel_equals(a: object, b: object) -> bool:
    """CEL equality: heterogeneous across numbers, structural for lists and maps, false across other types."""
    if a is b:
        return not isinstance(a, float) or not math.isnan(a)
    if _numeric(a) and _numeric(b):
        if isinstance(a, float) != isinstance(b, float):
            return float(a) == float(b)  # type: ignore[arg-type]
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(cel_equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return _maps_equal(a, b)
    if isinstance(a, Optional) and isinstance(b, Optional):
        return a.present == b.present and (not a.present or cel_equals(a.value, b.value))
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.value == b.value
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.key() == b.key()
    if type(a) is not type(b):
        return False
    return bool(a == b)


def _maps_equal(a: Mapping[object, object], b: Mapping[object, object]) -> bool:
    if len(a) != len(b):
        return False
    for key, value in a.items():
        found, other = map_lookup(b, key)
        if not found or not cel_equals(value, other):
            return False
    return True


def map_lookup(container: Mapping[object, object], key: object) -> tuple[bool, object]:
    """(found, value): numeric keys match across int, uint and double, booleans only booleans."""
    if isinstance(key, str):
        if key in container:
            return True, container[key]
        return False, None
    if isinstance(key, bool):
        for k, v in container.items():
            if isinstance(k, bool) and k is key:
                return True, v
        return False, None
    if _numeric(key):
        if isinstance(key, float) and not key.is_integer():
            return False, None
        for k, v in container.items():
            if _numeric(k) and k == key:
                return True, v
        return False, None
    raise CelError(f"unsupported key type: {runtime_type(key).display()}")


def cel_compare(a: object, b: object) -> int | None:
    """-1, 0, 1, or None when the values are unordered (NaN); raises "no such overload" for mixed types.
    Python compares int with float exactly, which is what CEL requires near 2**63."""
    if _numeric(a) and _numeric(b):
        if isinstance(a, float) or isinstance(b, float):
            # cel-go compares an int or uint with a double by converting it to a double (lossy near 2**63).
            x, y = float(a), float(b)  # type: ignore[arg-type]
            if math.isnan(x) or math.isnan(y):
                return None
            return (x > y) - (x < y)
        return int((a > b) - (a < b))  # type: ignore[operator]
    if type(a) is type(b) and isinstance(a, str | bytes | bool):
        return (a > b) - (a < b)  # type: ignore[operator]
    if isinstance(a, Timestamp | Duration) and type(a) is type(b):
        return (a.nanos > b.nanos) - (a.nanos < b.nanos)
    raise no_such_overload()


def accepts(param: CelType, value: object) -> bool:
    """Whether ``value`` may be passed where ``param`` is declared (cel-go's runtime type guard)."""
    kind = param.kind
    if kind in (Kind.DYN, Kind.ANY, Kind.TYPE_PARAM):
        return True
    if kind == Kind.LIST:
        return isinstance(value, list | tuple)
    if kind == Kind.MAP:
        return isinstance(value, Mapping)
    if kind == Kind.INT:
        return type(value) is int
    if kind == Kind.UINT:
        return type(value) is UInt
    if kind == Kind.DOUBLE:
        return type(value) is float
    if kind == Kind.BOOL:
        return type(value) is bool
    if kind == Kind.STRING:
        return type(value) is str
    try:
        found = runtime_type(value)
    except TypeError:
        return False
    return found.kind == kind and found.name == param.name


def accepts_all(params: Sequence[CelType], values: Sequence[object]) -> bool:
    return len(params) == len(values) and all(accepts(p, v) for p, v in zip(params, values, strict=True))


def size_of(value: object) -> int:
    """cel-go's ``actualSize``: the size of strings, bytes, lists and maps (of an optional's value), else 1."""
    if isinstance(value, str | bytes | list | tuple | Mapping):
        return len(value)
    if isinstance(value, Optional) and value.present:
        return size_of(value.value)
    sized = getattr(value, "cel_size", None)
    if callable(sized):
        return int(sized())
    return 1
