"""Splits a CEL expression into tokens: numbers, strings and bytes (with CEL's escapes), identifiers, operators.

Literal values are decoded here, so the parser sees Python values: ``int``, :class:`UInt`, ``float``, ``str``,
``bytes``. Errors carry the offset so :func:`located` can draw the caret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from phalanx.api.cel.errors import located
from phalanx.api.cel.values import UInt

__all__ = ["Token", "tokenize"]

_OPERATORS = (
    "&&",
    "||",
    "==",
    "!=",
    "<=",
    ">=",
    ".?",
    "[?",
    "<",
    ">",
    "!",
    "+",
    "-",
    "*",
    "/",
    "%",
    "?",
    ":",
    ".",
    ",",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
)
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F]+[uU]?|(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
    r"|[0-9]+[uU]?"
)
_IDENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_SPACE = re.compile(r"(?:\s+|//[^\n]*)+")
_STRING_START = re.compile(r"(?P<prefix>[rRbB]{0,2})(?P<quote>'''|\"\"\"|'|\")")
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "int", "uint", "double", "string", "bytes", "ident", "op", "eof"
    value: object
    pos: int


def tokenize(expression: str) -> list[Token]:
    """All tokens of ``expression``, ending with an ``eof`` token. Raises CelError on a malformed token."""
    tokens: list[Token] = []
    pos = 0
    while True:
        space = _SPACE.match(expression, pos)
        if space:
            pos = space.end()
        if pos >= len(expression):
            tokens.append(Token("eof", None, pos))
            return tokens
        token, pos = _next_token(expression, pos)
        tokens.append(token)


def _next_token(expression: str, pos: int) -> tuple[Token, int]:
    string = _STRING_START.match(expression, pos)
    if string:
        value, end = _read_string(expression, pos, string)
        kind = "bytes" if isinstance(value, bytes) else "string"
        return Token(kind, value, pos), end
    number = _NUMBER.match(expression, pos)
    if number:
        return _number_token(expression, pos, number.group()), number.end()
    ident = _IDENT.match(expression, pos)
    if ident:
        return Token("ident", ident.group(), pos), ident.end()
    for operator in _OPERATORS:
        if expression.startswith(operator, pos):
            return Token("op", operator, pos), pos + len(operator)
    raise located(expression, pos, f"Syntax error: token recognition error at: '{expression[pos]}'")


def _number_token(expression: str, pos: int, text: str) -> Token:
    if text[-1] in "uU":
        value = int(text[:-1], 0)
        if value > _UINT64_MAX:
            raise located(expression, pos, "invalid uint literal")
        return Token("uint", UInt(value), pos)
    if any(c in text for c in ".eE") and not text.lower().startswith("0x"):
        return Token("double", float(text), pos)
    value = int(text, 16) if text.lower().startswith("0x") else int(text)
    # One past the maximum is allowed here so that -9223372036854775808 parses; the parser rejects it unnegated.
    if value > _INT64_MAX + 1:
        raise located(expression, pos, "invalid int literal")
    return Token("int", value, pos)


def _read_string(expression: str, pos: int, start: re.Match[str]) -> tuple[str | bytes, int]:
    prefix, quote = start.group("prefix").lower(), start.group("quote")
    body_start = start.end()
    end = expression.find(quote, body_start)
    while end >= 0 and "r" not in prefix and _escaped(expression, body_start, end):
        end = expression.find(quote, end + 1)
    if end < 0 or (len(quote) == 1 and "\n" in expression[body_start:end]):
        raise located(expression, pos, "Syntax error: token recognition error at: " + repr(expression[pos:])[:40])
    raw = expression[body_start:end]
    text = raw if "r" in prefix else _unescape(expression, pos, raw, "b" in prefix)
    if "b" in prefix:
        return text.encode("latin-1") if "r" not in prefix else text.encode(), end + len(quote)
    return text, end + len(quote)


def _escaped(expression: str, start: int, index: int) -> bool:
    backslashes = 0
    while index - 1 - backslashes >= start and expression[index - 1 - backslashes] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _unescape(expression: str, pos: int, raw: str, as_bytes: bool) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != "\\":
            out.append(c if not as_bytes else c.encode().decode("latin-1"))
            i += 1
            continue
        i, decoded = _escape(expression, pos, raw, i + 1)
        out.append(decoded)
    return "".join(out)


def _escape(expression: str, pos: int, raw: str, i: int) -> tuple[int, str]:
    """Decode one escape sequence starting after the backslash; returns the next index and the character."""
    c = raw[i : i + 1]
    if c in _SIMPLE_ESCAPES:
        return i + 1, _SIMPLE_ESCAPES[c]
    widths = {"x": 2, "X": 2, "u": 4, "U": 8}
    if c in widths:
        digits = raw[i + 1 : i + 1 + widths[c]]
        if len(digits) == widths[c] and all(d in "0123456789abcdefABCDEF" for d in digits):
            return i + 1 + widths[c], chr(int(digits, 16))
    elif len(raw[i : i + 3]) == 3 and all(d in "01234567" for d in raw[i : i + 3]):
        return i + 3, chr(int(raw[i : i + 3], 8))
    raise located(expression, pos, f"Syntax error: invalid escape sequence '\\{c}'")
