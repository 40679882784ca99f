"""CEL runtime values that Python has no type for: uint, optional, and Kubernetes' Quantity and Semver.

``int``, ``float``, ``str``, ``bytes``, ``bool``, ``None``, lists and mappings stand for themselves. A
:class:`DomainMap` is the ``device.attributes``/``device.capacity`` map: an unknown domain reads as an empty map,
as in kube-scheduler, while a missing id inside a domain stays a "no such key" error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

__all__ = ["EMPTY_MAP", "NONE", "DomainMap", "Optional", "Quantity", "Semver", "UInt", "parse_semver", "type_name"]


class UInt(int):
    """A CEL ``uint``: an ``int`` that the operators keep apart from signed integers."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Optional:
    """A CEL ``optional_type`` value: ``optional.of(value)`` when ``present``, else ``optional.none()``."""

    present: bool
    value: object = None


NONE = Optional(False)


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


_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_LOOSE = re.compile(r"^v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(.*)$")


def parse_semver(text: str, normalize: bool = False) -> Semver:
    """Parse strictly (``blang/semver`` Parse); with ``normalize``, accept ``v1``, ``1.2`` and leading zeros."""
    if normalize:
        loose = _LOOSE.match(text)
        if loose:
            parts = [str(int(p)) if p else "0" for p in loose.groups()[:3]]
            text = ".".join(parts) + loose.group(4)
    match = _SEMVER.match(text)
    if match is None:
        raise ValueError(f"invalid semver: {text}")
    major, minor, patch, pre, build = match.groups()
    return Semver(int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (),
                  tuple(build.split(".")) if build else ())  # fmt: skip


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

_TYPE_NAMES: dict[type, str] = {bool: "bool", int: "int", UInt: "uint", float: "double", str: "string",
                                bytes: "bytes", type(None): "null_type", list: "list", tuple: "list", dict: "map",
                                DomainMap: "map", Quantity: "kubernetes.Quantity", Semver: "kubernetes.Semver",
                                Optional: "optional_type"}  # fmt: skip


def type_name(value: object) -> str:
    """The CEL type name of a runtime value, as cel-go prints it in "no matching overload" errors."""
    name = _TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__
