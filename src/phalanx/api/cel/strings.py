"""String and type-conversion functions: CEL's standard ones, cel-go's strings extension and Kubernetes' regex.

Indexes count Unicode code points, as CEL does. Regular expressions are RE2 in Kubernetes; Python's ``re``
accepts the RE2 subset selectors use, and an expression it rejects is reported as an invalid regex.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache

from phalanx.api.cel.arithmetic import UINT64_MAX, checked_int, checked_uint
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.overloads import Overload
from phalanx.api.cel.values import UInt

__all__ = ["overloads"]

_S = 0.1  # cel-go charges string operations one unit per ten characters


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise CelError(f"invalid regex string: {pattern}: {error}") from None


def _index(text: str, needle: str, start: int = 0) -> int:
    if not 0 <= start <= len(text):
        raise CelError(f"index out of range: {start}")
    return text.find(needle, start)


def _last_index(text: str, needle: str, end: int | None = None) -> int:
    end = len(text) if end is None else end
    if not 0 <= end <= len(text):
        raise CelError(f"index out of range: {end}")
    return text.rfind(needle, 0, end + len(needle))


def _substring(text: str, start: int, end: int | None = None) -> str:
    end = len(text) if end is None else end
    if not 0 <= start <= len(text):
        raise CelError(f"index out of range: {start}")
    if not start <= end <= len(text):
        raise CelError(f"index out of range: {end}")
    return text[start:end]


def _char_at(text: str, index: int) -> str:
    if not 0 <= index <= len(text):
        raise CelError(f"index out of range: {index}")
    return text[index : index + 1]


def _split(text: str, separator: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    if separator == "":
        chars = list(text)
        return chars if limit < 0 or limit >= len(chars) else [*chars[: limit - 1], text[limit - 1 :]]
    return text.split(separator, limit - 1 if limit > 0 else -1)


def _replace(text: str, old: str, new: str, limit: int = -1) -> str:
    return text.replace(old, new, limit if limit >= 0 else -1)


def _join(items: Sequence[object], separator: str = "") -> str:
    if not all(isinstance(i, str) for i in items):
        raise CelError("join: list must contain only strings")
    return separator.join(str(i) for i in items)


def _ascii(text: str, upper: bool) -> str:
    table = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return text.translate(table) if upper else text.translate({v: k for k, v in table.items()})


def _find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _string_functions() -> Iterator[Overload]:
    ss, ssi = ("string", "string"), ("string", "string", "int")
    yield Overload("contains", True, ss, "bool", lambda s, t: t in s, _S)
    yield Overload("startsWith", True, ss, "bool", lambda s, t: s.startswith(t), _S)
    yield Overload("endsWith", True, ss, "bool", lambda s, t: s.endswith(t), _S)
    yield Overload("matches", True, ss, "bool", lambda s, p: _regex(p).search(s) is not None, _S)
    yield Overload("matches", False, ss, "bool", lambda s, p: _regex(p).search(s) is not None, _S)
    yield Overload("find", True, ss, "string", _find, _S)
    yield Overload("findAll", True, ss, "list", _find_all, _S)
    yield Overload("findAll", True, ssi, "list", _find_all, _S)
    yield Overload("lowerAscii", True, ("string",), "string", lambda s: _ascii(s, False), _S)
    yield Overload("upperAscii", True, ("string",), "string", lambda s: _ascii(s, True), _S)
    yield Overload("trim", True, ("string",), "string", str.strip, _S)
    yield Overload("reverse", True, ("string",), "string", lambda s: s[::-1], _S)
    yield Overload("charAt", True, ("string", "int"), "string", _char_at, _S)
    yield Overload("indexOf", True, ss, "int", _index, _S)
    yield Overload("indexOf", True, ssi, "int", _index, _S)
    yield Overload("lastIndexOf", True, ss, "int", _last_index, _S)
    yield Overload("lastIndexOf", True, ssi, "int", _last_index, _S)
    yield Overload("substring", True, ("string", "int"), "string", _substring, _S)
    yield Overload("substring", True, ("string", "int", "int"), "string", _substring, _S)
    yield Overload("split", True, ss, "list", _split, _S)
    yield Overload("split", True, ssi, "list", _split, _S)
    yield Overload("replace", True, ("string", "string", "string"), "string", _replace, _S)
    yield Overload("replace", True, ("string", "string", "string", "int"), "string", _replace, _S)
    yield Overload("join", True, ("list",), "string", _join, _S)
    yield Overload("join", True, ("list", "string"), "string", _join, _S)
    yield Overload("strings.quote", False, ("string",), "string", _quote, _S)


def _to_int(value: object) -> int:
    if isinstance(value, float):
        if not math.isfinite(value) or not -(2**63) <= value < 2**63:
            raise CelError("integer overflow")
        return int(value)
    if isinstance(value, str):
        try:
            return checked_int(int(value, 10))
        except ValueError:
            raise CelError(f"cannot convert string '{value}' to int") from None
    assert isinstance(value, int)
    return checked_int(int(value))


def _to_uint(value: object) -> UInt:
    if isinstance(value, float):
        if not math.isfinite(value) or not 0 <= value <= UINT64_MAX:
            raise CelError("unsigned integer overflow")
        return UInt(int(value))
    if isinstance(value, str):
        try:
            return checked_uint(int(value, 10))
        except ValueError:
            raise CelError(f"cannot convert string '{value}' to uint") from None
    assert isinstance(value, int)
    return checked_uint(int(value))


def _to_double(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except ValueError:
        raise CelError(f"cannot convert string '{value}' to double") from None


def _to_string(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise CelError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(value, float):
        return repr(value).replace("inf", "+Inf").replace("nan", "NaN").removesuffix(".0")
    return str(value)


def _to_bool(value: str) -> bool:
    if value in ("true", "True", "TRUE", "t", "1"):
        return True
    if value in ("false", "False", "FALSE", "f", "0"):
        return False
    raise CelError(f"type conversion error from 'string' to 'bool': {value}")


def _conversions() -> Iterator[Overload]:
    for source in ("int", "uint", "double", "string"):
        yield Overload("int", False, (source,), "int", _to_int)
        yield Overload("uint", False, (source,), "uint", _to_uint)
        yield Overload("double", False, (source,), "double", _to_double)
    for source in ("int", "uint", "double", "bool", "string", "bytes", "kubernetes.Quantity", "kubernetes.Semver"):
        yield Overload("string", False, (source,), "string", _to_string)
    yield Overload("bytes", False, ("string",), "bytes", str.encode)
    yield Overload("bytes", False, ("bytes",), "bytes", lambda b: b)
    yield Overload("bool", False, ("bool",), "bool", lambda b: b)
    yield Overload("bool", False, ("string",), "bool", _to_bool)
    yield Overload("dyn", False, ("dyn",), "dyn", lambda v: v)
    for sized in ("string", "bytes", "list", "map"):
        yield Overload("size", False, (sized,), "int", len)
        yield Overload("size", True, (sized,), "int", len)


def overloads() -> Iterator[Overload]:
    yield from _string_functions()
    yield from _conversions()
