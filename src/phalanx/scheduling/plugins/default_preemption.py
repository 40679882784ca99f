"""DefaultPreemption: the PostFilter that evicts lower-priority pods for a pod (``scheduling/preemption``) or a
PodGroup (workload-aware preemption, ``scheduling/cycle/group_preemption.py``) that fits nowhere. A pod waiting
on its victims comes back when they are gone."""

from __future__ import annotations

from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.plugin import PluginSpec

__all__ = ["NAME", "PLUGIN"]

NAME = "DefaultPreemption"

PLUGIN: PluginSpec[None] = PluginSpec(
    NAME, points=frozenset({"postFilter"}), events=frozenset({ClusterEvent.POD_DELETE}), default_weight=0
)
