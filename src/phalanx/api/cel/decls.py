"""Declarations: the functions, variables and type names an environment offers, with their implementations.

An :class:`Overload` is one signature of a function, named by cel-go's overload id (``add_int64``,
``list_int_sum_int``): the id is what the cost estimator and the runtime cost tracker key on. Parameters list the
receiver first for member overloads; type parameters (``A`` in ``list(A) + list(A)``) make an overload generic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from phalanx.api.cel.types import CelType, Kind

__all__ = ["Declarations", "Function", "Impl", "Overload", "merge_functions"]

Impl = Callable[..., object]


def _type_params(t: CelType, out: set[str]) -> None:
    if t.kind == Kind.TYPE_PARAM:
        out.add(t.name)
    for p in t.params:
        _type_params(p, out)


@dataclass(frozen=True, slots=True)
class Overload:
    """One signature. ``impl`` takes the CEL values (receiver first) and returns a value or raises CelError.
    ``guard``: check the runtime argument types against the signature first (cel-go's type guards)."""

    id: str
    params: tuple[CelType, ...]
    result: CelType
    impl: Impl | None = None
    member: bool = False
    guard: bool = True
    type_params: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        names: set[str] = set()
        for t in (*self.params, self.result):
            _type_params(t, names)
        object.__setattr__(self, "type_params", frozenset(names))


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    overloads: tuple[Overload, ...]


def merge_functions(functions: Iterable[Function]) -> dict[str, Function]:
    """Functions by name; libraries that declare the same function (``indexOf`` for strings and lists) add
    overloads to it."""
    merged: dict[str, Function] = {}
    for fn in functions:
        known = merged.get(fn.name)
        merged[fn.name] = fn if known is None else Function(fn.name, known.overloads + fn.overloads)
    return merged


@dataclass(frozen=True, slots=True)
class Declarations:
    """What an environment declares. ``types`` are type names usable as values (``int``, ``net.IP``);
    ``fields`` gives the field types of declared object types (the DRA ``device``)."""

    variables: Mapping[str, CelType]
    functions: Mapping[str, Function]
    types: Mapping[str, CelType]
    fields: Mapping[str, Mapping[str, CelType]]
