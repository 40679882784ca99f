"""The expanded CEL syntax tree that the checker, the cost estimator and the planner work on.

It is cel-go's AST: macros are already expanded into :class:`Fold` comprehensions with an accumulator
(``__result__``), ``has(a.b)`` is a test-only :class:`Select`, ``a.?b`` is the call ``_?._(a, "b")``. Keeping
cel-go's exact shape is what makes the cost estimate and the runtime cost come out as Kubernetes computes them.
Nodes compare by identity: the checker's type map is keyed by node.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ACCUMULATOR",
    "UNUSED",
    "Call",
    "Const",
    "CreateList",
    "CreateMap",
    "Entry",
    "Fold",
    "Ident",
    "Node",
    "Select",
]

ACCUMULATOR = "__result__"
UNUSED = "#unused"


@dataclass(eq=False, slots=True)
class Const:
    pos: int
    value: object


@dataclass(eq=False, slots=True)
class Ident:
    pos: int
    name: str


@dataclass(eq=False, slots=True)
class Select:
    pos: int
    operand: Node
    field: str
    test_only: bool = False


@dataclass(eq=False, slots=True)
class Call:
    pos: int
    function: str
    target: Node | None
    args: tuple[Node, ...]


@dataclass(eq=False, slots=True)
class CreateList:
    pos: int
    elements: tuple[Node, ...]
    optional_indices: frozenset[int] = frozenset()


@dataclass(eq=False, slots=True)
class Entry:
    pos: int
    key: Node
    value: Node
    optional: bool = False


@dataclass(eq=False, slots=True)
class CreateMap:
    pos: int
    entries: tuple[Entry, ...]


@dataclass(eq=False, slots=True)
class Fold:
    """A comprehension: for each element of ``iter_range`` (index/key and value with ``iter_var2``), stop when
    ``condition`` is false, else ``accu_var = step``; the value is ``result``. ``cel.bind`` is a fold over ``[]``."""

    pos: int
    iter_var: str
    iter_var2: str
    iter_range: Node
    accu_var: str
    accu_init: Node
    condition: Node
    step: Node
    result: Node

    def is_bind(self) -> bool:
        """cel-go's test: an empty literal range, a constant false condition and a named accumulator."""
        return (
            isinstance(self.iter_range, CreateList)
            and not self.iter_range.elements
            and isinstance(self.condition, Const)
            and self.condition.value is False
            and self.accu_var != ACCUMULATOR
        )


Node = Const | Ident | Select | Call | CreateList | CreateMap | Fold
