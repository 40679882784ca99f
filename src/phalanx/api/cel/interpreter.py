"""Plans a checked expression into nested Python closures that evaluate it with cel-go's runtime cost.

Costs follow cel-go's cost tracker (``interpreter/runtimecost.go``) with Kubernetes' options: constants cost 0,
a variable or attribute 1 (plus its qualifiers, see :mod:`.attributes`), a call what its overload's cost rule
says (:mod:`.runtime_cost`), a list literal 10 and a map literal 30, ``&&``, ``||`` and ``?:`` nothing of their
own. With ``optimize`` (cel-go's ``OptOptimize``, which Kubernetes sets) literals of constants and conversions of
constants are folded at plan time and ``x in [constants]`` becomes a set lookup, all costing nothing at runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.api.cel import nodes
from phalanx.api.cel.attributes import is_attribute, plan_attribute, plan_presence
from phalanx.api.cel.checker import Checked
from phalanx.api.cel.decls import Overload
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import Frame, Lazy, Plan
from phalanx.api.cel.logic import plan_and, plan_conditional, plan_not_strictly_false, plan_or
from phalanx.api.cel.nodes import Node
from phalanx.api.cel.runtime import accepts_all, cel_equals, map_lookup, no_such_overload
from phalanx.api.cel.runtime_cost import call_coster
from phalanx.api.cel.types import CelType
from phalanx.api.cel.values import Optional, runtime_type

__all__ = ["Planner", "PlanningError"]

_CONVERSIONS = {"bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"}


class PlanningError(CelError):
    """cel-go fails already when building the program (a constant conversion that cannot succeed)."""


class _Constant:
    """A plan whose value is known at plan time (constant folding needs to see through it)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __call__(self, frame: Frame) -> object:
        return self.value


class Planner:
    def __init__(self, checked: Checked, optimize: bool = True) -> None:
        self.checked = checked
        self.optimize = optimize

    def plan(self, node: Node) -> Plan:
        if isinstance(node, nodes.Const):
            return _Constant(node.value)
        if isinstance(node, nodes.Ident):
            return self.plan_ident(node)
        if isinstance(node, nodes.Select):
            if node in self.checked.idents:
                return self.plan_ident(node)
            return plan_presence(self, node) if node.test_only else plan_attribute(self, node)
        if isinstance(node, nodes.Call):
            return self.plan_call(node)
        if isinstance(node, nodes.CreateList):
            return self.plan_list(node)
        if isinstance(node, nodes.CreateMap):
            return self.plan_map(node)
        return self.plan_fold(node)

    def plan_ident(self, node: nodes.Ident | nodes.Select) -> Plan:
        found = self.checked.idents.get(node)
        if found is not None and not isinstance(found, str):
            return _Constant(CelType(found.kind, found.name))  # a type name: a constant type value, unparameterised
        name = found if isinstance(found, str) else node.name  # type: ignore[union-attr]

        def ident(frame: Frame) -> object:
            frame.charge(1)
            value = frame.variables[name]
            return value.get(frame) if isinstance(value, Lazy) else value

        return ident

    # --- calls -------------------------------------------------------------------------------------------------

    def plan_call(self, node: nodes.Call) -> Plan:
        special = {
            "_&&_": plan_and,
            "_||_": plan_or,
            "_?_:_": plan_conditional,
            "@not_strictly_false": plan_not_strictly_false,
        }
        if node.function in special and node.target is None:
            return special[node.function](self, node)
        if node.target is None and node.function in ("_[_]", "_[?_]", "_?._"):
            return plan_attribute(self, node)
        function = self.checked.functions.get(node, node.function)
        target = node.target if node not in self.checked.functions else None
        operands = ((target,) if target is not None else ()) + node.args
        args = [self.plan(a) for a in operands]
        overloads = self.checked.overloads.get(node, ())
        if function in ("_==_", "_!=_"):
            return self.plan_equality(function, args, overloads)
        if function == "@in" and self.optimize and isinstance(args[1], _Constant):
            folded = _set_membership(args[0], args[1].value)
            if folded is not None:
                return folded
        static = [self.checked.type_of(a) for a in operands]
        plan = _call(function, overloads, args, _statically_matched(overloads, static))
        if self.optimize and function in _CONVERSIONS and len(args) == 1 and isinstance(args[0], _Constant):
            return _fold(plan)
        return plan

    def plan_equality(self, function: str, args: list[Plan], overloads: Sequence[Overload]) -> Plan:
        coster = call_coster(function, overloads)
        negate = function == "_!=_"
        left, right = args

        def equality(frame: Frame) -> object:
            a, b = left(frame), right(frame)
            result = cel_equals(a, b) != negate
            frame.charge(coster(function, (a, b), result))  # type: ignore[operator]
            return result

        return equality

    # --- aggregates ---------------------------------------------------------------------------------------------

    def plan_list(self, node: nodes.CreateList) -> Plan:
        elements = [self.plan(e) for e in node.elements]
        optional = node.optional_indices

        def make_list(frame: Frame) -> object:
            values = [plan(frame) for plan in elements]
            if optional:
                values = [_unwrap(v) for i, v in enumerate(values) if i not in optional or _present(v)]
            frame.charge(10)
            return values

        if self.optimize and all(isinstance(e, _Constant) for e in elements):
            return _fold(make_list)
        return make_list

    def plan_map(self, node: nodes.CreateMap) -> Plan:
        entries = [(self.plan(e.key), self.plan(e.value), e.optional) for e in node.entries]

        def make_map(frame: Frame) -> object:
            result: dict[object, object] = {}
            for key_plan, value_plan, optional in entries:
                key, value = key_plan(frame), value_plan(frame)
                _check_key(key)
                _remove_key(result, key)
                if optional:
                    if not _present(value):
                        continue
                    value = _unwrap(value)
                result[key] = value
            frame.charge(30)
            return result

        if self.optimize and all(isinstance(k, _Constant) and isinstance(v, _Constant) for k, v, _ in entries):
            return _fold(make_map)
        return make_map

    def plan_fold(self, node: nodes.Fold) -> Plan:
        from phalanx.api.cel.comprehensions import plan_fold

        return plan_fold(self, node)


def _fold(plan: Plan) -> Plan:
    """Evaluate a constant expression at plan time (cel-go's optimizer); its runtime cost is then zero."""
    try:
        return _Constant(plan(Frame({}, 10**18)))
    except CelError as error:
        raise PlanningError(str(error)) from None


def _set_membership(element: Plan, items: object) -> Plan | None:
    """``x in [constants]`` as cel-go's optimizer makes it: a lookup costing nothing."""
    if not isinstance(items, list) or not all(
        type(i) in (int, float, str, bool) or type(i).__name__ == "UInt" for i in items
    ):
        return None

    def membership(frame: Frame) -> object:
        value = element(frame)
        return any(cel_equals(value, i) for i in items)

    return membership


def _check_key(key: object) -> None:
    if not isinstance(key, str | int) or type(key).__name__ == "float":
        raise CelError(f"unsupported key type: {runtime_type(key).display()}")


def _remove_key(result: dict[object, object], key: object) -> None:
    """A repeated key replaces the earlier entry (cel-go keeps the last value)."""
    found, _ = map_lookup(result, key)
    if found:
        for k in list(result):
            if type(k) is type(key) and k == key:
                del result[k]


def _present(value: object) -> bool:
    if not isinstance(value, Optional):
        raise CelError(f"cannot initialize optional entry from non-optional value {value!r}")
    return value.present


def _unwrap(value: object) -> object:
    return value.value if isinstance(value, Optional) else value


def _statically_matched(overloads: Sequence[Overload], static: Sequence[CelType]) -> bool:
    """The checker proved the only overload's parameter types: no runtime type guard is needed."""
    if len(overloads) != 1 or len(overloads[0].params) != len(static):
        return False
    dynamic = ("dyn", "any", "type_param", "error")
    return all(
        p.kind not in dynamic and s.kind not in dynamic and p.kind == s.kind and p.name == s.name and not p.params
        for p, s in zip(overloads[0].params, static, strict=True)
    )


def _call(function: str, overloads: Sequence[Overload], args: Sequence[Plan], proven: bool = False) -> Plan:
    """A function call: dispatch to the overload matching the runtime values, then charge its cost."""
    coster = call_coster(function, overloads)
    constant_cost = coster if isinstance(coster, int) else None
    only = overloads[0] if len(overloads) == 1 else None
    unguarded = only is not None and (not only.guard or proven)

    def call(frame: Frame) -> object:
        values = [arg(frame) for arg in args]
        overload = only if unguarded else _dispatch(function, overloads, values)
        assert overload is not None and overload.impl is not None
        result = overload.impl(*values)
        frame.charge(constant_cost if constant_cost is not None else coster(overload.id, values, result))  # type: ignore[operator]
        return result

    return call


def _dispatch(function: str, overloads: Sequence[Overload], values: Sequence[object]) -> Overload:
    for overload in overloads:
        if not overload.guard or accepts_all(overload.params, values):
            return overload
    if len(overloads) == 1:  # cel-go names the function when its only overload's type guard fails
        shown = ", ".join(runtime_type(v).display() for v in values)
        raise CelError(f"no such overload: {function}({shown})")
    raise no_such_overload()


def activation(variables: Mapping[str, object]) -> dict[str, object]:
    return dict(variables)


__all__ += ["activation", "is_attribute"]
