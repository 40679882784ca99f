"""Type conversions: ``int``, ``uint``, ``double``, ``string``, ``bytes``, ``bool``, ``timestamp``, ``duration``.

Range errors follow cel-go: a double outside the int64 range (including ``-9223372036854775808.0``, which rounds
out of range) is "range error converting ... to int"; strings parse with Go's rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.lib_time import (
    format_duration,
    format_timestamp,
    parse_duration,
    parse_timestamp,
    timestamp_from_seconds,
)
from phalanx.api.cel.values import Duration, Timestamp, UInt

__all__ = ["double_to_string", "functions"]

_INT_TEXT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT_TEXT = re.compile(r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[Ii]nf(?:inity)?|NaN|nan)$")


def _double_to_int(value: float) -> int:
    # cel-go: a double converts only when it is strictly inside (-2**63, 2**63).
    if not math.isfinite(value) or not -(2.0**63) < value < 2.0**63:
        raise CelError("range error converting double to int")
    return int(value)


def _double_to_uint(value: float) -> UInt:
    if not math.isfinite(value) or not 0 <= value < 2.0**64:
        raise CelError("range error converting double to uint")
    return UInt(int(value))


def _string_to_int(text: str) -> int:
    if not _INT_TEXT.match(text) or not -(2**63) <= int(text) < 2**63:
        raise CelError("type conversion error from 'string' to 'int'")
    return int(text)


def _string_to_uint(text: str) -> UInt:
    if not re.match(r"^\+?[0-9]+$", text) or int(text) >= 2**64:
        raise CelError("type conversion error from 'string' to 'uint'")
    return UInt(int(text))


def _string_to_double(text: str) -> float:
    if not _FLOAT_TEXT.match(text):
        raise CelError("type conversion error from 'string' to 'double'")
    return float(text)


def _int_to_uint(value: int) -> UInt:
    if value < 0:
        raise CelError("range error converting int to uint")
    return UInt(value)


def _uint_to_int(value: int) -> int:
    if value > 2**63 - 1:
        raise CelError("range error converting uint to int")
    return int(value)


def double_to_string(value: float) -> str:
    """Go's ``strconv.FormatFloat(f, 'g', -1, 64)`` as cel-go prints doubles."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        mantissa = mantissa.removesuffix(".0")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa}e{sign}{exponent.lstrip('+-').zfill(2)}"
    text = text.removesuffix(".0")
    if abs(value) >= 1e21:
        return f"{value:e}"
    return text


def _bytes_to_string(value: bytes) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise CelError("invalid UTF-8 in bytes, cannot convert to string") from None


def _string_to_bool(text: str) -> bool:
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise CelError("type conversion error from 'string' to 'bool'")


def _timestamp_to_int(value: Timestamp) -> int:
    return value.nanos // 10**9


def functions() -> Iterator[Function]:
    i, u, d, s, b, y, ts, du = t.INT, t.UINT, t.DOUBLE, t.STRING, t.BOOL, t.BYTES, t.TIMESTAMP, t.DURATION
    yield Function(
        "int",
        (
            Overload("int64_to_int64", (i,), i, lambda v: v),
            Overload("double_to_int64", (d,), i, _double_to_int),
            Overload("duration_to_int64", (du,), i, lambda v: v.nanos),
            Overload("string_to_int64", (s,), i, _string_to_int),
            Overload("timestamp_to_int64", (ts,), i, _timestamp_to_int),
            Overload("uint64_to_int64", (u,), i, _uint_to_int),
        ),
    )
    yield Function(
        "uint",
        (
            Overload("uint64_to_uint64", (u,), u, lambda v: v),
            Overload("double_to_uint64", (d,), u, _double_to_uint),
            Overload("int64_to_uint64", (i,), u, _int_to_uint),
            Overload("string_to_uint64", (s,), u, _string_to_uint),
        ),
    )
    yield Function(
        "double",
        (
            Overload("double_to_double", (d,), d, lambda v: v),
            Overload("int64_to_double", (i,), d, float),
            Overload("string_to_double", (s,), d, _string_to_double),
            Overload("uint64_to_double", (u,), d, float),
        ),
    )
    yield Function(
        "bool", (Overload("bool_to_bool", (b,), b, lambda v: v), Overload("string_to_bool", (s,), b, _string_to_bool))
    )
    yield Function(
        "bytes", (Overload("bytes_to_bytes", (y,), y, lambda v: v), Overload("string_to_bytes", (s,), y, str.encode))
    )
    yield Function(
        "string",
        (
            Overload("string_to_string", (s,), s, lambda v: v),
            Overload("bool_to_string", (b,), s, lambda v: "true" if v else "false"),
            Overload("bytes_to_string", (y,), s, _bytes_to_string),
            Overload("double_to_string", (d,), s, double_to_string),
            Overload("duration_to_string", (du,), s, format_duration),
            Overload("int64_to_string", (i,), s, str),
            Overload("timestamp_to_string", (ts,), s, format_timestamp),
            Overload("uint64_to_string", (u,), s, lambda v: str(int(v))),
        ),
    )
    yield Function(
        "timestamp",
        (
            Overload("timestamp_to_timestamp", (ts,), ts, lambda v: v),
            Overload("int64_to_timestamp", (i,), ts, timestamp_from_seconds),
            Overload("string_to_timestamp", (s,), ts, parse_timestamp),
        ),
    )
    yield Function(
        "duration",
        (
            Overload("duration_to_duration", (du,), du, lambda v: v),
            Overload("int64_to_duration", (i,), du, lambda v: Duration(v)),
            Overload("string_to_duration", (s,), du, parse_duration),
        ),
    )


__all__ += ["Timestamp"]
