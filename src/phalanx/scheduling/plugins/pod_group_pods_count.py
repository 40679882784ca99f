"""PodGroupPodsCount: the placement scorer of v1.36 topology-aware scheduling that prefers the placement holding
the most of the group's pods (``scheduling/placement.py``, ``score_v136``). NodeResourcesFit scores placements
too."""

from __future__ import annotations

from phalanx.scheduling.plugin import PluginSpec

__all__ = ["NAME", "PLUGIN"]

NAME = "PodGroupPodsCount"

PLUGIN: PluginSpec[None] = PluginSpec(NAME, points=frozenset({"placementScore"}))
