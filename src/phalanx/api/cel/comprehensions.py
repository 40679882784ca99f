"""The macros that bind variables: ``all``, ``exists``, ``exists_one``, ``map``, ``filter``, ``cel.bind``,
``optMap`` and ``optFlatMap``.

Lists iterate their elements (two-variable forms: index and element), maps their keys (two-variable forms: key
and value). Each iteration costs one unit on top of its body. ``all`` is false if any element is false even when
another element errs, and ``exists`` true if any is true, matching cel-go's macro expansion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import COST_EXCEEDED, Frame, Plan
from phalanx.api.cel.syntax import Comprehension
from phalanx.api.cel.values import NONE, Optional, type_name

if TYPE_CHECKING:
    from phalanx.api.cel.planner import Planner, Typed

__all__ = ["plan_comprehension"]

_MISSING = object()
Body = Callable[[Frame], object]


def _items(range_value: object, two: bool, kind: str) -> Iterator[tuple[object, ...]]:
    if isinstance(range_value, Mapping):
        return ((key, range_value[key]) if two else (key,) for key in range_value)
    if isinstance(range_value, list | tuple):
        return ((i, v) for i, v in enumerate(range_value)) if two else ((v,) for v in range_value)
    raise CelError(f"expression of type '{type_name(range_value)}' cannot be the range of a comprehension "
                   f"(must be list, map, or dynamic)")  # fmt: skip


def _iterate(frame: Frame, names: tuple[str, ...], items: Iterator[tuple[object, ...]]) -> Iterator[None]:
    """Binds the loop variables for each item, restoring shadowed variables afterwards."""
    saved = [frame.variables.get(name, _MISSING) for name in names]
    try:
        for item in items:
            frame.charge(1)
            for name, value in zip(names, item, strict=True):
                frame.variables[name] = value
            yield
    finally:
        for name, old in zip(names, saved, strict=True):
            if old is _MISSING:
                frame.variables.pop(name, None)
            else:
                frame.variables[name] = old


def _quantifier(names: tuple[str, ...], source: Plan, predicate: Plan, decisive: bool) -> Plan:
    def quantifier(frame: Frame) -> object:
        first_error: CelError | None = None
        for _ in _iterate(frame, names, _items(source(frame), len(names) == 2, "all")):
            try:
                value = predicate(frame)
            except CelError as error:
                if str(error) == COST_EXCEEDED:
                    raise
                first_error = first_error or error
                continue
            if value is decisive:
                return decisive
            if not isinstance(value, bool):
                first_error = first_error or CelError(f"no matching overload for '_&&_' applied to "
                                                      f"'(bool, {type_name(value)})'")  # fmt: skip
        if first_error is not None:
            raise first_error
        return not decisive

    return quantifier


def _exists_one(names: tuple[str, ...], source: Plan, predicate: Plan) -> Plan:
    def exists_one(frame: Frame) -> object:
        count = 0
        for _ in _iterate(frame, names, _items(source(frame), False, "exists_one")):
            value = predicate(frame)
            if not isinstance(value, bool):
                raise CelError(f"no matching overload for 'exists_one' predicate of type '{type_name(value)}'")
            count += value
        return count == 1

    return exists_one


def _map(names: tuple[str, ...], source: Plan, transform: Plan, keep: Plan | None) -> Plan:
    def mapped(frame: Frame) -> object:
        result: list[object] = []
        for _ in _iterate(frame, names, _items(source(frame), False, "map")):
            if keep is not None:
                chosen = keep(frame)
                if not isinstance(chosen, bool):
                    raise CelError(f"no matching overload for filter predicate of type '{type_name(chosen)}'")
                if not chosen:
                    continue
            result.append(transform(frame))
        return result

    return mapped


def _filter(names: tuple[str, ...], source: Plan, predicate: Plan) -> Plan:
    def filtered(frame: Frame) -> object:
        result: list[object] = []
        for _ in _iterate(frame, names, _items(source(frame), False, "filter")):
            item = frame.variables[names[0]]
            chosen = predicate(frame)
            if not isinstance(chosen, bool):
                raise CelError(f"no matching overload for filter predicate of type '{type_name(chosen)}'")
            if chosen:
                result.append(item)
        return result

    return filtered


def _bind(names: tuple[str, ...], init: Plan, body: Plan) -> Plan:
    def bind(frame: Frame) -> object:
        value = init(frame)
        for _ in _iterate(frame, names, iter([(value,)])):
            return body(frame)
        raise AssertionError("unreachable")

    return bind


def _optional_map(names: tuple[str, ...], source: Plan, body: Plan, flat: bool) -> Plan:
    def optional_map(frame: Frame) -> object:
        optional = source(frame)
        if not isinstance(optional, Optional):
            raise CelError(f"no matching overload for 'optMap' applied to '({type_name(optional)})'")
        if not optional.present:
            return NONE
        for _ in _iterate(frame, names, iter([(optional.value,)])):
            result = body(frame)
            if flat and not isinstance(result, Optional):
                raise CelError(f"optFlatMap must return an optional, got '{type_name(result)}'")
            return result if flat else Optional(True, result)
        raise AssertionError("unreachable")

    return optional_map


def plan_comprehension(planner: Planner, node: Comprehension, scope: Mapping[str, str]) -> Typed:
    source, source_type = planner.plan(node.range, scope)
    if node.kind == "bind":
        body_plan, body_type = planner.plan(node.args[0], {**scope, node.variables[0]: source_type})
        return _bind(node.variables, source, body_plan), body_type
    inner = {**scope, **dict.fromkeys(node.variables, "dyn")}
    bodies = [planner.plan(arg, inner) for arg in node.args]
    plans = [plan for plan, _ in bodies]
    names, kind = node.variables, node.kind
    if kind in ("all", "exists"):
        return _quantifier(names, source, plans[0], decisive=kind == "exists"), "bool"
    if kind == "exists_one":
        return _exists_one(names, source, plans[0]), "bool"
    if kind == "map":
        keep, transform = (plans[0], plans[1]) if len(plans) == 2 else (None, plans[0])
        return _map(names, source, transform, keep), "list"
    if kind == "filter":
        return _filter(names, source, plans[0]), "list"
    return _optional_map(names, source, plans[0], flat=kind == "optFlatMap"), "optional_type"
