"""The checks Kubernetes runs after type checking (cel-go AST validators in the base environment).

- Homogeneous aggregate literals: ``[1, 'a']`` and ``{1: 'a', 'b': 2}`` are errors ("expected type 'int' but found
  'string'"), except inside ``format()`` arguments.
- Constant regexes of ``matches`` must compile ("invalid matches argument"); constant ``duration()`` and
  ``timestamp()`` arguments must be valid.
- A constant ``'...'.format([...])`` is checked: its clauses against its literal arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from phalanx.api.cel import nodes
from phalanx.api.cel.checker import Checked
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.nodes import Node
from phalanx.api.cel.regex import is_valid_regex
from phalanx.api.cel.types import CelType, Kind, format_type

__all__ = ["validate"]


def _children(node: Node) -> Iterator[Node]:
    if isinstance(node, nodes.Select):
        yield node.operand
    elif isinstance(node, nodes.Call):
        if node.target is not None:
            yield node.target
        yield from node.args
    elif isinstance(node, nodes.CreateList):
        yield from node.elements
    elif isinstance(node, nodes.CreateMap):
        for entry in node.entries:
            yield entry.key
            yield entry.value
    elif isinstance(node, nodes.Fold):
        yield from (node.iter_range, node.accu_init, node.condition, node.step, node.result)


def _walk(node: Node, exempt: bool, visit: Callable[[Node, bool], None]) -> None:
    visit(node, exempt)
    inside = exempt or (isinstance(node, nodes.Call) and node.function == "format")
    for child in _children(node):
        _walk(child, inside, visit)


def _equivalent(a: CelType, b: CelType) -> bool:
    if a.kind != b.kind or len(a.params) != len(b.params):
        return False
    if a.kind != Kind.TYPE_PARAM and a.name != b.name:
        return False
    return all(_equivalent(x, y) for x, y in zip(a.params, b.params, strict=True))


def _homogeneous(checked: Checked, node: Node, errors: list[tuple[int, str]]) -> None:
    def mismatch(at: Node, expected: CelType, found: CelType) -> None:
        errors.append((at.pos, f"expected type '{format_type(expected)}' but found '{format_type(found)}'"))

    def element(e: Node, optional: bool) -> CelType:
        found = checked.type_of(e)
        return found.params[0] if optional and found.is_optional() else found

    if isinstance(node, nodes.CreateList):
        first: CelType | None = None
        for i, e in enumerate(node.elements):
            found = element(e, i in node.optional_indices)
            if first is None:
                first = found
            elif not _equivalent(first, found):
                mismatch(e, first, found)
                break
    elif isinstance(node, nodes.CreateMap) and node.entries:
        key, value = checked.type_of(node.entries[0].key), element(node.entries[0].value, node.entries[0].optional)
        for entry in node.entries[1:]:
            if not _equivalent(key, checked.type_of(entry.key)):
                mismatch(entry.key, key, checked.type_of(entry.key))
            found = element(entry.value, entry.optional)
            if not _equivalent(value, found):
                mismatch(entry.value, value, found)


def _literal_arguments(node: Node, errors: list[tuple[int, str]]) -> None:
    if not isinstance(node, nodes.Call) or not node.args or not isinstance(node.args[0], nodes.Const):
        return
    literal = node.args[0]
    if node.function == "matches" and isinstance(literal.value, str) and not is_valid_regex(literal.value):
        errors.append((literal.pos, "invalid matches argument"))
    if node.function in ("duration", "timestamp") and node.target is None:
        from phalanx.api.cel.lib_convert import functions

        conversions = {f.name: f for f in functions()}
        for overload in conversions[node.function].overloads:
            if overload.params[0].kind == _literal_kind(literal.value):
                try:
                    overload.impl(literal.value)  # type: ignore[misc]
                except CelError:
                    errors.append((literal.pos, f"invalid {node.function} argument"))


def _literal_kind(value: object) -> str:
    return {str: Kind.STRING, int: Kind.INT}.get(type(value), "")


_UNKNOWN = object()


def _sample(cel_type: CelType) -> object:
    """A value of a statically known type, to check format clauses against (cel-go checks the static types)."""
    from phalanx.api.cel.values import Duration, Timestamp, UInt

    samples = {
        Kind.INT: 0,
        Kind.UINT: UInt(0),
        Kind.DOUBLE: 0.0,
        Kind.STRING: "",
        Kind.BOOL: False,
        Kind.BYTES: b"",
        Kind.NULL: None,
        Kind.DURATION: Duration(0),
        Kind.TIMESTAMP: Timestamp(0),
        Kind.LIST: [],
        Kind.MAP: {},
    }
    return samples.get(cel_type.kind, _UNKNOWN)


def _format_call(checked: Checked, node: Node, errors: list[tuple[int, str]]) -> None:
    if not (
        isinstance(node, nodes.Call)
        and node.function == "format"
        and isinstance(node.target, nodes.Const)
        and isinstance(node.target.value, str)
        and len(node.args) == 1
        and isinstance(node.args[0], nodes.CreateList)
    ):
        return
    elements = node.args[0].elements
    samples = [e.value if isinstance(e, nodes.Const) else _sample(checked.type_of(e)) for e in elements]
    if any(s is _UNKNOWN for s in samples):
        return
    from phalanx.api.cel.formatting import format_string

    try:
        format_string(str(node.target.value), samples)
    except CelError as error:
        index = _argument_index(str(error), len(elements))
        errors.append((elements[index].pos if index is not None else node.pos, str(error)))


def _argument_index(message: str, count: int) -> int | None:
    return count - 1 if count and "was given" in message else None


def validate(root: Node, checked: Checked) -> list[tuple[int, str]]:
    errors: list[tuple[int, str]] = []

    def visit(node: Node, exempt: bool) -> None:
        if not exempt:
            _homogeneous(checked, node, errors)
        _literal_arguments(node, errors)
        _format_call(checked, node, errors)

    _walk(root, False, visit)
    return errors
