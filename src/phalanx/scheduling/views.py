"""The engine's read-only answers to front ends: values copied out of the engine's state, so a front end never
holds a reference into the node table, the claim tracker or the queue.

Queries are methods of the engine (``Scheduler.node_usage()`` and so on); this module holds the value types and
the computations that need more than a line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from phalanx.api import dra
from phalanx.arrays import BoolArray, IntArray
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.dra.claims import ClaimRecord, ClaimTracker
from phalanx.dra.inventory import DeviceInfo
from phalanx.scheduling.outcome import GroupCondition
from phalanx.scheduling.resource_claims import ClaimBinding

__all__ = [
    "ClaimStatus",
    "CompositeStatus",
    "GpuDevices",
    "GroupStatus",
    "NodeUsage",
    "PodClaimStatus",
    "claim_status",
    "extended_status",
]


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """Per node (rows in name order): requested and allocatable of every resource column, pods and pod slots."""

    names: list[str]
    resources: list[str]
    requested: IntArray  # (nodes, resources)
    allocatable: IntArray
    pods: IntArray
    max_pods: IntArray

    @classmethod
    def of(cls, t: NodeTable) -> NodeUsage:
        return cls(
            list(t.names),
            list(t.resources.names),
            t.requested.copy(),
            t.allocatable.copy(),
            t.pod_count.copy(),
            t.max_pods.copy(),
        )


@dataclass(frozen=True, slots=True)
class CompositeStatus:
    """A CompositePodGroup as the engine has it: minGroupCount (None: basic), parent, children
    (``Kind/namespace/name``) and its CompositePodGroupScheduled condition."""

    namespace: str
    name: str
    key: str
    min_group_count: int | None
    parent: str | None
    children: list[str]
    satisfied: int  # children whose scheduled condition is True
    condition: GroupCondition | None


@dataclass(frozen=True, slots=True)
class ClaimStatus:
    """A ResourceClaim as the engine has it: ``status.allocation`` and ``reservedFor`` as it would write them."""

    key: str
    claim: dra.ResourceClaim
    allocation: dra.AllocationResult | None
    reserved_for: tuple[dra.ResourceClaimConsumerReference, ...]
    generated_from: str | None  # the ResourceClaimTemplate it was generated from

    @property
    def namespace(self) -> str:
        return self.claim.metadata.namespace

    @property
    def name(self) -> str:
        return self.claim.metadata.name


@dataclass(frozen=True, slots=True)
class PodClaimStatus:
    """A claim a pod uses: ``group`` is the PodGroup's key for a PodGroup claim; ``extended_status`` is the pod's
    ``status.extendedResourceClaimStatus`` for the claim the scheduler creates for extended resources."""

    status: ClaimStatus
    group: str | None
    extended_status: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class GroupStatus:
    namespace: str
    name: str
    key: str
    min_count: int | None
    scheduled: int  # members bound (in the input or by the engine)
    condition: GroupCondition | None
    uid: str
    parent: str | None = None  # the parent CompositePodGroup's name


def claim_status(record: ClaimRecord) -> ClaimStatus:
    return ClaimStatus(record.key, record.claim, record.allocation, tuple(record.reserved_for), record.generated_from)


def extended_status(
    binding: ClaimBinding, pi: PodInfo, nodes: NodeTable, row: int, claim: dra.ResourceClaim
) -> dict[str, Any]:
    """``status.extendedResourceClaimStatus``: which container's resource each request of the claim serves, in
    the order the engine named the requests (``container-<i>-request-<j>``)."""
    lacking = binding.lacking(pi, nodes, row)
    mappings, per_container = [], Counter[int]()
    for resource, i, _, _ in binding.extended_requests(pi):
        if resource not in lacking:
            continue
        request = f"container-{i}-request-{per_container[i]}"
        per_container[i] += 1
        container = pi.pod.spec.containers[i].name
        mappings.append({"containerName": container, "resourceName": resource, "requestName": request})
    return {"extendedResourceClaimStatus": {"resourceClaimName": claim.metadata.name, "requestMappings": mappings}}


class GpuDevices:
    """GPU devices per node row, all and allocated: a node-local device of a GPU driver whose ``type`` attribute,
    when it has one, is ``gpu`` (MIG slices and other partitions do not count as GPUs)."""

    def __init__(self, drivers: frozenset[str]) -> None:
        self.drivers = drivers
        self._inventory: object = None
        self._gpu: BoolArray = np.zeros(0, dtype=bool)
        self._total: IntArray = np.zeros(0, dtype=np.int64)

    def per_row(self, tracker: ClaimTracker, rows: int) -> tuple[IntArray, IntArray]:
        """(GPU devices, allocated GPU devices) per node row; devices of nodes not in the table count nowhere."""
        inventory = tracker.inventory
        # Reindexed (nodes added or deleted): recount. An inventory without devices is not reindexed when a node
        # goes, so the row count is compared too.
        if inventory is not self._inventory or len(self._total) != rows:
            self._inventory = inventory
            self._gpu = np.array([self._is_gpu(d) for d in inventory.devices], dtype=bool)
            self._total = _count(inventory.device_node[self._gpu], rows)
        used: list[int] = []
        for record in tracker.records.values():
            if record.allocation is None:
                continue
            for result in record.allocation.devices.results:
                index = inventory.lookup(result.driver, result.pool, result.device)
                if index is not None and self._gpu[index] and not result.admin_access:
                    used.append(int(inventory.device_node[index]))
        return self._total, _count(np.array(used, dtype=np.int64), rows)

    def _is_gpu(self, d: DeviceInfo) -> bool:
        kind = d.device.attributes.get("type") or d.device.attributes.get(f"{d.driver}/type")
        return d.driver in self.drivers and d.row >= 0 and (kind is None or kind.string == "gpu")


def _count(rows_of: Sequence[int] | IntArray, rows: int) -> IntArray:
    arr = np.asarray(rows_of, dtype=np.int64)
    return np.bincount(arr[arr >= 0], minlength=rows).astype(np.int64)[:rows]
