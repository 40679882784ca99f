"""The function table: every CEL function and operator as typed overloads, and dispatch over them.

An :class:`Overload` names its parameter types (receiver first for member functions) with CEL type names; ``dyn``
matches anything. The same table serves the compile-time check (which overloads can apply to the static types)
and runtime dispatch (which one applies to the actual values).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.values import type_name

__all__ = ["Overload", "Table", "no_overload", "select"]


@dataclass(frozen=True, slots=True)
class Overload:
    """One signature of a function. ``size_cost`` is the runtime cost per element/character of sized arguments."""

    name: str
    member: bool
    params: tuple[str, ...]
    result: str
    impl: Callable[..., object]
    size_cost: float = 0.0

    def accepts(self, types: Sequence[str]) -> bool:
        return len(types) == len(self.params) and all(
            p == "dyn" or t == "dyn" or p == t for p, t in zip(self.params, types, strict=True)
        )


def no_overload(function: str, values: Sequence[object]) -> CelError:
    types = ", ".join(type_name(v) for v in values)
    return CelError(f"no matching overload for '{function}' applied to '({types})'")


class Table:
    """Overloads by function name, built once per environment and read-only afterwards."""

    def __init__(self, overloads: Iterable[Overload]) -> None:
        self._by_name: dict[str, list[Overload]] = {}
        for overload in overloads:
            self._by_name.setdefault(overload.name, []).append(overload)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def candidates(self, name: str, member: bool, types: Sequence[str]) -> list[Overload]:
        """The overloads that may apply to arguments of these static types (``dyn`` when unknown)."""
        return [o for o in self._by_name.get(name, ()) if o.member == member and o.accepts(types)]


def select(function: str, overloads: Sequence[Overload], values: Sequence[object]) -> Overload:
    """The overload whose parameter types match the runtime values; "no matching overload" otherwise."""
    types = [type_name(v) for v in values]
    for overload in overloads:
        if all(p == "dyn" or p == t for p, t in zip(overload.params, types, strict=True)):
            return overload
    raise no_overload(function, values)
