"""The plugin registry: every plugin name phalanx knows, in v1.36's default order (``getDefaultPlugins``).

Each line names one plugin module, whose ``PLUGIN`` spec says everything else (name, factory, extension points,
events, argument parser, default weight); adding a plugin is its module plus one line here (docs/architecture.md).
The default profile, the queue's event hints and the configuration's argument parsers are all derived from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.plugin import PluginSpec

__all__ = ["DEFAULT_PLACEMENT_SCORES", "EVENT_HINTS", "GROUP_SCOPED", "REGISTRY", "SPECS", "default_plugins"]

# One line per plugin: the module in this package whose ``PLUGIN`` describes it, in v1.36's default order.
_MODULES = (
    "scheduling_gates",
    "priority_sort",
    "node_unschedulable",
    "node_name",
    "taint_toleration",
    "node_affinity",
    "node_ports",
    "node_resources_fit",
    "pod_topology_spread",
    "inter_pod_affinity",
    "node_resources_balanced_allocation",
    "dynamic_resources",
    "gpu_share",
    "gang_scheduling",
    "default_preemption",
    "topology_placement_generator",
    "pod_group_pods_count",
)
# kube-scheduler plugins accepted in a configuration but not modelled (no volumes or images in a snapshot).
_NOT_MODELLED = (
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "ImageLocality",
    "DefaultBinder",
)


def _spec(module: str) -> PluginSpec[Any]:
    spec: PluginSpec[Any] = importlib.import_module(f"{__package__}.{module}").PLUGIN
    return spec


SPECS: tuple[PluginSpec[Any], ...] = (
    *map(_spec, _MODULES),
    *(PluginSpec[None](name, modelled=False) for name in _NOT_MODELLED),
)

REGISTRY: Mapping[str, PluginSpec[Any]] = {spec.name: spec for spec in SPECS}

# Which cluster events can make a pod rejected by a plugin schedulable (EnqueueExtensions.EventsToRegister).
EVENT_HINTS: Mapping[str, frozenset[ClusterEvent]] = {s.name: s.events for s in SPECS if s.events}
# Plugins whose events only wake the pods of the PodGroup the event is about.
GROUP_SCOPED: frozenset[str] = frozenset(s.name for s in SPECS if s.group_scoped)

# Placement scorers of the PodGroup cycle with their default weights (NodeResourcesFit also scores placements).
DEFAULT_PLACEMENT_SCORES: tuple[tuple[str, int], ...] = (("PodGroupPodsCount", 1), ("NodeResourcesFit", 1))


def default_plugins() -> list[tuple[PluginSpec[Any], int]]:
    """The default profile's plugins the engine instantiates, in order, with their score weights."""
    return [(s, s.default_weight) for s in SPECS if s.factory is not None and s.default_weight is not None]
