"""GangScheduling: PreEnqueue holds a gang's pods until minCount of them exist, and Permit holds the placed ones
until minCount are placed (the PodGroup cycle, ``scheduling/cycle/group.py``). Disabling it keeps the PodGroup
cycle (GenericWorkload) but drops both checks. A pod it rejected comes back when a pod or the PodGroup of its
own group is added."""

from __future__ import annotations

from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.plugin import PluginSpec

__all__ = ["NAME", "PLUGIN"]

NAME = "GangScheduling"

PLUGIN: PluginSpec[None] = PluginSpec(
    NAME,
    points=frozenset({"preEnqueue", "permit"}),
    events=frozenset({ClusterEvent.POD_ADD, ClusterEvent.POD_GROUP_ADD}),
    default_weight=0,
    group_scoped=True,
)
