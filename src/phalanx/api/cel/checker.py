"""The type checker: infers a type for every node and resolves every call to its candidate overloads.

A port of cel-go's ``checker/checker.go`` algorithm, so that the same expressions are rejected with the same
messages: undeclared references, fields a type does not have, calls with no matching overload, comprehension
ranges that are not iterable. Generic overloads are instantiated with fresh type variables and unified
(:mod:`.unify`); when several overloads match (a ``dyn`` argument) the call keeps all of them and is dispatched at
runtime. Namespaced names (``optional.of``, ``net.IP``) are resolved here, as cel-go does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from phalanx.api.cel import nodes
from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Declarations, Function, Overload
from phalanx.api.cel.nodes import Node
from phalanx.api.cel.types import CelType, Kind, format_type
from phalanx.api.cel.unify import Substitution, is_assignable, is_assignable_list, most_general, substitute

__all__ = ["Checked", "check"]


@dataclass(slots=True)
class Checked:
    """The checker's findings. ``functions`` holds the resolved name of calls whose target was a namespace
    (the target is then not evaluated); ``idents`` the declared name or type an identifier or selection denotes."""

    types: dict[Node, CelType] = field(default_factory=dict)
    overloads: dict[Node, tuple[Overload, ...]] = field(default_factory=dict)
    functions: dict[Node, str] = field(default_factory=dict)
    idents: dict[Node, str | CelType] = field(default_factory=dict)
    errors: list[tuple[int, str]] = field(default_factory=list)

    def type_of(self, node: Node) -> CelType:
        return self.types.get(node, t.DYN)


def check(root: Node, decls: Declarations) -> Checked:
    """Type-check ``root``; errors are collected in ``Checked.errors`` as (position, message)."""
    checker = _Checker(decls)
    checker.check(root)
    checked = checker.checked
    for node, found in checked.types.items():
        checked.types[node] = substitute(checker.subs, found, True)
    return checked


def _qualified_name(node: Node) -> str | None:
    if isinstance(node, nodes.Ident):
        return node.name
    if isinstance(node, nodes.Select) and not node.test_only:
        prefix = _qualified_name(node.operand)
        return None if prefix is None else f"{prefix}.{node.field}"
    return None


class _Checker:
    def __init__(self, decls: Declarations) -> None:
        self.decls = decls
        self.scopes: list[dict[str, CelType]] = [dict(decls.variables)]
        self.subs = Substitution()
        self.counter = 0
        self.checked = Checked()

    # --- environment -------------------------------------------------------------------------------------------

    def lookup_ident(self, name: str) -> str | CelType | None:
        """A variable's type (its name is the reference), or the type a type name denotes."""
        for scope in reversed(self.scopes):
            if name in scope:
                return name
        return self.decls.types.get(name)

    def variable_type(self, name: str) -> CelType:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise KeyError(name)

    def error(self, node: Node, message: str) -> None:
        self.checked.errors.append((node.pos, message))

    def set_type(self, node: Node, cel_type: CelType) -> None:
        self.checked.types[node] = cel_type

    def type_of(self, node: Node) -> CelType:
        return self.checked.types[node]

    def fresh(self) -> CelType:
        self.counter += 1
        return t.type_param(f"_var{self.counter - 1}")

    def assignable(self, t1: CelType, t2: CelType) -> bool:
        found = is_assignable(self.subs, t1, t2)
        if found is None:
            return False
        self.subs = found
        return True

    # --- nodes -------------------------------------------------------------------------------------------------

    def check(self, node: Node) -> None:
        if isinstance(node, nodes.Const):
            self.set_type(node, _literal_type(node.value))
        elif isinstance(node, nodes.Ident):
            self.check_ident(node)
        elif isinstance(node, nodes.Select):
            self.check_select(node)
        elif isinstance(node, nodes.Call):
            self.check_call(node)
        elif isinstance(node, nodes.CreateList):
            self.check_list(node)
        elif isinstance(node, nodes.CreateMap):
            self.check_map(node)
        else:
            self.check_fold(node)

    def resolve_ident(self, node: Node, name: str) -> bool:
        found = self.lookup_ident(name)
        if found is None:
            return False
        self.checked.idents[node] = found
        self.set_type(node, self.variable_type(name) if isinstance(found, str) else t.type_of(found))
        return True

    def check_ident(self, node: nodes.Ident) -> None:
        if not self.resolve_ident(node, node.name):
            self.set_type(node, t.ERROR)
            self.error(node, f"undeclared reference to '{node.name}' (in container '')")

    def check_select(self, node: nodes.Select) -> None:
        qualified = _qualified_name(node)
        if qualified is not None and "." in qualified and self.resolve_ident(node, qualified):
            return
        result = self.select_field(node, node.operand, node.field, optional=False)
        self.set_type(node, t.BOOL if node.test_only else substitute(self.subs, result, False))

    def select_field(self, node: Node, operand: Node, name: str, optional: bool) -> CelType:
        self.check(operand)
        target = substitute(self.subs, self.type_of(operand), False)
        was_optional = target.is_optional()
        if was_optional:
            target = target.params[0]
        result = t.ERROR
        if target.kind == Kind.MAP:
            result = target.params[1]
        elif target.kind == Kind.STRUCT:
            fields = self.decls.fields.get(target.name, {})
            if name in fields:
                result = fields[name]
            else:
                self.error(node, f"undefined field '{name}'")
        elif target.kind == Kind.TYPE_PARAM:
            self.assignable(t.DYN, target)
            result = t.DYN
        else:
            if not target.is_dyn_or_error():
                self.error(node, f"type '{format_type(target)}' does not support field selection")
            result = t.DYN
        return t.optional_of(result) if was_optional or optional else result

    def check_call(self, node: nodes.Call) -> None:
        if node.function == "_?._":
            self.check_opt_select(node)
            return
        for arg in node.args:
            self.check(arg)
        if node.target is None:
            self.resolve_global(node, node.function)
            return
        prefix = _qualified_name(node.target)
        if prefix is not None:
            qualified = self.decls.functions.get(f"{prefix}.{node.function}")
            if qualified is not None:
                self.checked.functions[node] = qualified.name
                self.resolve(node, qualified, None)
                return
        self.check(node.target)
        fn = self.decls.functions.get(node.function)
        if fn is None:
            self.set_type(node, t.ERROR)
            self.error(node, f"undeclared reference to '{node.function}' (in container '')")
            return
        self.resolve(node, fn, node.target)

    def resolve_global(self, node: nodes.Call, name: str) -> None:
        fn = self.decls.functions.get(name)
        if fn is None:
            self.error(node, f"undeclared reference to '{name}' (in container '')")
            self.set_type(node, t.ERROR)
            return
        self.resolve(node, fn, None)

    def check_opt_select(self, node: nodes.Call) -> None:
        operand, name = node.args
        if not isinstance(name, nodes.Const) or not isinstance(name.value, str):
            self.error(name, f"unsupported optional field selection: {name}")
            return
        result = self.select_field(node, operand, name.value, optional=True)
        self.set_type(node, substitute(self.subs, result, False))
        self.checked.overloads[node] = tuple(o for o in self.decls.functions["_?._"].overloads)

    def resolve(self, node: nodes.Call, fn: Function, target: Node | None) -> None:
        found = self.resolve_overload(node, fn, target)
        if found is None:
            self.set_type(node, t.ERROR)
            return
        self.set_type(node, found[1])
        self.checked.overloads[node] = found[0]

    def resolve_overload(
        self, node: nodes.Call, fn: Function, target: Node | None
    ) -> tuple[tuple[Overload, ...], CelType] | None:
        operands = ((target,) if target is not None else ()) + node.args
        arg_types = [self.type_of(a) for a in operands]
        if fn.name in ("_&&_", "_||_"):
            return self.resolve_logical(node, fn, arg_types)
        matched: list[Overload] = []
        result: CelType | None = None
        for overload in fn.overloads:
            if overload.member != (target is not None):
                continue
            params, returns = self.instantiate(overload)
            subs = is_assignable_list(self.subs, arg_types, params)
            if subs is None:
                continue
            self.subs = subs
            matched.append(overload)
            returns = substitute(self.subs, returns, False)
            if result is None:
                result = returns
            elif not result.is_dyn() and returns != result:
                result = t.DYN
        if result is None:
            shown = [format_type(substitute(self.subs, a, True)) for a in arg_types]
            signature = f"{shown[0]}.({', '.join(shown[1:])})" if target is not None else f"({', '.join(shown)})"
            self.error(node, f"found no matching overload for '{fn.name}' applied to '{signature}'")
            return None
        return tuple(matched), result

    def resolve_logical(
        self, node: nodes.Call, fn: Function, arg_types: list[CelType]
    ) -> tuple[tuple[Overload, ...], CelType] | None:
        ok = True
        for arg, arg_type in zip(node.args, arg_types, strict=True):
            if not self.assignable(arg_type, t.BOOL):
                self.error(arg, f"expected type 'bool' but found '{format_type(arg_type)}'")
                ok = False
        return (fn.overloads, t.BOOL) if ok else None

    def instantiate(self, overload: Overload) -> tuple[list[CelType], CelType]:
        if not overload.type_params:
            return list(overload.params), overload.result
        fresh = Substitution({name: self.fresh() for name in sorted(overload.type_params)})
        return [substitute(fresh, p, False) for p in overload.params], substitute(fresh, overload.result, False)

    def join(self, node: Node, previous: CelType | None, current: CelType) -> CelType:
        if previous is None:
            return current
        if self.assignable(previous, current):
            return most_general(previous, current)
        return t.DYN  # mixed literals are dyn here; the homogeneous-literal validator reports them

    def element_type(self, node: Node, optional: bool) -> CelType:
        found = self.type_of(node)
        if optional:
            if found.is_optional():
                return found.params[0]
            if not found.is_dyn():
                self.error(
                    node, f"expected type '{format_type(t.optional_of(found))}' but found '{format_type(found)}'"
                )
        return found

    def check_list(self, node: nodes.CreateList) -> None:
        element: CelType | None = None
        for i, e in enumerate(node.elements):
            self.check(e)
            element = self.join(e, element, self.element_type(e, i in node.optional_indices))
        self.set_type(node, t.list_of(element if element is not None else self.fresh()))

    def check_map(self, node: nodes.CreateMap) -> None:
        key_type: CelType | None = None
        value_type: CelType | None = None
        for entry in node.entries:
            self.check(entry.key)
            key_type = self.join(entry.key, key_type, self.type_of(entry.key))
            self.check(entry.value)
            value_type = self.join(entry.value, value_type, self.element_type(entry.value, entry.optional))
        if key_type is None or value_type is None:
            key_type, value_type = self.fresh(), self.fresh()
        self.set_type(node, t.map_of(key_type, value_type))

    def check_fold(self, node: nodes.Fold) -> None:
        self.check(node.iter_range)
        self.check(node.accu_init)
        range_type = substitute(self.subs, self.type_of(node.iter_range), False)
        accu_type = self.type_of(node.accu_init)
        self.scopes.append({node.accu_var: accu_type})
        first, second = self.iteration_types(node, range_type)
        self.scopes.append({node.iter_var: first, **({node.iter_var2: second} if node.iter_var2 else {})})
        self.check(node.condition)
        self.assert_type(node.condition, t.BOOL)
        self.check(node.step)
        self.assert_type(node.step, accu_type)
        self.scopes.pop()
        self.check(node.result)
        self.scopes.pop()
        self.set_type(node, substitute(self.subs, self.type_of(node.result), False))

    def iteration_types(self, node: nodes.Fold, range_type: CelType) -> tuple[CelType, CelType]:
        two = bool(node.iter_var2)
        if range_type.kind == Kind.LIST:
            element = range_type.params[0]
            return (t.INT, element) if two else (element, t.DYN)
        if range_type.kind == Kind.MAP:
            return range_type.params[0], range_type.params[1]
        if range_type.kind in (Kind.DYN, Kind.ERROR, Kind.TYPE_PARAM):
            self.assignable(t.DYN, range_type)
            return t.DYN, t.DYN
        self.error(
            node.iter_range,
            f"expression of type '{format_type(range_type)}' cannot be range of a "
            f"comprehension (must be list, map, or dynamic)",
        )
        return t.ERROR, t.ERROR

    def assert_type(self, node: Node, expected: CelType) -> None:
        found = self.type_of(node)
        if not self.assignable(expected, found):
            self.error(node, f"expected type '{format_type(expected)}' but found '{format_type(found)}'")


_LITERALS: Mapping[type, CelType] = {
    bool: t.BOOL,
    bytes: t.BYTES,
    float: t.DOUBLE,
    int: t.INT,
    type(None): t.NULL,
    str: t.STRING,
}


def _literal_type(value: object) -> CelType:
    from phalanx.api.cel.values import UInt

    if isinstance(value, UInt):
        return t.UINT
    return _LITERALS[type(value)]
