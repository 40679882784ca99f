"""List functions: cel-go's lists extension (version 3) and sets extension, Kubernetes' lists library, and the
``cel.@mapInsert`` helper of the two-variable comprehensions.

Kubernetes declares ``sum`` only for int, uint, double and duration lists and ``isSorted``/``min``/``max`` only for
comparable element types, so ``['a', 'b'].sum()`` is a compile error, as in kube-apiserver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.runtime import cel_compare, cel_equals, map_lookup, no_such_overload
from phalanx.api.cel.types import CelType
from phalanx.api.cel.values import Duration, UInt

__all__ = ["functions"]

_COMPARABLE = [
    ("int", t.INT),
    ("uint", t.UINT),
    ("double", t.DOUBLE),
    ("bool", t.BOOL),
    ("duration", t.DURATION),
    ("timestamp", t.TIMESTAMP),
    ("string", t.STRING),
    ("bytes", t.BYTES),
]
_SUMMABLE = [("int", t.INT), ("uint", t.UINT), ("double", t.DOUBLE), ("duration", t.DURATION)]
_ZERO: dict[str, object] = {"int": 0, "uint": UInt(0), "double": 0.0, "duration": Duration(0)}


def _sum(kind: str) -> Callable[[Sequence[object]], object]:
    def total(items: Sequence[object]) -> object:
        acc: object = _ZERO[kind]
        for item in items:
            acc = _add(acc, item)
        return acc

    return total


def _add(a: object, b: object) -> object:
    from phalanx.api.cel.lib_core import checked_int, checked_uint

    if type(a) is not type(b):
        raise no_such_overload()
    if isinstance(a, Duration) and isinstance(b, Duration):
        return Duration(a.nanos + b.nanos)
    if isinstance(a, UInt):
        return checked_uint(a + b)  # type: ignore[operator]
    if isinstance(a, int):
        return checked_int(a + b)  # type: ignore[operator]
    return a + b  # type: ignore[operator]


def _order(a: object, b: object) -> int:
    result = cel_compare(a, b)
    return 0 if result is None else result


def _is_sorted(items: Sequence[object]) -> bool:
    return all(_order(items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def _extreme(name: str, prefer: int) -> Callable[[Sequence[object]], object]:
    def pick(items: Sequence[object]) -> object:
        if not items:
            raise CelError(f"{name} called on empty list")
        result = items[0]
        for item in items[1:]:
            if _order(result, item) == prefer:
                result = item
        return result

    return pick


def _index_of(items: Sequence[object], value: object) -> int:
    return next((i for i, x in enumerate(items) if cel_equals(x, value)), -1)


def _last_index_of(items: Sequence[object], value: object) -> int:
    return next((i for i in range(len(items) - 1, -1, -1) if cel_equals(items[i], value)), -1)


def _slice(items: Sequence[object], start: int, end: int) -> list[object]:
    if start < 0 or end < 0:
        raise CelError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise CelError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if len(items) < end:
        raise CelError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return list(items[start:end])


def _flatten(items: Sequence[object], depth: int = 1) -> list[object]:
    if depth < 0:
        raise CelError("level must be non-negative")
    out: list[object] = []
    for item in items:
        if isinstance(item, list | tuple) and depth > 0:
            out.extend(_flatten(item, depth - 1))
        else:
            out.append(item)
    return out


def _sort_by_keys(items: Sequence[object], keys: Sequence[object]) -> list[object]:
    if len(items) != len(keys):
        raise CelError(
            f"@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but "
            f"got {len(items)} and {len(keys)} elements respectively"
        )
    if not items:
        return list(items)
    first = type(keys[0])
    if any(type(k) is not first for k in keys):
        raise CelError("list elements must have the same type")
    order = sorted(range(len(items)), key=lambda i: _Key(keys[i]))
    return [items[i] for i in order]


class _Key:
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __lt__(self, other: _Key) -> bool:
        return _order(self.value, other.value) < 0


def _distinct(items: Sequence[object]) -> list[object]:
    out: list[object] = []
    for item in items:
        if not any(cel_equals(item, seen) for seen in out):
            out.append(item)
    return out


def _map_insert(target: Mapping[object, object], key: object, value: object = None, *rest: object) -> object:
    if isinstance(key, Mapping) and value is None:
        result: object = target
        for k, v in key.items():
            result = _map_insert(result, k, v)  # type: ignore[arg-type]
        return result
    if map_lookup(target, key)[0]:
        raise CelError(f"insert failed: key {key} already exists")
    return {**target, key: value}


def _k8s_lists() -> Iterator[Function]:
    a = t.type_param("A")
    yield Function(
        "isSorted",
        tuple(Overload(f"list_{n}_is_sorted_bool", (t.list_of(c),), t.BOOL, _is_sorted, True) for n, c in _COMPARABLE),
    )
    yield Function("sum", tuple(Overload(f"list_{n}_sum_{n}", (t.list_of(c),), c, _sum(n), True) for n, c in _SUMMABLE))
    yield Function(
        "max",
        tuple(Overload(f"list_{n}_max_{n}", (t.list_of(c),), c, _extreme("max", -1), True) for n, c in _COMPARABLE),
    )
    yield Function(
        "min",
        tuple(Overload(f"list_{n}_min_{n}", (t.list_of(c),), c, _extreme("min", 1), True) for n, c in _COMPARABLE),
    )
    yield Function("indexOf", (Overload("list_a_index_of_int", (t.list_of(a), a), t.INT, _index_of, True),))
    yield Function(
        "lastIndexOf", (Overload("list_a_last_index_of_int", (t.list_of(a), a), t.INT, _last_index_of, True),)
    )


def _ext_lists() -> Iterator[Function]:
    lt = t.list_of(t.type_param("T"))
    ld = t.list_of(t.DYN)
    yield Function("slice", (Overload("list_slice", (lt, t.INT, t.INT), lt, _slice, True),))
    yield Function(
        "flatten",
        (
            Overload("list_flatten", (t.list_of(lt),), lt, _flatten, True, guard=False),
            Overload("list_flatten_int", (ld, t.INT), ld, _flatten, True, guard=False),
        ),
    )
    yield Function(
        "sort",
        tuple(
            Overload(f"list_{n}_sort", (t.list_of(c),), t.list_of(c), lambda x: _sort_by_keys(x, x), True)
            for n, c in _COMPARABLE
        ),
    )
    yield Function(
        "@sortByAssociatedKeys",
        tuple(
            Overload(f"list_{n}_sortByAssociatedKeys", (lt, t.list_of(c)), lt, _sort_by_keys, True)
            for n, c in _COMPARABLE
        ),
    )
    yield Function("lists.range", (Overload("lists_range", (t.INT,), t.list_of(t.INT), lambda n: list(range(n))),))
    yield Function("reverse", (Overload("list_reverse", (lt,), lt, lambda x: list(reversed(x)), True),))
    yield Function("distinct", (Overload("list_distinct", (lt,), lt, _distinct, True),))


def _sets() -> Iterator[Function]:
    lt: CelType = t.list_of(t.type_param("T"))

    def contains(a: Sequence[object], b: Sequence[object]) -> bool:
        return all(any(cel_equals(x, y) for y in a) for x in b)

    def intersects(a: Sequence[object], b: Sequence[object]) -> bool:
        return any(any(cel_equals(x, y) for y in a) for x in b)

    yield Function("sets.contains", (Overload("list_sets_contains_list", (lt, lt), t.BOOL, contains),))
    yield Function(
        "sets.equivalent",
        (Overload("list_sets_equivalent_list", (lt, lt), t.BOOL, lambda a, b: contains(a, b) and contains(b, a)),),
    )
    yield Function("sets.intersects", (Overload("list_sets_intersects_list", (lt, lt), t.BOOL, intersects),))


def functions() -> Iterator[Function]:
    yield from _k8s_lists()
    yield from _ext_lists()
    yield from _sets()
    k, v = t.type_param("K"), t.type_param("V")
    kv = t.map_of(k, v)
    yield Function(
        "cel.@mapInsert",
        (
            Overload("cel_@mapInsert_map_key_value", (kv, k, v), kv, _map_insert),
            Overload("cel_@mapInsert_map_map", (kv, kv), kv, _map_insert),
        ),
    )
