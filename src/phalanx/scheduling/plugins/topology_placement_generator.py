"""TopologyPlacementGenerator: the candidate topology domains of a PodGroup (``scheduling/placement.py``, driven
by ``scheduling/cycle/placement.py``). Its args (a phalanx extension) are the cluster's topology levels, coarsest
first, as node label keys (zone > block > rack > hostname), used by the phalanx topology annotations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phalanx.api.errors import FieldError
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.plugin import ArgsError, PluginSpec, check_fields, mapping, string_list

__all__ = ["NAME", "PLUGIN", "TopologyArgs", "parse_args"]

NAME = "TopologyPlacementGenerator"


@dataclass
class TopologyArgs:
    """The topology levels, coarsest first, as node label keys."""

    levels: list[str] = field(default_factory=list)


def parse_args(raw: Any) -> TopologyArgs:
    args = mapping(raw)
    check_fields(args, {"levels"})
    levels = string_list(args.get("levels"), "levels")
    errors = [FieldError.required(f"levels[{i}]", "a node label key") for i, v in enumerate(levels) if not v]
    seen: set[str] = set()
    for i, level in enumerate(levels):
        if level and level in seen:
            errors.append(FieldError.duplicate(f"levels[{i}]", level))
        seen.add(level)
    if errors:
        raise ArgsError(errors)
    return TopologyArgs(levels)


PLUGIN: PluginSpec[TopologyArgs] = PluginSpec(
    NAME,
    points=frozenset({"placementGenerate"}),
    events=frozenset({ClusterEvent.POD_DELETE, ClusterEvent.NODE_ADD, ClusterEvent.NODE_UPDATE}),
    parse_args=parse_args,
)
