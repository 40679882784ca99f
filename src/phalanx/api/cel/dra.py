"""The DRA device-selector environment (k8s.io/dynamic-resource-allocation/cel ``newCompiler``).

One variable, ``device`` (``kubernetes.DRADevice``): ``driver``, ``attributes`` and ``capacity`` (maps of domain to
maps of id), and ``allowMultipleAllocations`` when DRAConsumableCapacity is on. Attribute values are of the
unknown type ``any`` (``dyn`` with DRAListTypeAttributes, whose ``includes`` function exists only then). The size
limits below are what the cost estimator assumes for a device: they decide "too complex" at validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from phalanx.api.cel import types as t
from phalanx.api.cel.call_cost import kubernetes_estimate, size_estimate
from phalanx.api.cel.cost import AstNode, CallEstimate, Coster, Estimate, SizeEstimator, scale
from phalanx.api.cel.environment import Environment, kubernetes_environment
from phalanx.api.cel.lib_kubernetes import QUANTITY, includes

__all__ = ["DEVICE_TYPE", "Features", "dra_environment"]

DEVICE_TYPE = t.struct("kubernetes.DRADevice")
MAX_DOMAIN, MAX_ID, MAX_DRIVER = 63, 32, 63  # DeviceMaxDomainLength, DeviceMaxIDLength, DriverNameMaxLength
MAX_ENTRIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_VALUE, MAX_LIST_VALUES = 64, 48  # DeviceAttributeMaxValueLength, ResourceSliceMaxAttributeValuesPerDevice


@dataclass(frozen=True, slots=True)
class Features:
    """The feature gates the DRA CEL environment depends on (v1.36 defaults)."""

    consumable_capacity: bool = True
    list_type_attributes: bool = False


def _attribute_size(features: Features) -> int:
    return max(MAX_VALUE, MAX_LIST_VALUES) if features.list_type_attributes else MAX_VALUE


def _device_sizes(features: Features) -> SizeEstimator:
    """DRA's sizeEstimator: walks the declared ``device`` type along a node's field path."""
    attribute = _attribute_size(features)
    # (max elements, key node, element node, fields); nodes are tuples of the same shape.
    leaf_attr = (attribute, None, None, None)
    leaf_quantity = (0, None, None, None)
    domain, ident = (MAX_DOMAIN, None, None, None), (MAX_ID, None, None, None)
    inner_attrs = (MAX_ENTRIES, ident, leaf_attr, None)
    inner_caps = (MAX_ENTRIES, ident, leaf_quantity, None)
    device = (
        0,
        None,
        None,
        {
            "driver": (MAX_DRIVER, None, None, None),
            "allowMultipleAllocations": (1, None, None, None),
            "attributes": (MAX_ENTRIES, domain, inner_attrs, None),
            "capacity": (MAX_ENTRIES, domain, inner_caps, None),
        },
    )

    def sizes(node: AstNode) -> Estimate | None:
        if not node.path or node.path[0] != "device":
            return None
        current: tuple = device  # type: ignore[type-arg]
        for name in node.path[1:]:
            if name in ("@items", "@values"):
                current = current[2]
            elif name == "@keys":
                current = current[1]
            elif current[3] is not None and name in current[3]:
                current = current[3][name]
            elif current[2] is leaf_attr:
                current = leaf_attr
            else:
                return None
            if current is None:
                return None
        return (0, current[0])

    return sizes


def _calls(
    c: Coster, function: str, overload_id: str, target: AstNode | None, args: list[AstNode]
) -> CallEstimate | None:
    if function == "includes" and overload_id == "dra_includes_dyn_dyn" and target is not None:
        return CallEstimate((0, MAX_LIST_VALUES))
    return kubernetes_estimate(c, function, overload_id, target, args)


@cache
def dra_environment(features: Features, stored: bool) -> Environment:
    """The environment kube-apiserver validates with (``stored=False``: NewExpressions, honouring the feature gates)
    or kube-scheduler evaluates with (``stored=True``: StoredExpressions, everything this version knows)."""
    value = t.DYN if features.list_type_attributes else t.ANY
    fields = {
        "driver": t.STRING,
        "attributes": t.map_of(t.STRING, t.map_of(t.STRING, value)),
        "capacity": t.map_of(t.STRING, t.map_of(t.STRING, QUANTITY)),
    }
    if features.consumable_capacity or stored:
        fields["allowMultipleAllocations"] = t.BOOL
    extra = [includes()] if features.list_type_attributes or stored else []
    return kubernetes_environment(
        {"device": DEVICE_TYPE}, extra, fields={DEVICE_TYPE.name: fields}, sizes=_device_sizes(features), calls=_calls
    )


__all__ += ["scale", "size_estimate"]
