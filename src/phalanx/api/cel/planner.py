"""Compiles a checked syntax tree into nested Python closures, one per node, with CEL's evaluation rules.

Every node charges the frame one cost unit (sized functions charge by size, each comprehension iteration one
more), so runaway expressions stop at the cost limit. ``&&``, ``||``, ``all`` and ``exists`` absorb an error
when the other operand decides the result, as cel-go does. Static types, computed on the way, reject what
cel-go's checker rejects: unknown names and fields, functions with no overload for the argument types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.api.cel.comprehensions import plan_comprehension
from phalanx.api.cel.errors import CelError, located
from phalanx.api.cel.frame import Frame, Plan
from phalanx.api.cel.logic import plan_and, plan_conditional, plan_or
from phalanx.api.cel.overloads import Overload, Table, no_overload, select
from phalanx.api.cel.selection import plan_has, plan_index, plan_select
from phalanx.api.cel.syntax import Call, Comprehension, Expr, Has, Ident, ListLit, Literal, MapLit, Select
from phalanx.api.cel.values import Optional, type_name

__all__ = ["Planner", "Typed"]

Typed = tuple[Plan, str]


class Planner:
    """Plans one expression; ``scope`` maps variable names to static types (``device`` and macro variables)."""

    def __init__(self, expression: str, table: Table, types: Mapping[str, Mapping[str, str]]) -> None:
        self.expression = expression
        self.table = table
        self.types = types  # object type name -> field -> type, e.g. the DRA device

    def error(self, node: Expr, message: str) -> CelError:
        return located(self.expression, node.pos, message)

    def plan(self, node: Expr, scope: Mapping[str, str]) -> Typed:
        if isinstance(node, Literal):
            value = node.value
            return (lambda frame: value), type_name(value)
        if isinstance(node, Ident):
            return self.plan_ident(node, scope)
        if isinstance(node, Select):
            return plan_select(self, node, scope)
        if isinstance(node, Has):
            return plan_has(self, node, scope)
        if isinstance(node, Call):
            return self.plan_call(node, scope)
        if isinstance(node, ListLit):
            return self.plan_list(node, scope)
        if isinstance(node, MapLit):
            return self.plan_map(node, scope)
        assert isinstance(node, Comprehension)
        return plan_comprehension(self, node, scope)

    def plan_ident(self, node: Ident, scope: Mapping[str, str]) -> Typed:
        if node.name not in scope:
            raise self.error(node, f"undeclared reference to '{node.name}' (in container '')")
        name = node.name

        def ident(frame: Frame) -> object:
            frame.charge(1)
            return frame.variables[name]

        return ident, scope[name]

    def plan_call(self, node: Call, scope: Mapping[str, str]) -> Typed:
        special = {"_&&_": plan_and, "_||_": plan_or, "_?_:_": plan_conditional}
        if node.function in special:
            return special[node.function](self, node, scope)
        if node.function in ("_[_]", "_[?_]"):
            return plan_index(self, node, scope)
        operands = ((node.target,) if node.target is not None else ()) + node.args
        planned = [self.plan(arg, scope) for arg in operands]
        types = [t for _, t in planned]
        if node.function not in self.table:
            raise self.error(node, f"undeclared reference to '{node.function}' (in container '')")
        candidates = self.table.candidates(node.function, node.target is not None, types)
        if node.function in ("_==_", "_!=_") and not _comparable_types(*types):
            candidates = []
        if not candidates:
            shown = ", ".join(types)
            raise self.error(node, f"found no matching overload for '{node.function}' applied to '({shown})'")
        return _call(node.function, candidates, [p for p, _ in planned]), _result(candidates)

    def plan_list(self, node: ListLit, scope: Mapping[str, str]) -> Typed:
        elements = [self.plan(e, scope)[0] for e in node.elements]
        optional = node.optional_indices

        def make_list(frame: Frame) -> object:
            frame.charge(1)
            values = [plan(frame) for plan in elements]
            if not optional:
                return values
            return [_unwrap(v, i in optional) for i, v in enumerate(values) if i not in optional or _present(v)]

        return make_list, "list"

    def plan_map(self, node: MapLit, scope: Mapping[str, str]) -> Typed:
        entries = [(self.plan(k, scope)[0], self.plan(v, scope)[0], opt) for k, v, opt in node.entries]

        def make_map(frame: Frame) -> object:
            frame.charge(1)
            result: dict[object, object] = {}
            for key_plan, value_plan, optional in entries:
                key, value = key_plan(frame), value_plan(frame)
                if not isinstance(key, str | int | bool) or isinstance(key, float):
                    raise CelError(f"unsupported key type: {type_name(key)}")
                if key in result:
                    raise CelError(f"Failed with repeated key: {key}")
                if optional and not _present(value):
                    continue
                result[key] = _unwrap(value, optional)
            return result

        return make_map, "map"


def _comparable_types(left: str, right: str) -> bool:
    """Static types that ``==`` accepts: equal, unknown on one side, numbers of any kind, or null."""
    numeric = {"int", "uint", "double"}
    return left == right or "dyn" in (left, right) or "null_type" in (left, right) or {left, right} <= numeric


def _present(value: object) -> bool:
    if not isinstance(value, Optional):
        raise CelError(f"no matching overload for optional entry of type '{type_name(value)}'")
    return value.present


def _unwrap(value: object, optional: bool) -> object:
    return value.value if optional and isinstance(value, Optional) else value


def _result(candidates: Sequence[Overload]) -> str:
    results = {o.result for o in candidates}
    return results.pop() if len(results) == 1 else "dyn"


def _sized(values: Sequence[object]) -> int:
    return sum(len(v) for v in values if isinstance(v, str | bytes | list | tuple | Mapping))


def _call(function: str, candidates: Sequence[Overload], args: Sequence[Plan]) -> Plan:
    only = candidates[0] if len(candidates) == 1 else None
    static = only is not None and all(p == "dyn" for p in only.params)

    def call(frame: Frame) -> object:
        values = [arg(frame) for arg in args]
        overload = only if static else select(function, candidates, values)
        assert overload is not None
        frame.charge(1 + int(overload.size_cost * _sized(values)) if overload.size_cost else 1)
        try:
            return overload.impl(*values)
        except (TypeError, ValueError, OverflowError) as error:
            # An implementation rejecting a value it was typed for is still CEL's "no matching overload".
            raise no_overload(function, values) from error

    return call
