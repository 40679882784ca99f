"""Timestamps and durations: parsing and printing as cel-go does (RFC 3339, Go durations), arithmetic with range
checks, and the ``get*`` accessors with optional time zones (IANA names or ``+hh:mm`` offsets).

Kubernetes' base environment sets ``DefaultUTCTimeZone``, so accessors without a zone use UTC.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.values import Duration, Timestamp

__all__ = [
    "add_overloads",
    "format_duration",
    "format_timestamp",
    "functions",
    "parse_duration",
    "parse_timestamp",
    "subtract_overloads",
    "timestamp_from_seconds",
]

_NS = 10**9
MIN_SECONDS, MAX_SECONDS = -62135596800, 253402300799  # 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z
_DURATION_MAX = 2**63 - 1
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)
_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 10**6, "s": _NS, "m": 60 * _NS, "h": 3600 * _NS}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _check_timestamp(nanos: int) -> Timestamp:
    if not MIN_SECONDS * _NS <= nanos <= MAX_SECONDS * _NS + _NS - 1:
        raise CelError("timestamp overflow")
    return Timestamp(nanos)


def _check_duration(nanos: int) -> Duration:
    if not -_DURATION_MAX <= nanos <= _DURATION_MAX:
        raise CelError("duration out of range")
    return Duration(nanos)


def parse_timestamp(text: str) -> Timestamp:
    match = _RFC3339.match(text)
    if match is None:
        raise CelError(f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC)
    except ValueError as error:
        raise CelError(f'parsing time "{text}": {error}') from None
    offset = 0 if zulu or sign is None else (int(off_h) * 3600 + int(off_m) * 60) * (1 if sign == "+" else -1)
    seconds = int((moment - _EPOCH).total_seconds()) - offset
    nanos = int((fraction or "").ljust(9, "0") or 0)
    return _check_timestamp(seconds * _NS + nanos)


def timestamp_from_seconds(seconds: int) -> Timestamp:
    return _check_timestamp(seconds * _NS)


def format_timestamp(value: Timestamp) -> str:
    seconds, nanos = divmod(value.nanos, _NS)
    moment = _EPOCH + timedelta(seconds=seconds)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"


def parse_duration(text: str) -> Duration:
    """Go's ``time.ParseDuration``."""
    original, sign, rest = text, 1, text
    if rest[:1] in "+-" and rest:
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return Duration(0)
    if not rest:
        raise CelError(f'time: invalid duration "{original}"')
    total, pos = 0, 0
    while pos < len(rest):
        match = _DURATION_PART.match(rest, pos)
        if match is None or match.group(1) in ("", "."):
            raise CelError(f'time: invalid duration "{original}"')
        number, unit = match.groups()
        whole, _, fraction = number.partition(".")
        unit_ns = _UNITS[unit]
        total += int(whole or 0) * unit_ns + (int(fraction) * unit_ns // 10 ** len(fraction) if fraction else 0)
        pos = match.end()
    if total > 2**63:
        raise CelError(f'time: invalid duration "{original}"')
    return _check_duration(sign * total)


def format_duration(value: Duration) -> str:
    """cel-go's duration string: seconds with up to nine fractional digits, ``s`` suffix."""
    sign = "-" if value.nanos < 0 else ""
    seconds, nanos = divmod(abs(value.nanos), _NS)
    text = f"{sign}{seconds}"
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "s"


@lru_cache(maxsize=64)
def _zone(name: str) -> timezone | ZoneInfo:
    match = re.match(r"^([+-]?)(\d{1,2}):(\d{2})$", name)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        return timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3))))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CelError(f"unknown time zone {name}") from None


def _local(value: Timestamp, zone: str | None) -> datetime:
    seconds = value.nanos // _NS
    moment = _EPOCH + timedelta(seconds=seconds)
    return moment if zone is None else moment.astimezone(_zone(zone))


def _accessor(part: str) -> Callable[..., int]:
    getters = {
        "year": lambda d: d.year,
        "month": lambda d: d.month - 1,
        "day_of_year": lambda d: d.timetuple().tm_yday - 1,
        "day_of_month": lambda d: d.day - 1,
        "day_of_month_1_based": lambda d: d.day,
        "day_of_week": lambda d: (d.weekday() + 1) % 7,
        "hours": lambda d: d.hour,
        "minutes": lambda d: d.minute,
        "seconds": lambda d: d.second,
    }
    getter = getters.get(part)

    def access(value: Timestamp, zone: str | None = None) -> int:
        if part == "milliseconds":
            return (value.nanos % _NS) // 10**6
        return int(getter(_local(value, zone)))  # type: ignore[misc]

    return access


def add_overloads() -> list[Overload]:
    ts, du = t.TIMESTAMP, t.DURATION
    return [
        Overload("add_duration_duration", (du, du), du, lambda a, b: _check_duration(a.nanos + b.nanos)),
        Overload("add_duration_timestamp", (du, ts), ts, lambda a, b: _check_timestamp(a.nanos + b.nanos)),
        Overload("add_timestamp_duration", (ts, du), ts, lambda a, b: _check_timestamp(a.nanos + b.nanos)),
    ]


def subtract_overloads() -> list[Overload]:
    ts, du = t.TIMESTAMP, t.DURATION
    return [
        Overload("subtract_duration_duration", (du, du), du, lambda a, b: _check_duration(a.nanos - b.nanos)),
        Overload("subtract_timestamp_duration", (ts, du), ts, lambda a, b: _check_timestamp(a.nanos - b.nanos)),
        Overload("subtract_timestamp_timestamp", (ts, ts), du, lambda a, b: _check_duration(a.nanos - b.nanos)),
    ]


_GETTERS = {
    "getFullYear": ("year", None),
    "getMonth": ("month", None),
    "getDayOfYear": ("day_of_year", None),
    "getDayOfMonth": ("day_of_month", None),
    "getDate": ("day_of_month_1_based", None),
    "getDayOfWeek": ("day_of_week", None),
    "getHours": ("hours", 3600),
    "getMinutes": ("minutes", 60),
    "getSeconds": ("seconds", 1),
    "getMilliseconds": ("milliseconds", 0),
}


def _duration_getter(unit: int) -> Callable[[Duration], int]:
    if unit == 0:
        return lambda d: int(d.nanos / 10**6)  # cel-go v0.26: the whole duration in milliseconds
    return lambda d: int(d.nanos / (unit * _NS))


def functions() -> Iterator[Function]:
    ts, du, i, s = t.TIMESTAMP, t.DURATION, t.INT, t.STRING
    for name, (part, unit) in _GETTERS.items():
        access = _accessor(part)
        prefix = "timestamp_to_" + part
        tz_id = "timestamp_to_seconds_tz" if part == "seconds" else prefix + "_with_tz"
        overloads = [Overload(prefix, (ts,), i, access, True), Overload(tz_id, (ts, s), i, access, True)]
        if unit is not None:
            overloads.append(Overload(f"duration_to_{part}", (du,), i, _duration_getter(unit), True))
        yield Function(name, tuple(overloads))
