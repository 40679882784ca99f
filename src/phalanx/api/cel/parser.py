"""A recursive-descent parser for the CEL grammar (cel-spec ``langdef``), producing :mod:`.syntax` nodes.

Macro calls are recognised here and kept as :class:`Comprehension` nodes (``has(a.b)``, ``all``, ``exists``,
``exists_one``/``existsOne``, ``map``, ``filter``, the two-variable forms and ``transformList``/``transformMap``/
``transformMapEntry``, ``sortBy``, ``cel.bind``, ``optMap``/``optFlatMap``); :mod:`.macros` expands them into
cel-go's comprehension shape. Node positions follow cel-go: a call sits at its ``(``, a selection at its ``.``.
"""

from __future__ import annotations

from phalanx.api.cel.errors import CelError, located
from phalanx.api.cel.lexer import Token, tokenize
from phalanx.api.cel.syntax import Call, Comprehension, Expr, Has, Ident, ListLit, Literal, MapLit, Select

__all__ = ["parse"]

_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_"}
_ADDITIVE = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE = {"*": "_*_", "/": "_/_", "%": "_%_"}
_RESERVED = {
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
}
# Receiver macros by argument count; the value is the number of leading arguments that name variables.
_MACROS: dict[str, dict[int, int]] = {
    "all": {2: 1, 3: 2},
    "exists": {2: 1, 3: 2},
    "exists_one": {2: 1, 3: 2},
    "existsOne": {2: 1, 3: 2},
    "map": {2: 1, 3: 1},
    "filter": {2: 1},
    "optMap": {2: 1},
    "optFlatMap": {2: 1},
    "sortBy": {2: 1},
    "transformList": {3: 2, 4: 2},
    "transformMap": {3: 2, 4: 2},
    "transformMapEntry": {3: 2, 4: 2},
}
# What ANTLR lists where cel-go's grammar expects an expression.
_EXPRESSION_START = (
    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
)
# cel-go allows 250 nested levels; each level here is ~9 Python frames, so the limit keeps clear of Python's.
_MAX_DEPTH = 100


def parse(expression: str) -> Expr:
    """Parse a whole expression; raises CelError with position on a syntax error."""
    return _Parser(expression).parse()


class _Parser:
    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tokens = tokenize(expression)
        self.index = 0
        self.depth = 0

    def parse(self) -> Expr:
        expr = self.expr()
        if self.peek().kind != "eof":
            self.fail(self.peek(), f"Syntax error: extraneous input {self.describe(self.peek())} expecting <EOF>")
        return expr

    # --- token helpers -------------------------------------------------------------------------------------------

    def peek(self) -> Token:
        return self.tokens[self.index]

    def next(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, operator: str) -> bool:
        token = self.tokens[self.index]
        return token.kind == "op" and token.value == operator

    def accept(self, operator: str) -> Token | None:
        return self.next() if self.at(operator) else None

    def expect(self, operator: str) -> Token:
        if not self.at(operator):
            token = self.peek()
            self.fail(token, f"Syntax error: mismatched input {self.describe(token)} expecting '{operator}'")
        return self.next()

    def describe(self, token: Token) -> str:
        if token.kind == "eof":
            return "'<EOF>'"
        end = self.tokens[self.index + 1].pos if token is self.peek() else token.pos + 1
        return "'" + self.expression[token.pos : end].strip() + "'"

    def fail(self, token: Token, message: str) -> CelError:
        raise located(self.expression, token.pos, message)

    # --- grammar -------------------------------------------------------------------------------------------------

    def expr(self) -> Expr:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            self.fail(self.peek(), f"expression recursion limit exceeded: {_MAX_DEPTH}")
        condition = self.binary_or()
        if question := self.accept("?"):
            then = self.binary_or()
            self.expect(":")
            otherwise = self.expr()
            condition = Call(question.pos, "_?_:_", None, (condition, then, otherwise))
        self.depth -= 1
        return condition

    def binary_or(self) -> Expr:
        left = self.binary_and()
        while token := self.accept("||"):
            left = Call(token.pos, "_||_", None, (left, self.binary_and()))
        return left

    def binary_and(self) -> Expr:
        left = self.relation()
        while token := self.accept("&&"):
            left = Call(token.pos, "_&&_", None, (left, self.relation()))
        return left

    def relation(self) -> Expr:
        left = self.additive()
        while True:
            token = self.peek()
            if token.kind == "op" and token.value in _RELATIONS:
                self.next()
                left = Call(token.pos, _RELATIONS[str(token.value)], None, (left, self.additive()))
            elif token.kind == "ident" and token.value == "in":
                self.next()
                left = Call(token.pos, "@in", None, (left, self.additive()))
            else:
                return left

    def additive(self) -> Expr:
        left = self.multiplicative()
        while (token := self.peek()).kind == "op" and token.value in _ADDITIVE:
            self.next()
            left = Call(token.pos, _ADDITIVE[str(token.value)], None, (left, self.multiplicative()))
        return left

    def multiplicative(self) -> Expr:
        left = self.unary()
        while (token := self.peek()).kind == "op" and token.value in _MULTIPLICATIVE:
            self.next()
            left = Call(token.pos, _MULTIPLICATIVE[str(token.value)], None, (left, self.unary()))
        return left

    def unary(self) -> Expr:
        token = self.peek()
        if self.accept("!"):
            return Call(token.pos, "!_", None, (self.unary(),))
        if self.accept("-"):
            literal = self.peek()
            if literal.kind in ("int", "double") and self.tokens[self.index + 1].value not in (".", "[", ".?", "[?"):
                self.next()  # a negative literal, so that -9223372036854775808 is representable
                return self.member(Literal(token.pos, -literal.value))  # type: ignore[operator]
            return Call(token.pos, "-_", None, (self.unary(),))
        return self.member(self.primary())

    def member(self, operand: Expr) -> Expr:
        if isinstance(operand, Literal) and type(operand.value) is int and operand.value > 2**63 - 1:
            raise located(self.expression, operand.pos, "invalid int literal")
        while True:
            token = self.peek()
            if self.accept(".") or self.accept(".?"):
                operand = self.field(operand, token)
            elif self.accept("[") or self.accept("[?"):
                index = self.expr()
                self.expect("]")
                operand = Call(token.pos, "_[?_]" if token.value == "[?" else "_[_]", None, (operand, index))
            else:
                return operand

    def field(self, operand: Expr, dot: Token) -> Expr:
        name = self.next()
        if name.kind != "ident":
            self.fail(name, f"Syntax error: no viable alternative at input '.{self.describe(name).strip(chr(39))}'")
        if dot.value == "." and self.at("("):
            paren = self.next()
            return self.member_call(operand, str(name.value), paren.pos, self.arguments(")"))
        return Select(dot.pos, operand, str(name.value), optional=dot.value == ".?")

    def member_call(self, target: Expr, function: str, pos: int, args: list[Expr]) -> Expr:
        if isinstance(target, Ident) and target.name == "cel" and function == "bind" and len(args) == 3:
            return self.macro(target, "bind", pos, args, 1)
        variables = _MACROS.get(function, {}).get(len(args))
        if variables is not None:
            return self.macro(target, function, pos, args, variables)
        return Call(pos, function, target, tuple(args))

    def macro(self, target: Expr, kind: str, pos: int, args: list[Expr], variables: int) -> Expr:
        names: list[str] = []
        for arg in args[:variables]:
            if not isinstance(arg, Ident):
                message = {
                    "bind": "cel.bind() variable names must be simple identifiers",
                    "optMap": "optMap() variable name must be a simple identifier",
                    "optFlatMap": "optFlatMap() variable name must be a simple identifier",
                    "map": "argument is not an identifier",
                    "filter": "argument is not an identifier",
                    "sortBy": "argument is not an identifier",
                }.get(kind, "argument must be a simple name")
                raise located(self.expression, arg.pos, message)
            names.append(arg.name)
        if kind == "bind":
            return Comprehension(pos, "bind", args[1], tuple(names), (args[2],))
        return Comprehension(pos, kind, target, tuple(names), tuple(args[variables:]))

    def arguments(self, close: str) -> list[Expr]:
        args: list[Expr] = []
        if self.accept(close):
            return args
        while True:
            args.append(self.expr())
            if self.accept(close):
                return args
            self.expect(",")

    def primary(self) -> Expr:
        token = self.next()
        if token.kind in ("int", "uint", "double", "string", "bytes"):
            return Literal(token.pos, token.value)
        if token.kind == "ident":
            return self.identifier(token)
        if token.kind == "op" and token.value == ".":
            name = self.next()
            if name.kind == "ident":
                return self.identifier(name)
        if token.kind == "op" and token.value == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if token.kind == "op" and token.value in ("[", "[?"):
            return self.list_literal(token, first_optional=token.value == "[?")
        if token.kind == "op" and token.value == "{":
            return self.map_literal(token)
        raise self.fail(token, f"Syntax error: mismatched input {self.describe(token)} expecting {_EXPRESSION_START}")

    def identifier(self, token: Token) -> Expr:
        name = str(token.value)
        constants = {"true": True, "false": False, "null": None}
        if name in constants:
            return Literal(token.pos, constants[name])
        if name in _RESERVED or name == "in":
            self.fail(token, f"Syntax error: reserved identifier: {name}")
        paren = self.accept("(")
        if paren is None:
            return Ident(token.pos, name)
        args = self.arguments(")")
        if name == "has" and len(args) == 1:
            return self.has_macro(paren, args)
        return Call(paren.pos, name, None, tuple(args))

    def has_macro(self, paren: Token, args: list[Expr]) -> Expr:
        select = args[0]
        if not isinstance(select, Select) or select.optional:
            raise located(self.expression, select.pos, "invalid argument to has() macro")
        return Has(select.pos, select.operand, select.field)

    def list_literal(self, token: Token, first_optional: bool) -> Expr:
        elements: list[Expr] = []
        optional: set[int] = {0} if first_optional else set()
        while not self.accept("]"):
            if self.accept("?"):
                optional.add(len(elements))
            elements.append(self.expr())
            if not self.at("]"):
                self.expect(",")
        return ListLit(token.pos, tuple(elements), frozenset(optional))

    def map_literal(self, token: Token) -> Expr:
        entries: list[tuple[Expr, Expr, bool]] = []
        while not self.accept("}"):
            optional = self.accept("?") is not None
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr(), optional))
            if not self.at("}"):
                self.expect(",")
        return MapLit(token.pos, tuple(entries))
