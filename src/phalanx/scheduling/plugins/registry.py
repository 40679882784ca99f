"""The plugin registry: every plugin name phalanx knows, in v1.36's default order (``getDefaultPlugins``).

Each line is one plugin module's ``PLUGIN`` spec (name, factory, extension points, events, argument parser,
default weight); adding a plugin is its module plus one line here (docs/architecture.md). The default profile,
the queue's event hints and the configuration's argument parsers are all derived from this list.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.plugin import PluginSpec
from phalanx.scheduling.plugins import (
    default_preemption,
    dynamic_resources,
    gang_scheduling,
    gpu_share,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    pod_group_pods_count,
    pod_topology_spread,
    priority_sort,
    scheduling_gates,
    taint_toleration,
    topology_placement_generator,
)

__all__ = ["DEFAULT_PLACEMENT_SCORES", "EVENT_HINTS", "GROUP_SCOPED", "REGISTRY", "SPECS", "default_plugins"]


def _not_modelled(name: str) -> PluginSpec[None]:
    """A kube-scheduler plugin accepted in a configuration but not modelled (no volumes or images in a snapshot)."""
    return PluginSpec(name, modelled=False)


SPECS: tuple[PluginSpec, ...] = (  # type: ignore[type-arg]
    scheduling_gates.PLUGIN,
    priority_sort.PLUGIN,
    node_unschedulable.PLUGIN,
    node_name.PLUGIN,
    taint_toleration.PLUGIN,
    node_affinity.PLUGIN,
    node_ports.PLUGIN,
    node_resources_fit.PLUGIN,
    pod_topology_spread.PLUGIN,
    inter_pod_affinity.PLUGIN,
    node_resources_balanced_allocation.PLUGIN,
    dynamic_resources.PLUGIN,
    gpu_share.PLUGIN,
    gang_scheduling.PLUGIN,
    default_preemption.PLUGIN,
    topology_placement_generator.PLUGIN,
    pod_group_pods_count.PLUGIN,
    *map(_not_modelled, ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "ImageLocality")),
    _not_modelled("DefaultBinder"),
)

REGISTRY: Mapping[str, PluginSpec] = {spec.name: spec for spec in SPECS}  # type: ignore[type-arg]

# Which cluster events can make a pod rejected by a plugin schedulable (EnqueueExtensions.EventsToRegister).
EVENT_HINTS: Mapping[str, frozenset[ClusterEvent]] = {s.name: s.events for s in SPECS if s.events}
# Plugins whose events only wake the pods of the PodGroup the event is about.
GROUP_SCOPED: frozenset[str] = frozenset(s.name for s in SPECS if s.group_scoped)

# Placement scorers of the PodGroup cycle with their default weights (NodeResourcesFit also scores placements).
DEFAULT_PLACEMENT_SCORES: tuple[tuple[str, int], ...] = ((pod_group_pods_count.NAME, 1), (node_resources_fit.NAME, 1))


def default_plugins() -> list[tuple[PluginSpec, int]]:  # type: ignore[type-arg]
    """The default profile's plugins the engine instantiates, in order, with their score weights."""
    return [(s, s.default_weight) for s in SPECS if s.factory is not None and s.default_weight is not None]
