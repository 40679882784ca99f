"""Macro expansion: the parser's syntax tree (:mod:`.syntax`) into cel-go's expanded tree (:mod:`.nodes`).

Each macro becomes the comprehension cel-go's parser builds for it (``parser/macro.go``, ``ext/comprehensions.go``,
``ext/bindings.go``, the optional and lists libraries): ``[1, 2].all(x, x > 0)`` is a fold with accumulator
``__result__`` starting at ``true``, condition ``@not_strictly_false(__result__)`` and step
``__result__ && x > 0``. The shapes matter beyond evaluation: cost estimates are computed on them.
"""

from __future__ import annotations

from phalanx.api.cel import nodes, syntax
from phalanx.api.cel.errors import CelError, located
from phalanx.api.cel.nodes import ACCUMULATOR, UNUSED, Node

__all__ = ["expand"]


def expand(expression: str, tree: syntax.Expr) -> Node:
    """The expanded tree of a parsed expression; raises CelError (with position) for a malformed macro."""
    return _Expander(expression).node(tree)


class _Expander:
    def __init__(self, expression: str) -> None:
        self.expression = expression

    def error(self, pos: int, message: str) -> CelError:
        return located(self.expression, pos, message)

    def node(self, e: syntax.Expr) -> Node:
        if isinstance(e, syntax.Literal):
            return nodes.Const(e.pos, e.value)
        if isinstance(e, syntax.Ident):
            return nodes.Ident(e.pos, e.name)
        if isinstance(e, syntax.Select):
            if e.optional:
                return nodes.Call(e.pos, "_?._", None, (self.node(e.operand), nodes.Const(e.pos, e.field)))
            return nodes.Select(e.pos, self.node(e.operand), e.field)
        if isinstance(e, syntax.Has):
            return nodes.Select(e.pos, self.node(e.operand), e.field, test_only=True)
        if isinstance(e, syntax.Call):
            target = self.node(e.target) if e.target is not None else None
            return nodes.Call(e.pos, e.function, target, tuple(self.node(a) for a in e.args))
        if isinstance(e, syntax.ListLit):
            return nodes.CreateList(e.pos, tuple(self.node(x) for x in e.elements), e.optional_indices)
        if isinstance(e, syntax.MapLit):
            entries = tuple(nodes.Entry(k.pos, self.node(k), self.node(v), opt) for k, v, opt in e.entries)
            return nodes.CreateMap(e.pos, entries)
        assert isinstance(e, syntax.Comprehension)
        return self.macro(e)

    def macro(self, e: syntax.Comprehension) -> Node:
        for name in e.variables:
            if name in (ACCUMULATOR, "@result"):
                raise self.error(e.pos, "iteration variable overwrites accumulator variable")
        if len(e.variables) == 2 and e.variables[0] == e.variables[1]:
            raise self.error(e.pos, f"duplicate variable name: {e.variables[0]}")
        target = self.node(e.range)
        args = [self.node(a) for a in e.args]
        builders = {
            "all": self.quantifier,
            "exists": self.quantifier,
            "exists_one": self.exists_one,
            "existsOne": self.exists_one,
            "map": self.map,
            "filter": self.filter,
            "bind": self.bind,
            "optMap": self.opt_map,
            "optFlatMap": self.opt_map,
            "sortBy": self.sort_by,
            "transformList": self.transform,
            "transformMap": self.transform,
            "transformMapEntry": self.transform,
        }
        return builders[e.kind](e, target, args)

    # --- helpers -------------------------------------------------------------------------------------------------

    @staticmethod
    def accu(pos: int) -> Node:
        return nodes.Ident(pos, ACCUMULATOR)

    @staticmethod
    def call(pos: int, function: str, *args: Node) -> Node:
        return nodes.Call(pos, function, None, args)

    @staticmethod
    def fold(
        pos: int, names: tuple[str, ...], target: Node, init: Node, condition: Node, step: Node, result: Node
    ) -> Node:
        second = names[1] if len(names) == 2 else ""
        return nodes.Fold(pos, names[0], second, target, ACCUMULATOR, init, condition, step, result)

    # --- macros --------------------------------------------------------------------------------------------------

    def quantifier(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        p = e.pos
        if e.kind == "all":
            init: Node = nodes.Const(p, True)
            condition = self.call(p, "@not_strictly_false", self.accu(p))
            step = self.call(p, "_&&_", self.accu(p), args[0])
        else:
            init = nodes.Const(p, False)
            condition = self.call(p, "@not_strictly_false", self.call(p, "!_", self.accu(p)))
            step = self.call(p, "_||_", self.accu(p), args[0])
        return self.fold(p, e.variables, target, init, condition, step, self.accu(p))

    def exists_one(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        p = e.pos
        increment = self.call(p, "_+_", self.accu(p), nodes.Const(p, 1))
        step = self.call(p, "_?_:_", args[0], increment, self.accu(p))
        result = self.call(p, "_==_", self.accu(p), nodes.Const(p, 1))
        return self.fold(p, e.variables, target, nodes.Const(p, 0), nodes.Const(p, True), step, result)

    def map(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        p = e.pos
        keep, transform = (args[0], args[1]) if len(args) == 2 else (None, args[0])
        step = self.call(p, "_+_", self.accu(p), nodes.CreateList(p, (transform,)))
        if keep is not None:
            step = self.call(p, "_?_:_", keep, step, self.accu(p))
        return self.fold(p, e.variables, target, nodes.CreateList(p, ()), nodes.Const(p, True), step, self.accu(p))

    def filter(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        p = e.pos
        element = nodes.Ident(p, e.variables[0])
        appended = self.call(p, "_+_", self.accu(p), nodes.CreateList(p, (element,)))
        step = self.call(p, "_?_:_", args[0], appended, self.accu(p))
        return self.fold(p, e.variables, target, nodes.CreateList(p, ()), nodes.Const(p, True), step, self.accu(p))

    def transform(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        p = e.pos
        keep, transform = (args[0], args[1]) if len(args) == 2 else (None, args[0])
        if e.kind == "transformList":
            init: Node = nodes.CreateList(p, ())
            step = self.call(p, "_+_", self.accu(p), nodes.CreateList(p, (transform,)))
        elif e.kind == "transformMap":
            init = nodes.CreateMap(p, ())
            step = self.call(p, "cel.@mapInsert", self.accu(p), nodes.Ident(p, e.variables[0]), transform)
        else:
            init = nodes.CreateMap(p, ())
            step = self.call(p, "cel.@mapInsert", self.accu(p), transform)
        if keep is not None:
            step = self.call(p, "_?_:_", keep, step, self.accu(p))
        return self.fold(p, e.variables, target, init, nodes.Const(p, True), step, self.accu(p))

    @staticmethod
    def bind_fold(pos: int, name: str, init: Node, body: Node) -> Node:
        return nodes.Fold(
            pos,
            UNUSED,
            "",
            nodes.CreateList(pos, ()),
            name,
            init,
            nodes.Const(pos, False),
            nodes.Ident(pos, name),
            body,
        )

    def bind(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        return self.bind_fold(e.pos, e.variables[0], target, args[0])

    def opt_map(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        p = e.pos
        has_value = nodes.Call(p, "hasValue", target, ())
        value = nodes.Call(p, "value", self.node(e.range), ())  # a copy of the target, as cel-go makes
        bound = self.bind_fold(p, e.variables[0], value, args[0])
        present = self.call(p, "optional.of", bound) if e.kind == "optMap" else bound
        return self.call(p, "_?_:_", has_value, present, self.call(p, "optional.none"))

    def sort_by(self, e: syntax.Comprehension, target: Node, args: list[Node]) -> Node:
        p = e.pos
        if not isinstance(target, nodes.CreateList | nodes.Select | nodes.Ident | nodes.Fold | nodes.Call):
            raise self.error(
                p, "sortBy can only be applied to a list, identifier, comprehension, call or select expression"
            )
        name = "@__sortBy_input__"
        keys = self.fold(
            p,
            e.variables,
            nodes.Ident(p, name),
            nodes.CreateList(p, ()),
            nodes.Const(p, True),
            self.call(p, "_+_", self.accu(p), nodes.CreateList(p, (args[0],))),
            self.accu(p),
        )
        sort = nodes.Call(p, "@sortByAssociatedKeys", nodes.Ident(p, name), (keys,))
        return self.bind_fold(p, name, target, sort)
