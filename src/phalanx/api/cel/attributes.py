"""Field selection and indexing chains (``device.attributes["d"].id``), planned the way cel-go plans attributes.

cel-go evaluates a chain of selections and indexes as one *attribute*: the root (a variable costs 1; any other
expression its own cost plus 1), then each qualifier (1 each for constant names and indexes; a computed index costs
what evaluating it costs, plus 1 unless it is itself a variable or a chain). Optional qualifiers (``.?f``,
``[?k]``) turn the rest of the chain optional: a missing key yields ``optional.none()`` and costs nothing. Errors:
``no such key: f``, ``index out of bounds: 3``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from phalanx.api.cel import nodes
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import Frame, Plan
from phalanx.api.cel.nodes import Node
from phalanx.api.cel.runtime import map_lookup
from phalanx.api.cel.values import NONE, DomainMap, Optional, runtime_type

if TYPE_CHECKING:
    from phalanx.api.cel.interpreter import Planner

__all__ = ["is_attribute", "plan_attribute", "plan_presence"]

_INDEXES = ("_[_]", "_[?_]")
# A qualifier: (apply(frame, container) -> value, present?) with the cost charged inside.
Qualify = Callable[[Frame, object, bool], tuple[bool, object]]


def is_attribute(node: Node) -> bool:
    """Whether cel-go plans ``node`` as an attribute (a variable, a selection or an index chain)."""
    if isinstance(node, nodes.Ident):
        return True
    if isinstance(node, nodes.Select):
        return not node.test_only
    return isinstance(node, nodes.Call) and node.target is None and node.function in (*_INDEXES, "_?._")


def _key_text(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def lookup(container: object, key: object, optional: bool) -> tuple[bool, object]:
    """(present, value) of ``container[key]``; raises for a missing key unless ``optional``."""
    if isinstance(container, DomainMap) and isinstance(key, str):
        return True, container[key]
    if isinstance(container, Mapping):
        found, value = map_lookup(container, key)
        if not found and not optional:
            raise CelError(f"no such key: {_key_text(key)}")
        return found, value
    if isinstance(container, list | tuple):
        return _list_index(container, key, optional)
    if optional:
        return False, None
    raise CelError(f"no such key: {_key_text(key)}")


def _list_index(items: list[object] | tuple[object, ...], key: object, optional: bool) -> tuple[bool, object]:
    if isinstance(key, float) and key.is_integer():
        key = int(key)
    if not isinstance(key, int) or isinstance(key, bool):
        if optional:
            return False, None
        raise CelError(f"unsupported index type '{runtime_type(key).display()}' in list")
    if 0 <= key < len(items):
        return True, items[key]
    if optional:
        return False, None
    raise CelError(f"index out of bounds: {key}")


def _qualifier(planner: Planner, node: Node) -> tuple[Node, Qualify, bool] | None:
    """(operand, qualifier, optional) when ``node`` applies a qualifier to an operand."""
    if isinstance(node, nodes.Select) and not node.test_only and node not in planner.checked.idents:
        return node.operand, _constant(node.field), False
    if isinstance(node, nodes.Call) and node.target is None and node.function == "_?._":
        field = node.args[1]
        assert isinstance(field, nodes.Const)
        return node.args[0], _constant(field.value), True
    if isinstance(node, nodes.Call) and node.target is None and node.function in _INDEXES:
        optional = node.function == "_[?_]"
        index = node.args[1]
        if isinstance(index, nodes.Const):
            return node.args[0], _constant(index.value), optional
        return node.args[0], _computed(planner.plan(index), not is_attribute(index)), optional
    return None


def _constant(key: object) -> Qualify:
    def qualify(frame: Frame, container: object, optional: bool) -> tuple[bool, object]:
        present, value = lookup(container, key, optional) if optional else (True, _strict(frame, container, key))
        if present and optional:
            frame.charge(1)
        return present, value

    return qualify


def _strict(frame: Frame, container: object, key: object) -> object:
    frame.charge(1)  # cel-go observes a constant qualifier even when it fails
    return lookup(container, key, False)[1]


def _computed(index: Plan, relative: bool) -> Qualify:
    def qualify(frame: Frame, container: object, optional: bool) -> tuple[bool, object]:
        key = index(frame)
        present, value = lookup(container, key, optional)
        if relative and (present or not optional):
            frame.charge(1)
        return present, value

    return qualify


def _root(planner: Planner, node: Node) -> Plan:
    """The attribute's root: variables are resolved (cost 1); other expressions are relative attributes."""
    if isinstance(node, nodes.Ident) or node in planner.checked.idents:
        return planner.plan(node)
    inner = planner.plan(node)
    if isinstance(node, nodes.Call) and node.function == "_?_:_":
        return inner  # a conditional attribute has no cost of its own

    def relative(frame: Frame) -> object:
        value = inner(frame)
        frame.charge(1)
        return value

    return relative


def plan_attribute(planner: Planner, node: Node) -> Plan:
    """A selection/index chain ending at ``node``."""
    chain: list[tuple[Qualify, bool]] = []
    current = node
    while (step := _qualifier(planner, current)) is not None:
        current, qualify, optional = step
        chain.append((qualify, optional))
    chain.reverse()
    root = _root(planner, current)
    quals = tuple(q for q, _ in chain)
    flags = tuple(o for _, o in chain)
    if not any(flags):
        return _strict_chain(root, quals)
    return _optional_chain(root, quals, flags)


def _constant_root(value: object) -> Plan:
    return lambda frame: value


def _strict_chain(root: Plan, quals: tuple[Qualify, ...]) -> Plan:
    if len(quals) == 1:
        (only,) = quals

        def one(frame: Frame) -> object:
            container = root(frame)
            if isinstance(container, Optional):
                return _optional_chain(_constant_root(container), quals, (False,))(frame)
            return only(frame, container, False)[1]

        return one

    def chain(frame: Frame) -> object:
        value = root(frame)
        for i, qualify in enumerate(quals):
            if isinstance(value, Optional):
                return _optional_chain(_constant_root(value), quals[i:], (False,) * (len(quals) - i))(frame)
            value = qualify(frame, value, False)[1]
        return value

    return chain


def _optional_chain(root: Plan, quals: tuple[Qualify, ...], flags: tuple[bool, ...]) -> Plan:
    def chain(frame: Frame) -> object:
        value = root(frame)
        optional = isinstance(value, Optional)
        if optional:
            assert isinstance(value, Optional)
            if not value.present:
                return value
            value = value.value
        for qualify, flag in zip(quals, flags, strict=True):
            optional = optional or flag
            present, value = qualify(frame, value, optional)
            if not present:
                return NONE
        return Optional(True, value) if optional else value

    return chain


def plan_presence(planner: Planner, node: nodes.Select) -> Plan:
    """``has(operand.field)``: costs only the operand, as Kubernetes gives presence tests no cost."""
    operand = planner.plan(node.operand)
    field = node.field

    def has(frame: Frame) -> object:
        container = operand(frame)
        if isinstance(container, Optional):
            if not container.present:
                return False
            container = container.value
        if isinstance(container, Mapping):
            return field in container
        raise CelError(f"invalid type for field selection: {runtime_type(container).display()}")

    return has
