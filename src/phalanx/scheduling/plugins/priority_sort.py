"""PrioritySort: the active queue's order (priority descending, then creation, then namespace/name), kept by
``scheduling/queue.py``."""

from __future__ import annotations

from phalanx.scheduling.plugin import PluginSpec

__all__ = ["NAME", "PLUGIN"]

NAME = "PrioritySort"

PLUGIN: PluginSpec[None] = PluginSpec(NAME, points=frozenset({"queueSort"}), default_weight=0)
