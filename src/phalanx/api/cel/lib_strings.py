"""cel-go's strings extension (version 2, as Kubernetes enables it) and Kubernetes' regex library.

Indexes count code points. ``trim`` strips Unicode white space as Go's ``strings.TrimSpace``; ``split`` and
``replace`` follow Go's ``strings.SplitN`` and ``strings.Replace``; ``strings.quote`` escapes as cel-go does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.lib_core import regex

__all__ = ["functions"]

# Go's unicode.IsSpace: ASCII white space, NEL, NBSP and Unicode's White_Space separators.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_QUOTE = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _char_at(text: str, index: int) -> str:
    if not 0 <= index <= len(text):
        raise CelError(f"index out of range: {index}")
    return text[index : index + 1]


def _index_of(text: str, sub: str, offset: int = 0) -> int:
    if sub == "":
        return offset
    if offset < 0:
        raise CelError(f"index out of range: {offset}")
    if offset >= len(text):
        return -1
    return text.find(sub, offset)


def _last_index_of(text: str, sub: str, offset: int | None = None) -> int:
    if offset is None:
        return len(text) if sub == "" else text.rfind(sub)
    if sub == "":
        return offset
    if offset < 0:
        raise CelError(f"index out of range: {offset}")
    if offset >= len(text):
        return -1
    start = min(offset, len(text) - len(sub))
    return text.rfind(sub, 0, start + len(sub)) if start >= 0 else -1


def _substring(text: str, start: int, end: int | None = None) -> str:
    if end is None:
        if not 0 <= start <= len(text):
            raise CelError(f"index out of range: {start}")
        return text[start:]
    if start > end:
        raise CelError(f"invalid substring range. start: {start}, end: {end}")
    if not 0 <= start <= len(text):
        raise CelError(f"index out of range: {start}")
    if not 0 <= end <= len(text):
        raise CelError(f"index out of range: {end}")
    return text[start:end]


def _split(text: str, separator: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    if separator == "":
        chars = list(text)
        if limit < 0 or limit >= len(chars):
            return chars
        return [*chars[: limit - 1], "".join(chars[limit - 1 :])]
    return text.split(separator, limit - 1 if limit > 0 else -1)


def _replace(text: str, old: str, new: str, limit: int = -1) -> str:
    return text.replace(old, new, limit if limit >= 0 else -1)


def _join(items: Sequence[str], separator: str = "") -> str:
    return separator.join(items)


def _quote(text: str) -> str:
    return '"' + "".join(_QUOTE.get(c, c) for c in text) + '"'


def _find(text: str, pattern: str) -> str:
    match = regex(pattern).search(text)  # type: ignore[attr-defined]
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in regex(pattern).finditer(text)]  # type: ignore[attr-defined]
    return found if limit < 0 else found[:limit]


def functions() -> Iterator[Function]:
    s, i, ls = t.STRING, t.INT, t.list_of(t.STRING)

    def member(oid: str, params: Sequence[t.CelType], result: t.CelType, impl: object) -> Overload:
        return Overload(oid, tuple(params), result, impl, True)  # type: ignore[arg-type]

    yield Function("charAt", (member("string_char_at_int", (s, i), s, _char_at),))
    yield Function(
        "indexOf",
        (
            member("string_index_of_string", (s, s), i, _index_of),
            member("string_index_of_string_int", (s, s, i), i, _index_of),
        ),
    )
    yield Function(
        "lastIndexOf",
        (
            member("string_last_index_of_string", (s, s), i, _last_index_of),
            member("string_last_index_of_string_int", (s, s, i), i, _last_index_of),
        ),
    )
    yield Function("lowerAscii", (member("string_lower_ascii", (s,), s, lambda x: x.translate(_LOWER)),))
    yield Function("upperAscii", (member("string_upper_ascii", (s,), s, lambda x: x.translate(_UPPER)),))
    yield Function(
        "replace",
        (
            member("string_replace_string_string", (s, s, s), s, _replace),
            member("string_replace_string_string_int", (s, s, s, i), s, _replace),
        ),
    )
    yield Function(
        "split",
        (member("string_split_string", (s, s), ls, _split), member("string_split_string_int", (s, s, i), ls, _split)),
    )
    yield Function(
        "substring",
        (
            member("string_substring_int", (s, i), s, _substring),
            member("string_substring_int_int", (s, i, i), s, _substring),
        ),
    )
    yield Function("trim", (member("string_trim", (s,), s, lambda x: x.strip(_GO_SPACE)),))
    yield Function("join", (member("list_join", (ls,), s, _join), member("list_join_string", (ls, s), s, _join)))
    yield Function("strings.quote", (Overload("strings_quote", (s,), s, _quote),))
    yield Function("format", (member("string_format", (s, t.list_of(t.DYN)), s, _format),))
    yield Function("find", (member("string_find_string", (s, s), s, _find),))
    yield Function(
        "findAll",
        (
            member("string_find_all_string", (s, s), ls, _find_all),
            member("string_find_all_string_int", (s, s, i), ls, _find_all),
        ),
    )


def _format(text: str, args: Sequence[object]) -> str:
    from phalanx.api.cel.formatting import format_string

    return format_string(text, args)
