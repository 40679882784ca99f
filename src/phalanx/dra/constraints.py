"""Claim constraints (spec dra.md §3.9): matchAttribute and distinctAttribute trackers with request scoping.

Trackers keep a stack, so backtracking restores exactly the previous state (not v1.36's lossy list
intersection and per-request distinct map). With DRAListTypeAttributes, values are sets: match needs a non-empty
common intersection, distinct needs pairwise disjoint sets; a scalar is a one-element set.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from phalanx.api import dra
from phalanx.dra.inventory import DeviceInfo

__all__ = ["Tracker", "attribute_value", "new_tracker"]

Element = tuple[str, object]  # (type, value): values of different types never compare equal


def _lookup(info: DeviceInfo, fqn: str) -> dra.DeviceAttribute | None:
    attrs = info.device.attributes
    found = attrs.get(fqn)
    if found is not None:
        return found
    domain, _, name = fqn.partition("/")
    return attrs.get(name) if name and domain == info.driver else None


def _elements(attr: dra.DeviceAttribute) -> list[Element] | None:
    """The attribute as typed elements; None when it is a list attribute (a list of elements is returned as such
    by :func:`attribute_value` only in list mode)."""
    for kind, scalar in (("int", attr.int_), ("bool", attr.bool_), ("string", attr.string), ("version", attr.version)):
        if scalar is not None:
            return [(kind, scalar)]
    return None


def _list_elements(attr: dra.DeviceAttribute) -> list[Element]:
    lists: tuple[tuple[str, list[int] | list[bool] | list[str] | None], ...] = (
        ("int", attr.ints),
        ("bool", attr.bools),
        ("string", attr.strings),
        ("version", attr.versions),
    )
    for kind, values in lists:
        if values:
            return [(kind, v) for v in values]
    return []


def attribute_value(info: DeviceInfo, fqn: str, list_mode: bool) -> Hashable | None:
    """The value a constraint compares for one device: an Element in scalar mode (a list attribute becomes a value
    equal to nothing else, as v1.36 treats an unknown type), a frozenset of Elements in list mode; None when the
    device does not have the attribute."""
    attr = _lookup(info, fqn)
    if attr is None:
        return None
    scalar = _elements(attr)
    if list_mode:
        return frozenset(scalar if scalar is not None else _list_elements(attr)) or None
    if scalar is None:
        return ("unknown", info.index)
    return scalar[0]


@dataclass(slots=True)
class Tracker:
    """One constraint of one claim during one search. ``add`` returns False (and changes nothing) when the device
    would violate it; every successful ``add`` is undone by exactly one ``remove``."""

    requests: frozenset[str]
    attribute: str
    distinct: bool
    list_mode: bool
    _stack: list[Hashable] = field(default_factory=list)
    _used: dict[Hashable, int] = field(default_factory=dict)  # distinct: element -> devices holding it

    def in_scope(self, request: str, subrequest: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(subrequest) and f"{request}/{subrequest}" in self.requests)

    def add(self, value: Hashable | None) -> bool:
        if value is None:
            return False
        if self.distinct:
            return self._add_distinct(value)
        if not self._stack:
            self._stack.append(value)
            return True
        top = self._stack[-1]
        if self.list_mode:
            assert isinstance(top, frozenset) and isinstance(value, frozenset)
            common = top & value
            if not common:
                return False
            self._stack.append(common)
            return True
        if value != top or (isinstance(value, tuple) and value[0] == "unknown"):
            return False
        self._stack.append(top)
        return True

    def _add_distinct(self, value: Hashable) -> bool:
        elements = list(value) if self.list_mode and isinstance(value, frozenset) else [value]
        if any(e in self._used for e in elements):
            return False
        for e in elements:
            self._used[e] = self._used.get(e, 0) + 1
        self._stack.append(value)
        return True

    def remove(self) -> None:
        value = self._stack.pop()
        if self.distinct:
            elements = list(value) if self.list_mode and isinstance(value, frozenset) else [value]
            for e in elements:
                left = self._used[e] - 1
                if left:
                    self._used[e] = left
                else:
                    del self._used[e]

    def key(self) -> Hashable:
        """What the rest of the search depends on: the value to match, or the values already used."""
        if self.distinct:
            return frozenset(self._used)
        return self._stack[-1] if self._stack else None

    def fixed(self) -> Hashable | None:
        """matchAttribute: the value every further in-scope device must have (scalar mode), else None."""
        return self._stack[-1] if self._stack and not self.distinct and not self.list_mode else None

    def used(self) -> dict[Hashable, int]:
        return self._used


def new_tracker(constraint: dra.DeviceConstraint, list_mode: bool) -> Tracker | None:
    """A fresh tracker, or None for a constraint of an unknown type (a fatal error for the caller)."""
    requests = frozenset(constraint.requests)
    if constraint.match_attribute:
        return Tracker(requests, constraint.match_attribute, False, list_mode)
    if constraint.distinct_attribute:
        return Tracker(requests, constraint.distinct_attribute, True, list_mode)
    return None
