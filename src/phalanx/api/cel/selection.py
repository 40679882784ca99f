"""Field selection, indexing and ``has()`` on maps, lists, the DRA device object and optional values.

A missing key is the runtime error "no such key: <key>". ``.?field`` and ``[?key]`` turn absence into
``optional.none()``, and selecting from an optional value chains (none stays none), as cel-go's optional types do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import Frame
from phalanx.api.cel.syntax import Call, Has, Select
from phalanx.api.cel.values import NONE, DomainMap, Optional, type_name

if TYPE_CHECKING:
    from phalanx.api.cel.planner import Planner, Typed

__all__ = ["plan_has", "plan_index", "plan_select"]


def _field_type(planner: Planner, node: Select | Has, operand_type: str) -> str:
    fields = planner.types.get(operand_type)
    if fields is None:
        if operand_type not in ("map", "dyn", "optional_type"):
            raise planner.error(node, f"type '{operand_type}' does not support field selection")
        return "optional_type" if operand_type == "optional_type" else "dyn"
    if node.field not in fields:
        raise planner.error(node, f"undefined field '{node.field}'")
    return fields[node.field]


def _lookup(container: object, key: object) -> tuple[bool, object]:
    """(found, value) for a key of a map or an index of a list; errors for other containers."""
    if isinstance(container, Mapping):
        if isinstance(key, float) and key.is_integer():
            key = int(key)  # CEL map lookups are numeric-type agnostic
        if key in container:
            return True, container[key]
        # A DomainMap answers every domain; ``in`` is False for unknown ones, but indexing gives an empty map.
        if isinstance(container, DomainMap) and isinstance(key, str):
            return True, container[key]
        return False, None
    if isinstance(container, list | tuple):
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        if not isinstance(key, int) or isinstance(key, bool):
            raise CelError(f"no matching overload for '_[_]' applied to '(list, {type_name(key)})'")
        return (True, container[key]) if 0 <= key < len(container) else (False, None)
    raise CelError(f"no matching overload for '_[_]' applied to '({type_name(container)}, {type_name(key)})'")


def _missing(container: object, key: object) -> CelError:
    if isinstance(container, list | tuple):
        return CelError(f"index out of range: {key}")
    return CelError(f"no such key: {key}")


def _access(container: object, key: object, optional: bool) -> object:
    if isinstance(container, Optional):
        if not container.present:
            return NONE
        found, value = _lookup(container.value, key)
        return Optional(True, value) if found else NONE
    found, value = _lookup(container, key)
    if optional:
        return Optional(True, value) if found else NONE
    if not found:
        raise _missing(container, key)
    return value


def plan_select(planner: Planner, node: Select, scope: Mapping[str, str]) -> Typed:
    operand, operand_type = planner.plan(node.operand, scope)
    result_type = _field_type(planner, node, operand_type)
    field, optional = node.field, node.optional
    if optional:
        result_type = "optional_type"

    def select(frame: Frame) -> object:
        frame.charge(1)
        container = operand(frame)
        if not isinstance(container, Mapping | Optional):
            raise CelError(f"type '{type_name(container)}' does not support field selection")
        return _access(container, field, optional)

    return select, result_type


def plan_index(planner: Planner, node: Call, scope: Mapping[str, str]) -> Typed:
    (operand, operand_type), (index, _) = (planner.plan(arg, scope) for arg in node.args)
    optional = node.function == "_[?_]"
    if operand_type not in ("map", "list", "dyn", "optional_type"):
        raise planner.error(node, f"found no matching overload for '_[_]' applied to '({operand_type}, ...)'")
    element_type = "optional_type" if optional or operand_type == "optional_type" else "dyn"

    def indexed(frame: Frame) -> object:
        frame.charge(1)
        return _access(operand(frame), index(frame), optional)

    return indexed, element_type


def plan_has(planner: Planner, node: Has, scope: Mapping[str, str]) -> Typed:
    operand, operand_type = planner.plan(node.operand, scope)
    _field_type(planner, node, operand_type)
    field = node.field

    def has(frame: Frame) -> object:
        frame.charge(1)
        container = operand(frame)
        if isinstance(container, Optional):
            return container.present and isinstance(container.value, Mapping) and field in container.value
        if not isinstance(container, Mapping):
            raise CelError(f"invalid type for field selection: {type_name(container)}")
        return field in container

    return has, "bool"
