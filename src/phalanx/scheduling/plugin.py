"""How a plugin describes itself to the registry: its name, factory, extension points, the cluster events that may
make the pods it rejected schedulable, and the parser (and validator) of its ``pluginConfig`` arguments.

Each plugin module ends with ``PLUGIN = PluginSpec(...)``; ``plugins/registry.py`` lists the specs, one line each.
Argument parsers raise :class:`ArgsError` with field paths relative to ``args``; the configuration loader adds
the file, line and ``profiles[i].pluginConfig[j].args`` prefix. The helpers below check types in
kube-apiserver's words, so a string where a map belongs is an error naming the field, never an AttributeError.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from phalanx.api.errors import FieldError
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.handle import Handle

__all__ = [
    "POINTS",
    "ArgsError",
    "PluginSpec",
    "boolean",
    "check_fields",
    "decode",
    "integer",
    "join",
    "mapping",
    "sequence",
    "string",
    "string_list",
    "type_error",
]

A = TypeVar("A")
T = TypeVar("T")

# KubeSchedulerConfiguration extension points (and phalanx's placement points of the PodGroup cycle).
POINTS = (
    "placementGenerate",
    "placementScore",
    "queueSort",
    "preEnqueue",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
)


@dataclass(frozen=True)
class PluginSpec(Generic[A]):
    """One plugin as the registry and the configuration see it.

    ``factory`` builds an instance for a profile from its parsed args (None: defaults) and the framework handle;
    None for plugins the engine implements itself (the queue's PrioritySort, the PodGroup cycle's GangScheduling,
    DefaultPreemption, the placement plugins). ``default_weight``: the plugin is in the default profile with this
    score weight (0 when it does not score); None: only when a configuration enables it. ``group_scoped``: its
    events only wake pods of the PodGroup the event concerns. ``modelled``: False for kube-scheduler plugins
    phalanx accepts in a configuration but does not model (no volumes or images in a snapshot).
    """

    name: str
    factory: Callable[[A | None, Handle], Any] | None = None
    points: frozenset[str] = frozenset()
    events: frozenset[ClusterEvent] = frozenset()
    parse_args: Callable[[Any], A] | None = None
    default_weight: int | None = None
    group_scoped: bool = False
    modelled: bool = True

    @property
    def filter(self) -> bool:
        return "filter" in self.points

    @property
    def score(self) -> bool:
        return "score" in self.points


@dataclass
class ArgsError(ValueError):
    """Invalid plugin arguments: every problem found, each with its path inside ``args``."""

    errors: list[FieldError] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(f"{e.path}: {e.message}" if e.path else e.message for e in self.errors)


def join(path: str, name: str) -> str:
    """``path`` extended by a field name or an ``[index]``."""
    if not path:
        return name
    return f"{path}{name}" if name.startswith("[") else f"{path}.{name}"


def type_error(path: str, value: Any, expected: str) -> FieldError:
    """``value`` is not of the ``expected`` type: scalars are shown as they are, collections by their JSON type."""
    if isinstance(value, Mapping | list):
        kind = "object" if isinstance(value, Mapping) else "array"
        return FieldError(path, f"Invalid value: {kind}: must be {expected}")
    return FieldError.invalid(path, value, f"must be {expected}")


def _type_error(path: str, value: Any, expected: str) -> ArgsError:
    return ArgsError([type_error(path, value, expected)])


_EXPECTED = re.compile(r"Expected `([^`]+)`, got `([^`]+)`")
_WORDS = {"object": "an object", "array": "an array", "str": "a string", "int": "an integer", "bool": "a boolean"}
_KINDS = {"str": "string", "int": "integer", "bool": "boolean", "float": "number", "null": "null"}


def decode(raw: Any, model: type[T], path: str) -> T:
    """``raw`` decoded into a Kubernetes API struct (``msgspec``), its type errors as field errors under ``path``."""
    try:
        return msgspec.convert(raw, model)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `$")
        at = path + where.rstrip("`")
        found = _EXPECTED.match(message)
        if found is None:
            raise ArgsError([FieldError(at, f"Invalid value: {message}")]) from exc
        expected, got = found.groups()
        expected = expected.removesuffix(" | null")
        detail = f"must be {_WORDS.get(expected, expected)}"
        raise ArgsError([FieldError(at, f"Invalid value: {_KINDS.get(got, got)}: {detail}")]) from exc


def mapping(raw: Any, path: str = "") -> Mapping[str, Any]:
    """``raw`` as a map (a missing value is an empty one)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _type_error(path, raw, "an object")
    return raw


def check_fields(raw: Mapping[str, Any], known: set[str], path: str = "") -> None:
    """Strict decoding, as kube-scheduler's: an unknown field is an error."""
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise ArgsError([FieldError(join(path, k), "Invalid value: unknown field") for k in unknown])


def sequence(raw: Any, path: str = "") -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _type_error(path, raw, "a list")
    return raw


def string(raw: Any, path: str, default: str = "") -> str:
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise _type_error(path, raw, "a string")
    return raw


def string_list(raw: Any, path: str) -> list[str]:
    return [string(v, join(path, f"[{i}]")) for i, v in enumerate(sequence(raw, path))]


def integer(raw: Any, path: str, default: int) -> int:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise _type_error(path, raw, "an integer")
    return raw


def boolean(raw: Any, path: str, default: bool) -> bool:
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise _type_error(path, raw, "a boolean")
    return raw
