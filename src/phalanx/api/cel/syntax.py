"""The CEL abstract syntax tree: a handful of frozen node types the parser builds and the planner consumes.

Operators are calls with cel-go's internal names (``_+_``, ``_&&_``, ``@in``), so the planner and the checker
treat them like any other function. Macros (``has``, ``all``, ``exists``, ``map``, ``cel.bind`` ...) keep their
own node because they bind variables and must not evaluate their arguments eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Call", "Comprehension", "Expr", "Has", "Ident", "ListLit", "Literal", "MapLit", "Select"]


@dataclass(frozen=True, slots=True)
class Literal:
    pos: int
    value: object


@dataclass(frozen=True, slots=True)
class Ident:
    pos: int
    name: str


@dataclass(frozen=True, slots=True)
class Select:
    """``operand.field``; ``optional`` for ``operand.?field``."""

    pos: int
    operand: Expr
    field: str
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Has:
    """The ``has(operand.field)`` macro: presence test, never an error for a missing key."""

    pos: int
    operand: Expr
    field: str


@dataclass(frozen=True, slots=True)
class Call:
    """A function or operator call; ``target`` is the receiver of a member call (``s.startsWith(x)``)."""

    pos: int
    function: str
    target: Expr | None
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class ListLit:
    pos: int
    elements: tuple[Expr, ...]
    optional_indices: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class MapLit:
    pos: int
    entries: tuple[tuple[Expr, Expr, bool], ...]  # key, value, optional entry (``?key: value``)


@dataclass(frozen=True, slots=True)
class Comprehension:
    """A macro that binds variables: ``kind`` is all, exists, exists_one, map, filter, bind, optMap, optFlatMap."""

    pos: int
    kind: str
    range: Expr
    variables: tuple[str, ...]
    args: tuple[Expr, ...]


Expr = Literal | Ident | Select | Has | Call | ListLit | MapLit | Comprehension
