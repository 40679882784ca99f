"""The plugin registry: plugin name -> factory, and the default profile's plugins and weights (v1.36)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from phalanx.scheduling.plugins import (
    dynamic_resources,
    gpu_share,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
)

__all__ = [
    "DEFAULT_PLACEMENT_SCORES",
    "DEFAULT_PLUGINS",
    "NOT_MODELLED",
    "PLACEMENT_GENERATORS",
    "PLACEMENT_SCORERS",
    "QUEUE_AND_GATE_PLUGINS",
    "REGISTRY",
    "PluginEntry",
]


@dataclass(frozen=True)
class PluginEntry:
    factory: Callable[[Any], Any]
    filter: bool
    score: bool


REGISTRY: dict[str, PluginEntry] = {
    node_unschedulable.NAME: PluginEntry(lambda a: node_unschedulable.NodeUnschedulable(), True, False),
    node_name.NAME: PluginEntry(lambda a: node_name.NodeName(), True, False),
    taint_toleration.NAME: PluginEntry(lambda a: taint_toleration.TaintToleration(), True, True),
    node_affinity.NAME: PluginEntry(node_affinity.NodeAffinity, True, True),
    node_ports.NAME: PluginEntry(lambda a: node_ports.NodePorts(), True, False),
    node_resources_fit.NAME: PluginEntry(node_resources_fit.NodeResourcesFit, True, True),
    node_resources_balanced_allocation.NAME: PluginEntry(
        node_resources_balanced_allocation.NodeResourcesBalancedAllocation, False, True
    ),
    pod_topology_spread.NAME: PluginEntry(pod_topology_spread.PodTopologySpread, True, True),
    inter_pod_affinity.NAME: PluginEntry(inter_pod_affinity.InterPodAffinity, True, True),
    dynamic_resources.NAME: PluginEntry(lambda a: dynamic_resources.DynamicResources(), True, True),
    gpu_share.NAME: PluginEntry(gpu_share.GpuShare, False, True),
}

# Queue-sort, PreEnqueue and Permit plugins the engine implements in the queue and the PodGroup cycle.
QUEUE_AND_GATE_PLUGINS = {"PrioritySort", "SchedulingGates", "GangScheduling"}

# PostFilter plugins, implemented in scheduling/preemption.py (per pod) and the PodGroup cycle (whole groups).
POST_FILTER_PLUGINS = {"DefaultPreemption"}

# kube-scheduler plugins phalanx accepts in a configuration but does not model (no volumes or images in a
# snapshot).
NOT_MODELLED = {
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "ImageLocality",
    "DefaultBinder",
}

# Placement plugins of the PodGroup cycle (topology-aware scheduling), implemented in scheduling/placement.py:
# the generator and the placement scorers with their default weights (NodeResourcesFit also scores placements).
PLACEMENT_GENERATORS = {"TopologyPlacementGenerator"}
PLACEMENT_SCORERS = {"PodGroupPodsCount", "NodeResourcesFit"}
DEFAULT_PLACEMENT_SCORES: list[tuple[str, int]] = [("PodGroupPodsCount", 1), ("NodeResourcesFit", 1)]

# getDefaultPlugins (v1.36) in order, with score weights; only the names phalanx models.
DEFAULT_PLUGINS: list[tuple[str, int]] = [
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    (node_unschedulable.NAME, 0),
    (node_name.NAME, 0),
    (taint_toleration.NAME, 3),
    (node_affinity.NAME, 2),
    (node_ports.NAME, 0),
    (node_resources_fit.NAME, 1),
    (pod_topology_spread.NAME, 2),
    (inter_pod_affinity.NAME, 2),
    (node_resources_balanced_allocation.NAME, 1),
    # DynamicResourceAllocation (GA) appends DynamicResources to the multi-point plugins.
    (dynamic_resources.NAME, 1),
    # phalanx: fragmentation-aware scoring for shared GPUs (DRA consumable capacity); skips clusters without them.
    (gpu_share.NAME, 1),
    ("GangScheduling", 0),
]
