"""CEL runtime values that Python has no type for, and the runtime type of any value.

``int``, ``float``, ``str``, ``bytes``, ``bool``, ``None``, lists and mappings stand for themselves. :class:`UInt`
keeps ``uint`` apart from ``int``; :class:`Timestamp` and :class:`Duration` count nanoseconds as cel-go does;
:class:`Quantity` and :class:`Semver` are Kubernetes' types. A :class:`DomainMap` is ``device.attributes`` /
``device.capacity``: an unknown domain reads as an empty map, a missing id inside a domain stays "no such key".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from phalanx.api.cel import types as t
from phalanx.api.cel.types import CelType

__all__ = [
    "EMPTY_MAP",
    "NONE",
    "DomainMap",
    "Duration",
    "Optional",
    "Quantity",
    "Semver",
    "Timestamp",
    "UInt",
    "runtime_type",
    "type_name",
]


class UInt(int):
    """A CEL ``uint``: an ``int`` that the operators keep apart from signed integers."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Optional:
    """A CEL ``optional_type`` value: ``optional.of(value)`` when ``present``, else ``optional.none()``."""

    present: bool
    value: object = None


NONE = Optional(False)


@dataclass(frozen=True, slots=True)
class Timestamp:
    """``google.protobuf.Timestamp``: nanoseconds since the Unix epoch, within years 1 to 9999."""

    nanos: int


@dataclass(frozen=True, slots=True)
class Duration:
    """``google.protobuf.Duration``: nanoseconds, bounded like Go's ``time.Duration`` (about 292 years)."""

    nanos: int


@dataclass(frozen=True, slots=True, order=False)
class Quantity:
    """``kubernetes.Quantity``: an exact resource quantity (``80Gi``), compared by value."""

    value: Fraction

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Semver:
    """``kubernetes.Semver``: a semantic version 2.0.0, ordered by version precedence (build metadata ignored)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        # A release sorts after all of its pre-releases; numeric identifiers sort before alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        text += "-" + ".".join(self.pre) if self.pre else ""
        return text + ("+" + ".".join(self.build) if self.build else "")


class DomainMap(Mapping[str, Mapping[str, Any]]):
    """A read-only map of domain -> map whose lookups of unknown domains give an empty map."""

    __slots__ = ("_domains",)

    def __init__(self, domains: Mapping[str, Mapping[str, Any]]) -> None:
        self._domains = domains

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        return self._domains.get(key, EMPTY_MAP)

    def __contains__(self, key: object) -> bool:
        return key in self._domains

    def __iter__(self) -> Iterator[str]:
        return iter(self._domains)

    def __len__(self) -> int:
        return len(self._domains)

    def __repr__(self) -> str:
        return f"DomainMap({dict(self._domains)!r})"


EMPTY_MAP: Mapping[str, Any] = {}

_RUNTIME_TYPES: dict[type, CelType] = {
    bool: t.BOOL,
    int: t.INT,
    UInt: t.UINT,
    float: t.DOUBLE,
    str: t.STRING,
    bytes: t.BYTES,
    type(None): t.NULL,
    list: CelType(t.Kind.LIST, "list"),
    tuple: CelType(t.Kind.LIST, "list"),
    dict: CelType(t.Kind.MAP, "map"),
    DomainMap: CelType(t.Kind.MAP, "map"),
    Optional: CelType(t.Kind.OPAQUE, "optional_type"),
    Timestamp: t.TIMESTAMP,
    Duration: t.DURATION,
    Quantity: t.struct("kubernetes.Quantity"),
    Semver: t.struct("kubernetes.Semver"),
}


def runtime_type(value: object) -> CelType:
    """The type of a runtime value, without parameters (``type([1])`` is ``list``)."""
    found = _RUNTIME_TYPES.get(type(value))
    if found is not None:
        return found
    if isinstance(value, CelType):
        return t.TYPE
    if isinstance(value, Mapping):
        return CelType(t.Kind.MAP, "map")
    if isinstance(value, list | tuple):
        return CelType(t.Kind.LIST, "list")
    cel_type = getattr(value, "CEL_TYPE", None)
    if isinstance(cel_type, CelType):
        return cel_type
    raise TypeError(f"not a CEL value: {type(value).__name__}")


def type_name(value: object) -> str:
    """The CEL type name of a runtime value, as cel-go prints it in errors."""
    try:
        return runtime_type(value).display()
    except TypeError:
        return type(value).__name__
