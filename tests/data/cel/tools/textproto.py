"""A small reader for protobuf text format, enough for cel-spec's ``tests/simple/testdata/*.textproto``.

Messages become dicts whose values are lists (every field may repeat); scalars stay as the token text (numbers,
enum names) or as ``bytes`` (quoted strings, escapes decoded the way protobuf does: byte-wise). Extension and
``Any`` names (``[type.googleapis.com/...]``) are kept as keys in brackets.
"""

from __future__ import annotations

import re

__all__ = ["Message", "parse"]

Message = dict[str, list[object]]

_TOKEN = re.compile(
    r"""\s+|\#[^\n]*
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<bracket>\[[^\]]*\])
    |(?P<word>[-+]?[A-Za-z0-9_.+-]+)
    |(?P<punct>[{}<>:,;\[\]])""",
    re.VERBOSE,
)
_SIMPLE = {
    "n": b"\n",
    "t": b"\t",
    "r": b"\r",
    "a": b"\a",
    "b": b"\b",
    "f": b"\f",
    "v": b"\v",
    "\\": b"\\",
    "'": b"'",
    '"': b'"',
    "?": b"?",
}


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"textproto: cannot read {text[pos : pos + 30]!r}")
        pos = match.end()
        kind = match.lastgroup
        if kind is not None:
            out.append((kind, match.group(kind)))
    return out


def _unquote(literal: str) -> bytes:
    body, out, i = literal[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _SIMPLE:
            out += _SIMPLE[nxt]
            i += 2
        elif nxt in "xX":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :])
            assert digits is not None, literal
            out.append(int(digits.group(), 16))
            i += 2 + len(digits.group())
        elif nxt in "uU":
            width = 4 if nxt == "u" else 8
            out += chr(int(body[i + 2 : i + 2 + width], 16)).encode()
            i += 2 + width
        else:
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None, literal
            out.append(int(digits.group(), 8))
            i += 1 + len(digits.group())
    return bytes(out)


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.index = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def message(self, close: str | None) -> Message:
        fields: Message = {}
        while True:
            token = self.peek()
            if token is None or token[1] == close:
                if close is not None:
                    self.take()
                return fields
            _, name = self.take()
            if self.peek() == ("punct", ":"):
                self.take()
            fields.setdefault(name, []).extend(self.values())
            if self.peek() in (("punct", ","), ("punct", ";")):
                self.take()

    def values(self) -> list[object]:
        if self.peek() == ("punct", "["):  # the short form of a repeated field: name: [a, b]
            self.take()
            items: list[object] = []
            while self.peek() != ("punct", "]"):
                items.append(self.value())
                if self.peek() == ("punct", ","):
                    self.take()
            self.take()
            return items
        return [self.value()]

    def value(self) -> object:
        kind, text = self.take()
        if text in ("{", "<"):
            return self.message("}" if text == "{" else ">")
        if kind == "string":
            data = _unquote(text)
            while (nxt := self.peek()) is not None and nxt[0] == "string":  # adjacent literals concatenate
                data += _unquote(self.take()[1])
            return data
        return text


def parse(text: str) -> Message:
    """The top-level message of a text-format file."""
    return _Reader(text).message(None)
