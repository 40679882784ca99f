"""Feature gates that change what the DRA allocator does, with kube-scheduler v1.36 defaults (spec dra.md §0).

Passed to the inventory and the allocator; nothing reads gates from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_FEATURES", "Features"]


@dataclass(frozen=True)
class Features:
    """One switch per DRA feature gate the allocator consults; the defaults are v1.36's."""

    prioritized_list: bool = True  # DRAPrioritizedList: firstAvailable subrequests
    admin_access: bool = True  # DRAAdminAccess
    partitionable: bool = True  # DRAPartitionableDevices: counters, perDeviceNodeSelection
    device_taints: bool = True  # DRADeviceTaints
    consumable_capacity: bool = True  # DRAConsumableCapacity: multi-allocation, capacity requests
    binding_conditions: bool = True  # DRADeviceBindingConditions
    list_type_attributes: bool = False  # DRAListTypeAttributes (alpha): set semantics for constraints
    extended_resource: bool = True  # DRAExtendedResource


DEFAULT_FEATURES = Features()
