"""v1.37 DRA fields phalanx accepts but does not act on, each reported once per object as a warning.

They are alpha in v1.37.2 and off by default, so a default cluster's kube-apiserver drops them on write
(``DropDisabledFields``) and kube-scheduler never sees them: ignoring them is v1.37's default behaviour. Some
would change allocation with their gate on (noted below); phalanx then differs from such a cluster, which is why
the warning names the gate. docs/dra.md lists the same fields.
"""

from __future__ import annotations

from collections.abc import Iterator

from phalanx.api import dra
from phalanx.api.errors import FieldError, Problem
from phalanx.api.loader import Inventory, problem_at

__all__ = ["IGNORED_GATES", "ignored_field_warnings"]

# field -> (its feature gate, whether turning the gate on would change what the allocator decides).
IGNORED_GATES: dict[str, tuple[str, bool]] = {
    "nodeAllocatableResources": ("DRANodeAllocatableResources", True),  # node resources a device takes
    "compatibilityGroups": ("DRADeviceCompatibilityGroups", True),  # which devices may be allocated together
    "derivedAttributes": ("DRADerivedAttributes", True),  # attributes the request's selectors could read
    "partitionTypeAttribute": ("DRAPartitionableDevicesType", False),  # for drivers and kubelet (validated)
    "skipNodeOperations": ("DRAOptionalNodeOperations", False),  # kubelet's calls to the driver (validated)
}


def _warning(field: str, path: str) -> FieldError:
    gate, changes = IGNORED_GATES[field]
    effect = "with it on, allocation could differ" if changes else "it does not change allocation"
    return FieldError(path, f"ignored: feature gate {gate} is alpha and off by default in v1.37 ({effect})")


def _slice_fields(spec: dra.ResourceSliceSpec) -> Iterator[FieldError]:
    if spec.partition_type_attribute is not None:
        yield _warning("partitionTypeAttribute", "spec.partitionTypeAttribute")
    if spec.skip_node_operations:
        yield _warning("skipNodeOperations", "spec.skipNodeOperations")
    for i, device in enumerate(spec.devices):
        if device.node_allocatable_resources:
            yield _warning("nodeAllocatableResources", f"spec.devices[{i}].nodeAllocatableResources")
        for j, consumption in enumerate(device.consumes_counters):
            if consumption.compatibility_groups:
                path = f"spec.devices[{i}].consumesCounters[{j}].compatibilityGroups"
                yield _warning("compatibilityGroups", path)


def _claim_fields(prefix: str, spec: dra.ResourceClaimSpec) -> Iterator[FieldError]:
    for i, request in enumerate(spec.devices.requests):
        at = f"{prefix}.devices.requests[{i}]"
        if request.exactly is not None and request.exactly.derived_attributes:
            yield _warning("derivedAttributes", f"{at}.exactly.derivedAttributes")
        for j, sub in enumerate(request.first_available):
            if sub.derived_attributes:
                yield _warning("derivedAttributes", f"{at}.firstAvailable[{j}].derivedAttributes")


def ignored_field_warnings(inv: Inventory) -> list[Problem]:
    """One warning per ignored field set, located like a validation error (``FILE:LINE: KIND NS/NAME: PATH``)."""
    out: list[Problem] = []
    for s in inv.resource_slices:
        out += [problem_at(inv, s, w) for w in _slice_fields(s.spec)]
    for c in inv.resource_claims:
        out += [problem_at(inv, c, w) for w in _claim_fields("spec", c.spec)]
    for t in inv.resource_claim_templates:
        out += [problem_at(inv, t, w) for w in _claim_fields("spec.spec", t.spec.spec)]
    return out
