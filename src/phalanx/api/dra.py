"""Typed models of the Dynamic Resource Allocation objects (``resource.k8s.io/v1``) phalanx reads.

DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate and (v1.37) DeviceTaintRule in the v1 shape.
The ``v1beta2`` shape is the same; ``v1beta1`` (flattened requests, ``Device.basic``) is converted to v1 by
:mod:`phalanx.api.dra_convert` before decoding. Like :mod:`phalanx.api.models`, every field has a default and
validation reports what is missing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from phalanx.api.models import NodeSelector, ObjectMeta, Quantity

__all__ = [
    "API_GROUP",
    "POD_CLAIM_NAME_ANNOTATION",
    "AllocatedDeviceStatus",
    "AllocationResult",
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAllocationConfiguration",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceClass",
    "DeviceClassConfiguration",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceTaintRule",
    "DeviceTaintRuleSpec",
    "DeviceTaintSelector",
    "DeviceToleration",
    "ExactDeviceRequest",
    "OpaqueDeviceConfiguration",
    "PodResourceClaim",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
]

API_GROUP = "resource.k8s.io"
# Set by the resourceclaim controller on a claim it generates: the pod's (or PodGroup's) claim entry it serves.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


class _Model(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


# --- selectors and configuration --------------------------------------------------------------------------------


class CELDeviceSelector(_Model):
    expression: str = ""


class DeviceSelector(_Model):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(_Model):
    driver: str = ""
    parameters: Any = None


class DeviceClassConfiguration(_Model):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(_Model):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    extended_resource_name: str | None = None


class DeviceClass(_Model):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "DeviceClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# --- ResourceSlice ------------------------------------------------------------------------------------------------


class DeviceAttribute(_Model):
    """Exactly one member is set (validation checks it). ``version`` is a semver 2.0.0 string."""

    int_: int | None = msgspec.field(default=None, name="int")
    bool_: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None
    # DRAListTypeAttributes (alpha, off by default in v1.36): accepted and validated, used only when enabled.
    ints: list[int] | None = None
    bools: list[bool] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None


class CapacityRequestPolicyRange(_Model):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(_Model):
    default: Quantity | None = None
    valid_values: list[Quantity] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(_Model):
    value: Quantity = 0
    request_policy: CapacityRequestPolicy | None = None


class Counter(_Model):
    value: Quantity = 0


class CounterSet(_Model):
    name: str = ""
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(_Model):
    counter_set: str = ""
    counters: dict[str, Counter] = {}
    # DRADeviceCompatibilityGroups (alpha in v1.37, off): read only to warn that it is ignored (docs/dra.md).
    compatibility_groups: list[str] = []


class DeviceTaint(_Model):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: datetime | None = None


class Device(_Model):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None
    # DRANodeAllocatableResources (alpha, off): read only to warn that it is ignored (docs/dra.md).
    node_allocatable_resources: dict[str, Any] = {}


class ResourcePool(_Model):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(_Model):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[CounterSet] = []
    # v1.37, DRAPartitionableDevicesType (alpha): the string attribute naming each partition's type. Validated;
    # allocation does not need it (devices of one type already share their counter costs).
    partition_type_attribute: str | None = None
    # v1.37, DRAOptionalNodeOperations (alpha): kubelet calls a driver may skip; nothing the scheduler decides.
    skip_node_operations: list[str] = []


class ResourceSlice(_Model):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


# --- the pod side ------------------------------------------------------------------------------------------------


class PodResourceClaim(_Model):
    """One entry of ``pod.spec.resourceClaims`` (kept raw on the Pod model for validation; decoded with this)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


# --- ResourceClaim ----------------------------------------------------------------------------------------------


class DeviceToleration(_Model):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class CapacityRequirements(_Model):
    requests: dict[str, Quantity] = {}


class ExactDeviceRequest(_Model):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = "ExactCount"
    count: int = 0  # 0 = unset; ExactCount defaults it to 1 (dra_defaults.effective_count, .defaulted)
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None
    # DRADerivedAttributes (alpha in v1.37, off): read only to warn that it is ignored (docs/dra.md).
    derived_attributes: list[dict[str, Any]] = []


class DeviceSubRequest(_Model):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = "ExactCount"
    count: int = 0
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None
    # DRADerivedAttributes (alpha in v1.37, off): read only to warn that it is ignored (docs/dra.md).
    derived_attributes: list[dict[str, Any]] = []


class DeviceRequest(_Model):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(_Model):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(_Model):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(_Model):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(_Model):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(_Model):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, Quantity] = {}


class DeviceAllocationConfiguration(_Model):
    source: str = ""
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(_Model):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(_Model):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: datetime | None = None


class ResourceClaimConsumerReference(_Model):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class AllocatedDeviceStatus(_Model):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[dict[str, Any]] = []


class ResourceClaimStatus(_Model):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(_Model):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(_Model):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_Model):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


# --- DeviceTaintRule (v1 since v1.37) ---------------------------------------------------------------------------


class DeviceTaintSelector(_Model):
    """Which devices a rule taints: every criterion set must hold. An empty selector selects every device; a rule
    without one selects none."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    # Removed from the API in v1.35 (the eviction controller cannot evaluate CEL on allocated devices); kept only so
    # validation can reject it as kube-apiserver's strict decoding does, instead of tainting more than meant.
    selectors: list[DeviceSelector] | None = None


class DeviceTaintRuleSpec(_Model):
    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint = msgspec.field(default_factory=DeviceTaint)


class DeviceTaintRule(_Model):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "DeviceTaintRule"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceTaintRuleSpec = msgspec.field(default_factory=DeviceTaintRuleSpec)
