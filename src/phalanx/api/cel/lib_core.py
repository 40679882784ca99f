"""CEL's standard library: operators, conversions, ``size``, ``type``, ``dyn``, string predicates, optionals.

Declared with cel-go's overload ids and signatures (``common/stdlib/standard.go``, the optional library of
``cel/library.go``), so the checker accepts and rejects exactly what cel-go does. Integers are 64-bit:
results outside the range are errors ("integer overflow"); ``/`` truncates toward zero and ``%`` takes the
dividend's sign, as in Go.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.runtime import cel_compare, cel_equals, map_lookup, no_such_overload
from phalanx.api.cel.types import CelType
from phalanx.api.cel.values import NONE, Optional, UInt, runtime_type

__all__ = ["INT64_MAX", "INT64_MIN", "checked_int", "checked_uint", "functions", "regex"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1
A, B = t.type_param("A"), t.type_param("B")
LIST_A, MAP_AB = t.list_of(A), t.map_of(A, B)


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
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def fn(name: str, *overloads: Overload) -> Function:
    return Function(name, overloads)


def o(
    oid: str, params: Sequence[CelType], result: CelType, impl: object = None, member: bool = False, guard: bool = True
) -> Overload:
    return Overload(oid, tuple(params), result, impl, member, guard)  # type: ignore[arg-type]


def _arithmetic() -> Iterator[Function]:
    from phalanx.api.cel import lib_time

    i, u, d = t.INT, t.UINT, t.DOUBLE
    yield fn(
        "_+_",
        o("add_bytes", (t.BYTES, t.BYTES), t.BYTES, lambda a, b: a + b),
        o("add_double", (d, d), d, lambda a, b: a + b),
        *lib_time.add_overloads(),
        o("add_int64", (i, i), i, lambda a, b: checked_int(a + b)),
        o("add_list", (LIST_A, LIST_A), LIST_A, lambda a, b: [*a, *b]),
        o("add_string", (t.STRING, t.STRING), t.STRING, lambda a, b: a + b),
        o("add_uint64", (u, u), u, lambda a, b: checked_uint(a + b)),
    )
    yield fn(
        "_/_",
        o("divide_double", (d, d), d, _float_divide),
        o("divide_int64", (i, i), i, lambda a, b: checked_int(_divide(a, b))),
        o("divide_uint64", (u, u), u, lambda a, b: UInt(_divide(a, b))),
    )
    yield fn(
        "_%_", o("modulo_int64", (i, i), i, _modulo), o("modulo_uint64", (u, u), u, lambda a, b: UInt(_modulo(a, b)))
    )
    yield fn(
        "_*_",
        o("multiply_double", (d, d), d, lambda a, b: a * b),
        o("multiply_int64", (i, i), i, lambda a, b: checked_int(a * b)),
        o("multiply_uint64", (u, u), u, lambda a, b: checked_uint(a * b)),
    )
    yield fn("-_", o("negate_double", (d,), d, lambda a: -a), o("negate_int64", (i,), i, lambda a: checked_int(-a)))
    yield fn(
        "_-_",
        o("subtract_double", (d, d), d, lambda a, b: a - b),
        *lib_time.subtract_overloads(),
        o("subtract_int64", (i, i), i, lambda a, b: checked_int(a - b)),
        o("subtract_uint64", (u, u), u, lambda a, b: checked_uint(a - b)),
    )
    yield fn("!_", o("logical_not", (t.BOOL,), t.BOOL, lambda a: not a))


_RELATIONS = {
    "_<_": ("less", lambda c: c < 0),
    "_<=_": ("less_equals", lambda c: c <= 0),
    "_>_": ("greater", lambda c: c > 0),
    "_>=_": ("greater_equals", lambda c: c >= 0),
}
_ORDERED = [
    ("bool", t.BOOL, t.BOOL),
    ("int64", t.INT, t.INT),
    ("int64_double", t.INT, t.DOUBLE),
    ("int64_uint64", t.INT, t.UINT),
    ("uint64", t.UINT, t.UINT),
    ("uint64_double", t.UINT, t.DOUBLE),
    ("uint64_int64", t.UINT, t.INT),
    ("double", t.DOUBLE, t.DOUBLE),
    ("double_int64", t.DOUBLE, t.INT),
    ("double_uint64", t.DOUBLE, t.UINT),
    ("string", t.STRING, t.STRING),
    ("bytes", t.BYTES, t.BYTES),
    ("timestamp", t.TIMESTAMP, t.TIMESTAMP),
    ("duration", t.DURATION, t.DURATION),
]


def _relation(test: object) -> object:
    def compare(a: object, b: object) -> bool:
        result = cel_compare(a, b)
        return result is not None and test(result)  # type: ignore[operator]

    return compare


def _relations() -> Iterator[Function]:
    for name, (prefix, test) in _RELATIONS.items():
        impl = _relation(test)
        yield fn(name, *(o(f"{prefix}_{suffix}", (a, b), t.BOOL, impl) for suffix, a, b in _ORDERED))


def _contains(element: object, container: object) -> bool:
    if isinstance(container, Mapping):
        return map_lookup(container, element)[0]
    if isinstance(container, list | tuple):
        return any(cel_equals(element, item) for item in container)
    raise no_such_overload()


def _size(value: object) -> int:
    if isinstance(value, str | bytes | list | tuple | Mapping):
        return len(value)
    raise no_such_overload()


def _collections() -> Iterator[Function]:
    yield fn("@in", o("in_list", (A, LIST_A), t.BOOL, _contains), o("in_map", (A, MAP_AB), t.BOOL, _contains))
    yield fn(
        "size",
        o("size_bytes", (t.BYTES,), t.INT, _size),
        o("bytes_size", (t.BYTES,), t.INT, _size, True),
        o("size_list", (LIST_A,), t.INT, _size),
        o("list_size", (LIST_A,), t.INT, _size, True),
        o("size_map", (MAP_AB,), t.INT, _size),
        o("map_size", (MAP_AB,), t.INT, _size, True),
        o("size_string", (t.STRING,), t.INT, _size),
        o("string_size", (t.STRING,), t.INT, _size, True),
    )
    yield fn("_==_", o("equals", (A, A), t.BOOL))
    yield fn("_!=_", o("not_equals", (A, A), t.BOOL))
    yield fn("_&&_", o("logical_and", (t.BOOL, t.BOOL), t.BOOL))
    yield fn("_||_", o("logical_or", (t.BOOL, t.BOOL), t.BOOL))
    yield fn("_?_:_", o("conditional", (t.BOOL, A, A), A))
    yield fn("@not_strictly_false", o("not_strictly_false", (t.BOOL,), t.BOOL))
    yield fn(
        "_[_]",
        o("index_list", (LIST_A, t.INT), A),
        o("index_map", (MAP_AB, A), B),
        o("optional_list_index_int", (t.optional_of(LIST_A), t.INT), t.optional_of(A)),
        o("optional_map_index_value", (t.optional_of(MAP_AB), A), t.optional_of(B)),
    )


def regex(pattern: str) -> object:
    from phalanx.api.cel.regex import compile_regex

    return compile_regex(pattern)


def _matches(text: str, pattern: str) -> bool:
    return regex(pattern).search(text) is not None  # type: ignore[attr-defined]


def _string_predicates() -> Iterator[Function]:
    ss = (t.STRING, t.STRING)
    yield fn("contains", o("contains_string", ss, t.BOOL, lambda s, x: x in s, True))
    yield fn("endsWith", o("ends_with_string", ss, t.BOOL, lambda s, x: s.endswith(x), True))
    yield fn("startsWith", o("starts_with_string", ss, t.BOOL, lambda s, x: s.startswith(x), True))
    yield fn("matches", o("matches", ss, t.BOOL, _matches), o("matches_string", ss, t.BOOL, _matches, True))


def _type_of(value: object) -> CelType:
    return runtime_type(value)


def _conversions() -> Iterator[Function]:
    from phalanx.api.cel import lib_convert

    yield from lib_convert.functions()
    yield fn("type", o("type", (A,), t.type_of(A), _type_of))
    yield fn("dyn", o("to_dyn", (A,), t.DYN, lambda v: v))


def _value(optional: Optional) -> object:
    if not optional.present:
        raise CelError("optional.none() dereference")
    return optional.value


def _non_zero(value: object) -> Optional:
    zero = value is None or (type(value) in (int, UInt, float, str, bytes, bool) and not value)
    if isinstance(value, list | tuple | Mapping) and not value:
        zero = True
    return NONE if zero else Optional(True, value)


def _first(items: Sequence[object], last: bool) -> Optional:
    return Optional(True, items[-1 if last else 0]) if items else NONE


def _unwrap(items: Sequence[object]) -> list[object]:
    out = []
    for item in items:
        if not isinstance(item, Optional):
            raise CelError(f"value {item} is not optional")
        if item.present:
            out.append(item.value)
    return out


def _optionals() -> Iterator[Function]:
    v, k = t.type_param("V"), t.type_param("K")
    ov, lv = t.optional_of(v), t.list_of(v)
    yield fn("optional.of", o("optional_of", (v,), ov, lambda x: Optional(True, x)))
    yield fn("optional.ofNonZeroValue", o("optional_ofNonZeroValue", (v,), ov, _non_zero))
    yield fn("optional.none", o("optional_none", (), ov, lambda: NONE))
    yield fn("value", o("optional_value", (ov,), v, _value, True))
    yield fn("hasValue", o("optional_hasValue", (ov,), t.BOOL, lambda x: x.present, True))
    yield fn("or", o("optional_or_optional", (ov, ov), ov, lambda a, b: a if a.present else b, True))
    yield fn("orValue", o("optional_orValue_value", (ov, v), v, lambda a, b: a.value if a.present else b, True))
    yield fn("_?._", o("select_optional_field", (t.DYN, t.STRING), ov))
    yield fn(
        "_[?_]",
        o("list_optindex_optional_int", (lv, t.INT), ov),
        o("optional_list_optindex_optional_int", (t.optional_of(lv), t.INT), ov),
        o("map_optindex_optional_value", (t.map_of(k, v), k), ov),
        o("optional_map_optindex_optional_value", (t.optional_of(t.map_of(k, v)), k), ov),
    )
    yield fn("last", o("list_last", (lv,), ov, lambda x: _first(x, True), True))
    yield fn("first", o("list_first", (lv,), ov, lambda x: _first(x, False), True))
    yield fn("optional.unwrap", o("optional_unwrap", (t.list_of(ov),), lv, _unwrap))
    yield fn("unwrapOpt", o("optional_unwrapOpt", (t.list_of(ov),), lv, _unwrap, True))


def functions() -> Iterator[Function]:
    from phalanx.api.cel import lib_time

    yield from _arithmetic()
    yield from _relations()
    yield from _collections()
    yield from _string_predicates()
    yield from _conversions()
    yield from _optionals()
    yield from lib_time.functions()
