"""Cluster events: what happened to the cluster that may make a rejected pod schedulable.

Each plugin lists the events it cares about (kube-scheduler's ``EnqueueExtensions.EventsToRegister``); the queue
moves a pod back to the active queue only on an event one of its rejecting plugins registered for.
"""

from __future__ import annotations

import enum

__all__ = ["POD_PLACEMENT_EVENTS", "ClusterEvent"]


class ClusterEvent(enum.Enum):
    """One kind of cluster change, named after kube-scheduler's ``framework.ClusterEvent`` (resource and action)."""

    POD_ADD = "PodAdd"  # a pending pod was added (a gang member arriving)
    ASSIGNED_POD_ADD = "AssignedPodAdd"  # a pod was bound to a node
    POD_DELETE = "PodDelete"  # a pod left its node (deleted, finished, evicted, its node gone)
    NODE_ADD = "NodeAdd"
    NODE_UPDATE = "NodeUpdate"  # allocatable, labels, taints or unschedulable changed
    POD_GROUP_ADD = "PodGroupAdd"
    RESOURCE_CLAIM_CHANGE = "ResourceClaimChange"  # a claim appeared, changed or was deallocated
    RESOURCE_SLICE_CHANGE = "ResourceSliceChange"  # devices or DeviceClasses changed


# A matching pod placed or gone, or a node added or relabelled, changes a topology domain's counts (spread skew,
# inter-pod affinity and anti-affinity): the events that may help a pod those plugins rejected.
POD_PLACEMENT_EVENTS = frozenset(
    {
        ClusterEvent.POD_ADD,
        ClusterEvent.ASSIGNED_POD_ADD,
        ClusterEvent.POD_DELETE,
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_UPDATE,
    }
)
