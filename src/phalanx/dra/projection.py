"""Which parts of a device a CEL selector reads, so its verdict can be shared by devices that agree on them.

Real slices give every device unique attributes (``uuid``, ``pciBusID``), so caching verdicts by whole device
would evaluate every device. A selector usually reads a few attributes by literal name; devices that agree on
those get the same verdict (and the same error). Anything the walk cannot pin down (the whole ``device`` handed
to a function, an attribute map indexed by a computed key) counts as reading more, never less.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from phalanx.api.cel.syntax import Call, Comprehension, Expr, Has, Ident, ListLit, Literal, MapLit, Select
from phalanx.api.dra import Device

__all__ = ["Path", "device_paths", "projection"]

Path = tuple[str, ...]  # ("driver",), ("attributes", domain), ("attributes", domain, id), ("capacity", ...) ...
Env = Mapping[str, Path | None]  # bound variables: a device path, or None for a value that is not one

_FIELDS = ("driver", "allowMultipleAllocations", "attributes", "capacity")
_ENCODER = msgspec.json.Encoder(order="sorted")


def device_paths(syntax: Expr) -> frozenset[Path] | None:
    """The device paths ``syntax`` reads, or None when it may read the whole device."""
    found: set[Path] = set()
    _visit(syntax, {}, found)
    return None if () in found else frozenset(found)


def _ref(e: Expr, env: Env) -> Path | None:
    """The device path ``e`` denotes (``device.attributes["d"].x`` -> attributes/d/x), or None."""
    if isinstance(e, Ident):
        return env.get(e.name, () if e.name == "device" else None)
    if isinstance(e, Select):
        return _extend(_ref(e.operand, env), e.field)
    if isinstance(e, Call) and e.function == "_[_]" and e.target is None and len(e.args) == 2:
        key = e.args[1]
        if isinstance(key, Literal) and isinstance(key.value, str):
            return _extend(_ref(e.args[0], env), key.value)
    return None


def _extend(base: Path | None, name: str) -> Path | None:
    if base is None:
        return None
    if base == ():
        return (name,) if name in _FIELDS else None
    if base[0] in ("attributes", "capacity") and len(base) < 3:
        return (*base, name)
    return None  # a scalar's field: not part of the device


def _visit(e: Expr, env: Env, found: set[Path]) -> None:
    path = _ref(e, env)
    if path is not None:
        found.add(path)
        return
    if isinstance(e, Select):
        _visit(e.operand, env, found)
    elif isinstance(e, Has):
        base = _ref(e.operand, env)
        extended = _extend(base, e.field)
        if extended is not None:
            found.add(extended)
        else:
            _visit(e.operand, env, found)
    elif isinstance(e, Call):
        for arg in ((e.target,) if e.target is not None else ()) + e.args:
            _visit(arg, env, found)
    elif isinstance(e, ListLit):
        for element in e.elements:
            _visit(element, env, found)
    elif isinstance(e, MapLit):
        for key, value, _ in e.entries:
            _visit(key, env, found)
            _visit(value, env, found)
    elif isinstance(e, Comprehension):
        _visit_comprehension(e, env, found)


def _visit_comprehension(e: Comprehension, env: Env, found: set[Path]) -> None:
    inner = dict(env)
    base = _ref(e.range, env)
    if e.kind == "bind" and base is not None and len(base) <= 2:
        inner[e.variables[0]] = base  # an alias of a map: what counts is what is read through it
    else:
        _visit(e.range, env, found)
        for name in e.variables:
            inner[name] = None  # elements or keys: plain values
    for arg in e.args:
        _visit(arg, inner, found)


def projection(paths: frozenset[Path], driver: str, device: Device, multi: bool) -> bytes:
    """The values at ``paths`` of one device, encoded: equal bytes, equal verdict."""
    values: list[object] = []
    for path in sorted(paths):
        values.append(_value(path, driver, device, multi))
    return _ENCODER.encode(values)


def _value(path: Path, driver: str, device: Device, multi: bool) -> object:
    kind = path[0]
    if kind == "driver":
        return driver
    if kind == "allowMultipleAllocations":
        return multi
    entries: Mapping[str, object] = device.attributes if kind == "attributes" else device.capacity
    if len(path) == 1:
        return sorted((name, msgspec.to_builtins(v)) for name, v in entries.items())
    domain = path[1]
    grouped = sorted(
        (ident, msgspec.to_builtins(v)) for name, v in entries.items() for ident in _ident(name, domain, driver)
    )
    if len(path) == 2:
        return grouped
    return [v for ident, v in grouped if ident == path[2]] or None


def _ident(name: str, domain: str, driver: str) -> list[str]:
    """The identifier of a qualified name inside ``domain``, as CEL groups them ([] when in another domain)."""
    qualified_domain, _, ident = name.rpartition("/")
    return [ident] if (qualified_domain or driver) == domain else []
