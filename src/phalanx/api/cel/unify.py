"""Type assignability and type-parameter substitution, the core of the checker (cel-go ``checker/types.go``).

A :class:`Substitution` binds type-parameter names to types. ``is_assignable(subs, t1, t2)`` asks whether a value
of ``t2`` may be used where ``t1`` is expected, binding type parameters on the way; it returns the extended
substitution, or None (leaving ``subs`` untouched) when the types do not agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from phalanx.api.cel.types import DYN, CelType, Kind

__all__ = ["Substitution", "is_assignable", "is_assignable_list", "most_general", "substitute"]


class Substitution:
    """Type parameter name -> the type it stands for. Copied before each tentative match."""

    __slots__ = ("bindings",)

    def __init__(self, bindings: dict[str, CelType] | None = None) -> None:
        self.bindings = bindings or {}

    def copy(self) -> Substitution:
        return Substitution(dict(self.bindings))

    def find(self, t: CelType) -> CelType | None:
        return self.bindings.get(t.name) if t.kind == Kind.TYPE_PARAM else None


def _assignable_type(to: CelType, from_: CelType) -> bool:
    """cel-go's ``Type.IsAssignableType``: equal kinds, names and (recursively) parameters, or a dynamic target."""
    if to is from_ or to.kind in (Kind.DYN, Kind.ANY, Kind.TYPE_PARAM):
        return True
    if to.kind != from_.kind or to.name != from_.name or len(to.params) != len(from_.params):
        return False
    return all(_assignable_type(a, b) for a, b in zip(to.params, from_.params, strict=True))


def _less_specific(t1: CelType, t2: CelType) -> bool:
    """Whether ``t1`` is equal to or less specific than ``t2`` (dyn and type parameters are least specific)."""
    if t1.is_dyn() or t1.kind == Kind.TYPE_PARAM:
        return True
    if t2.is_dyn() or t2.kind == Kind.TYPE_PARAM:
        return False
    if t1.kind != t2.kind:
        return False
    if t1.kind == Kind.OPAQUE:
        return (
            t1.name == t2.name
            and len(t1.params) == len(t2.params)
            and all(_less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True))
        )
    if t1.kind in (Kind.LIST, Kind.MAP):
        return all(_less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True))
    if t1.kind == Kind.TYPE:
        return True
    return t1 == t2


def most_general(t1: CelType, t2: CelType) -> CelType:
    return t1 if _less_specific(t1, t2) else t2


def _not_referenced_in(subs: Substitution, t: CelType, within: CelType) -> bool:
    if t == within:
        return False
    if within.kind == Kind.TYPE_PARAM:
        bound = subs.find(within)
        return True if bound is None else _not_referenced_in(subs, t, bound)
    if within.kind in (Kind.OPAQUE, Kind.LIST, Kind.MAP, Kind.TYPE):
        return all(_not_referenced_in(subs, t, p) for p in within.params)
    return True


def _valid_substitution(subs: Substitution, t1: CelType, t2: CelType) -> tuple[bool, bool]:
    """Whether ``t1`` may stand for type parameter ``t2``; second: whether ``t2`` already had a binding."""
    if t1.kind == t2.kind and t1 == t2:
        return True, True
    bound = subs.find(t2)
    if bound is not None:
        if t1.kind == bound.kind and t1 == bound:
            return True, True
        if _assignable(subs, t1, bound):
            general = most_general(t1, bound)
            if _not_referenced_in(subs, t2, general):
                subs.bindings[t2.name] = general
            return True, True
        return False, True
    if _not_referenced_in(subs, t2, t1):
        subs.bindings[t2.name] = t1
        return True, False
    return False, False


def _assignable_null(t: CelType) -> bool:
    return t.kind in (Kind.OPAQUE, Kind.STRUCT, Kind.ANY, Kind.DURATION, Kind.TIMESTAMP) or _assignable_type(
        t, CelType(Kind.NULL, "null_type")
    )


def _assignable(subs: Substitution, t1: CelType, t2: CelType) -> bool:
    """In place: may a value of ``t2`` be used where ``t1`` is expected (binding type parameters in ``subs``)."""
    if t2.kind == Kind.TYPE_PARAM:
        valid, had_binding = _valid_substitution(subs, t1, t2)
        if valid:
            return True
        if had_binding:
            return False
    if t1.kind == Kind.TYPE_PARAM:
        return _valid_substitution(subs, t2, t1)[0]
    if t1.is_dyn_or_error() or t2.is_dyn_or_error():
        return True
    if t1.kind == Kind.NULL:
        return _assignable_null(t2)
    if t2.kind == Kind.NULL:
        return _assignable_null(t1)
    if t1.kind in (
        Kind.BOOL,
        Kind.BYTES,
        Kind.DOUBLE,
        Kind.INT,
        Kind.STRING,
        Kind.UINT,
        Kind.ANY,
        Kind.DURATION,
        Kind.TIMESTAMP,
        Kind.STRUCT,
    ):
        return _assignable_type(t2, t1)
    if t1.kind == Kind.TYPE:
        return t2.kind == Kind.TYPE
    if t1.kind in (Kind.OPAQUE, Kind.LIST, Kind.MAP):
        return t1.kind == t2.kind and t1.name == t2.name and _assignable_all(subs, t1.params, t2.params)
    return False


def _assignable_all(subs: Substitution, l1: Sequence[CelType], l2: Sequence[CelType]) -> bool:
    return len(l1) == len(l2) and all(_assignable(subs, a, b) for a, b in zip(l1, l2, strict=True))


def is_assignable(subs: Substitution, t1: CelType, t2: CelType) -> Substitution | None:
    trial = subs.copy()
    return trial if _assignable(trial, t1, t2) else None


def is_assignable_list(subs: Substitution, l1: Sequence[CelType], l2: Sequence[CelType]) -> Substitution | None:
    trial = subs.copy()
    return trial if _assignable_all(trial, l1, l2) else None


def substitute(subs: Substitution, t: CelType, params_to_dyn: bool) -> CelType:
    """``t`` with bound type parameters replaced (and unbound ones by dyn when ``params_to_dyn``)."""
    bound = subs.find(t)
    if bound is not None:
        return substitute(subs, bound, params_to_dyn)
    if t.kind == Kind.TYPE_PARAM:
        return DYN if params_to_dyn else t
    if t.params and t.kind in (Kind.OPAQUE, Kind.LIST, Kind.MAP, Kind.TYPE):
        return CelType(t.kind, t.name, tuple(substitute(subs, p, params_to_dyn) for p in t.params))
    return t
