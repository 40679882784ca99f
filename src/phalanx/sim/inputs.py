"""Typed fields of the simulate formats (compact cluster specs, traces, node events), with every problem reported
the way ``phalanx validate`` reports one: ``FILE:LINE: FIELD.PATH: message`` in kube-apiserver's words.

A reader never raises on a bad value: it records the problem, returns the default, and the caller raises one
:class:`InputError` with every problem of the file at the end (``Fields.check``). Numbers are finite, counts and
durations are not negative, integers stay within the API's int32/int64 ranges.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml

from phalanx.api.errors import FieldError, InputError, Source
from phalanx.api.loader import json_type, locate

__all__ = ["INT32_MAX", "MAX_SECONDS", "REQUIRED", "Fields", "yaml_lines"]

INT32_MAX = 2**31 - 1
MAX_SECONDS = 3_155_760_000.0  # 100 years: times and durations stay representable as creation timestamps
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Required:
    """The default of a field that must be given."""


REQUIRED: Any = _Required()


def yaml_lines(path: str, text: str) -> Callable[[str], int]:
    """A field path (``pools[0].allocatable[cpu]``) -> its 1-based line in the single YAML document ``text``. The
    node tree is composed on the first problem, so a valid file is parsed once."""
    trees: dict[str, list[yaml.Node]] = {}

    def line_of(field: str) -> int:
        if path not in trees:
            try:
                trees[path] = [n for n in yaml.compose_all(text, Loader=_Loader) if n is not None]
            except yaml.YAMLError:
                trees[path] = []
        return locate(Source(path), field, {}, trees)

    return line_of


class Fields:
    """The problems found in one input file, each located at its field's line (``line_of``)."""

    def __init__(self, path: str, line_of: Callable[[str], int] = lambda _: 0) -> None:
        self.path = path
        self.line_of = line_of
        self.problems: list[str] = []

    def add(self, err: FieldError, line: int | None = None) -> None:
        at = self.line_of(err.path) if line is None else line
        where = f"{self.path}:{at}" if at else self.path
        self.problems.append(f"{where}: {err.path}: {err.message}" if err.path else f"{where}: {err.message}")

    def invalid(self, path: str, value: object, detail: str, line: int | None = None) -> None:
        self.add(FieldError.invalid(path, value, detail), line)

    def check(self) -> None:
        """Raise every problem recorded so far."""
        if self.problems:
            raise InputError(self.problems)

    # --- containers -----------------------------------------------------------------------------------------------

    def mapping(self, raw: Any, path: str, known: Iterable[str], line: int | None = None) -> Mapping[str, Any]:
        """``raw`` as a mapping whose keys are all in ``known`` (an unknown key is an error, as with strict
        decoding: a misspelt field would otherwise be ignored). Returns {} when ``raw`` is not a mapping."""
        if not isinstance(raw, dict):
            self.add(FieldError(path, f"Invalid value: {json_type(raw)}: must be an object"), line)
            return {}
        allowed = set(known)
        for key in raw:
            if key not in allowed:
                self.add(FieldError(path, f'unknown field "{key}"'), line)
        return raw

    def items(self, raw: Any, path: str) -> list[Any]:
        """``raw`` as a list (None: empty)."""
        if raw is None:
            return []
        if not isinstance(raw, list):
            self.add(FieldError(path, f"Invalid value: {json_type(raw)}: must be a list"))
            return []
        return raw

    # --- scalars --------------------------------------------------------------------------------------------------

    def integer(
        self, raw: Any, path: str, default: Any, low: int = 0, high: int = INT32_MAX, line: int | None = None
    ) -> int:
        """A whole number written as an integer (or, in CSV, as its digits) within ``low``..``high``."""
        if _absent(raw):
            return int(self._default(path, default, line))
        value: int | None = None
        if isinstance(raw, int) and not isinstance(raw, bool):
            value = raw
        elif isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
            digits = raw.strip()
            # Beyond 40 digits it is out of any range here, and int() refuses 4300 digits.
            value = int(digits) if len(digits) <= 40 else (low - 1 if digits.startswith("-") else high + 1)
        if value is None:
            self.invalid(path, raw, "must be an integer", line)
            return 0 if default is REQUIRED else int(default)
        return int(self._bounded(path, raw, value, low, high, line))

    def number(
        self,
        raw: Any,
        path: str,
        default: Any,
        low: float = 0.0,
        high: float = MAX_SECONDS,
        positive: bool = False,
        line: int | None = None,
    ) -> float:
        """A finite decimal number within ``low``..``high`` (above ``low`` when ``positive``)."""
        if _absent(raw):
            return float(self._default(path, default, line))
        value: float | None = None
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            value = float(raw) if isinstance(raw, float) or abs(raw) < 2**1023 else math.inf
        elif isinstance(raw, str) and _DECIMAL.fullmatch(raw.strip()):
            value = float(raw.strip())
        if value is None or not math.isfinite(value):
            self.invalid(path, raw, "must be a finite number", line)
            return 0.0 if default is REQUIRED else float(default)
        if positive and value <= low:
            self.invalid(path, raw, f"must be greater than {_plain(low)}", line)
            return high  # a harmless value: the problem is raised before anything uses it
        return float(self._bounded(path, raw, value, low, high, line))

    def text(self, raw: Any, path: str, default: Any, line: int | None = None) -> str:
        """A string; numbers are taken as written (``cpu: 2``), booleans, lists and objects are errors."""
        if _absent(raw):
            value = self._default(path, default, line)
            return "" if default is REQUIRED else str(value)
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            self.invalid(path, raw if isinstance(raw, bool) else json_type(raw), "must be a string", line)
            return "" if default is REQUIRED else str(default)
        return raw.strip() if isinstance(raw, str) else _plain(raw)

    def _bounded(self, path: str, raw: Any, value: Any, low: Any, high: Any, line: int | None) -> Any:
        """``value`` within the bounds; out of them, a problem and the nearest bound (so code that runs before
        ``check`` never sees, say, a billion nodes)."""
        if value < low:
            self.invalid(path, raw, f"must be greater than or equal to {_plain(low)}", line)
            return low
        if value > high:
            self.invalid(path, raw, f"must be less than or equal to {_plain(high)}", line)
            return high
        return value

    def _default(self, path: str, default: Any, line: int | None) -> Any:
        if default is REQUIRED:
            self.add(FieldError.required(path), line)
            return 0
        return default


def _absent(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _plain(number: float | int) -> str:
    """A number as a person writes it: 0 not 0.0, 3155760000 not 3.15576e+09."""
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number)
