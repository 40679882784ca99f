"""``string.format``: cel-go's original formatter, which Kubernetes' strings extension (version 2) uses.

Clauses: ``%s`` (any value), ``%d`` (integers), ``%f``/``%e`` (doubles, with precision), ``%x``/``%X`` (integers,
strings, bytes), ``%o`` and ``%b`` (integers; ``%b`` also bools). Lists and maps print with quoted strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.values import Duration, Timestamp, UInt, type_name

__all__ = ["format_string"]

_CLAUSE = re.compile(r"%(?:\.(\d+))?(.)?", re.S)


def _to_s(value: object, nested: bool = False) -> str:
    from phalanx.api.cel.lib_convert import double_to_string
    from phalanx.api.cel.lib_time import format_duration, format_timestamp

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"' if nested else value
    if isinstance(value, bytes):
        return f'b"{value.decode(errors="replace")}"' if nested else value.decode(errors="replace")
    if isinstance(value, float):
        return (
            f"{value:f}"
            if nested and math.isfinite(value)
            else (f'"{double_to_string(value)}"' if nested else double_to_string(value))
        )
    if isinstance(value, int):
        return str(int(value))
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_to_s(v, True) for v in value) + "]"
    if isinstance(value, Mapping):
        entries = sorted(((_to_s(k, True), _to_s(v, True)) for k, v in value.items()), key=lambda e: e[0])
        return "{" + ", ".join(f"{k}:{v}" for k, v in entries) + "}"
    if isinstance(value, Duration):
        return f'duration("{format_duration(value)}")' if nested else format_duration(value)
    if isinstance(value, Timestamp):
        return f'timestamp("{format_timestamp(value)}")' if nested else format_timestamp(value)
    return str(value)


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scientific(value: float, digits: int) -> str:
    """cel-go's original formatter prints %e through a locale printer: ``1.052033×10⁰³``."""
    if math.isnan(value):
        return "   NaN"
    if math.isinf(value):
        return "    -∞" if value < 0 else "     ∞"
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    sign = "-" if exponent.startswith("-") else ""
    return f"{mantissa}×10{(sign + exponent.lstrip('+-').zfill(2)).translate(_SUPERSCRIPT)}"


def _fixed(value: float, digits: int) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-∞" if value < 0 else "∞"
    return f"{value:.{digits}f}"


def _clause(verb: str, precision: str | None, value: object) -> str:
    given = type_name(value)
    if verb == "s":
        return _to_s(value)
    if verb == "d":
        if type(value) not in (int, UInt):
            raise CelError(f"error during formatting: decimal clause can only be used on integers, was given {given}")
        return str(int(value))  # type: ignore[call-overload]
    if verb in "fe":
        if not isinstance(value, float):
            kind = "fixed-point" if verb == "f" else "scientific"
            raise CelError(f"error during formatting: {kind} clause can only be used on doubles, was given {given}")
        digits = int(precision) if precision is not None else 6
        return _fixed(value, digits) if verb == "f" else _scientific(value, digits)
    if verb in "xX":
        if isinstance(value, int) and not isinstance(value, bool):
            text = format(value, "x")
        elif isinstance(value, str | bytes):
            text = (value.encode() if isinstance(value, str) else value).hex()
        else:
            raise CelError(
                "error during formatting: only integers, byte buffers, and strings can be formatted as "
                f"hex, was given {given}"
            )
        return text.upper() if verb == "X" else text
    if verb == "o":
        if type(value) not in (int, UInt):
            raise CelError(f"error during formatting: octal clause can only be used on integers, was given {given}")
        return format(value, "o")
    if verb == "b":
        if isinstance(value, bool):
            return "1" if value else "0"
        if type(value) not in (int, UInt):
            raise CelError(
                f"error during formatting: only integers and bools can be formatted as binary, was given {given}"
            )
        return format(value, "b")
    raise CelError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')


def format_string(text: str, args: Sequence[object]) -> str:
    out: list[str] = []
    pos, index = 0, 0
    while pos < len(text):
        if text[pos] != "%":
            out.append(text[pos])
            pos += 1
            continue
        if text[pos + 1 : pos + 2] == "%":
            out.append("%")
            pos += 2
            continue
        match = _CLAUSE.match(text, pos)
        assert match is not None
        precision, verb = match.groups()
        if verb is None:
            raise CelError("could not parse formatting clause: unexpected end of format string")
        if index >= len(args):
            raise CelError(f"index {index} out of range")
        out.append(_clause(verb, precision, args[index]))
        index += 1
        pos = match.end()
    return "".join(out)
