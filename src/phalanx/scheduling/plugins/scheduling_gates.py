"""SchedulingGates: a pod with ``spec.schedulingGates`` waits in PreEnqueue until the gates are removed (an update
of the pod). The gate itself is checked by the engine's PreEnqueue (``scheduling/admission.py``)."""

from __future__ import annotations

from phalanx.scheduling.plugin import PluginSpec

__all__ = ["NAME", "PLUGIN"]

NAME = "SchedulingGates"

PLUGIN: PluginSpec[None] = PluginSpec(NAME, points=frozenset({"preEnqueue"}), default_weight=0)
