"""Building blocks shared by the per-kind validators: name formats, unions and enums as lists of field errors.

Each helper takes the field path and the value and returns every problem, so a validator is a flat list of calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import msgspec

from phalanx.api import names
from phalanx.api.errors import FieldError
from phalanx.api.loader import type_error

__all__ = [
    "Shown",
    "decode",
    "dns_label",
    "dns_subdomain",
    "enum",
    "int32",
    "int64",
    "joined_label_value",
    "key",
    "label_value",
    "path_segment_name",
    "qualified_name",
    "required",
    "shown",
    "union",
    "unique",
]


Item = TypeVar("Item", bound=msgspec.Struct)


class Shown:
    """A value rendered without quotes: an object shown as JSON where kube-apiserver prints a Go value."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def shown(value: object) -> Shown:
    """An object (struct, dict, list) rendered as compact JSON where kube-apiserver prints a Go value."""
    return Shown(msgspec.json.encode(value).decode())


def key(path: str, name: str) -> str:
    """``field.Path.Key``: ``requests`` + ``cpu`` -> ``requests[cpu]``."""
    return f"{path}[{name}]"


def _format(check: Callable[[str], list[str]]) -> Callable[[str, str], list[FieldError]]:
    def validate(path: str, value: str) -> list[FieldError]:
        return [FieldError.invalid(path, value, msg) for msg in check(value)]

    return validate


dns_label = _format(names.check_dns_label)
dns_subdomain = _format(names.check_dns_subdomain)
qualified_name = _format(names.check_qualified_name)
label_value = _format(names.check_label_value)
path_segment_name = _format(names.check_path_segment_name)


def required(path: str, value: str, fmt: Callable[[str, str], list[FieldError]]) -> list[FieldError]:
    """A required string in a given format: "Required value" when empty, else the format's errors."""
    if not value:
        return [FieldError.required(path)]
    return fmt(path, value)


def union(path: str, members: dict[str, bool]) -> list[FieldError]:
    """A union where exactly one member (JSON name -> is set) must be set, with declarative validation's messages."""
    listed = ", ".join(f"`{name}`" for name in members)
    # The "specified" list in the value is plain; the "one of" list in the detail is backquoted.
    chosen = [name for name, is_set in members.items() if is_set]
    if not chosen:
        return [FieldError.invalid(path, "", f"must specify one of: {listed}")]
    if len(chosen) > 1:
        return [FieldError.invalid(path, "{" + ", ".join(chosen) + "}", f"must specify exactly one of: {listed}")]
    return []


def enum(path: str, value: str | None, supported: Iterable[str]) -> list[FieldError]:
    """An optional enum: unset is fine, anything outside ``supported`` is "Unsupported value"."""
    allowed = list(supported)
    if value is None or value in allowed:
        return []
    return [FieldError.unsupported(path, value, allowed)]


INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def int32(path: str, value: int | None) -> list[FieldError]:
    """An ``int32`` field: kube-apiserver cannot decode a number outside its range (YAML integers are unbounded)."""
    return _in_range(path, value, INT32, "must be of type int32")


def int64(path: str, value: int | None) -> list[FieldError]:
    """An ``int64`` field, likewise."""
    return _in_range(path, value, INT64, "must be of type int64")


def _in_range(path: str, value: int | None, bounds: tuple[int, int], detail: str) -> list[FieldError]:
    if value is None or bounds[0] <= value <= bounds[1]:
        return []
    return [FieldError.invalid(path, value, detail)]


def joined_label_value(path: str, value: str) -> list[FieldError]:
    """A label value whose problems kube-apiserver reports in one message, joined by ';' (taints, tolerations)."""
    msgs = names.check_label_value(value)
    return [FieldError.invalid(path, value, ";".join(msgs))] if msgs else []


def unique(path: str, items: Sequence[Item], key: Callable[[Item], object]) -> list[FieldError]:
    """A list with map semantics: every item whose key an earlier item already has is a "Duplicate value"."""
    errs: list[FieldError] = []
    seen: set[object] = set()
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            errs.append(FieldError.duplicate(f"{path}[{i}]", shown(item)))
        seen.add(k)
    return errs


Decoded = TypeVar("Decoded")


def decode(path: str, raw: object, into: type[Decoded]) -> tuple[Decoded | None, list[FieldError]]:
    """Decode a part the models keep as written (``dict``) into a typed struct; a wrong type is an error."""
    try:
        return msgspec.convert(raw, into), []
    except msgspec.ValidationError as exc:
        err = type_error(raw, str(exc))
        at = f"{path}.{err.path}" if err.path and not err.path.startswith("[") else path + err.path
        return None, [FieldError(at, err.message)]
