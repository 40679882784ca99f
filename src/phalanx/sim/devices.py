"""A simulated cluster's GPUs as DRA devices: a pool's ``devices`` (or ``dra: true``) option, and the ResourceSlices
and DeviceClass a GPU driver would publish for it (the engine counts GPU devices per node: ``Scheduler.gpu_devices``).
Formats are documented in docs/simulate.md."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.api import dra
from phalanx.api.loader import json_type
from phalanx.api.models import Node, ObjectMeta
from phalanx.api.quantity import QuantityError, parse_quantity
from phalanx.sim.inputs import Fields

__all__ = [
    "GPU_DRIVER",
    "MAX_DEVICES",
    "NUMA_NODE",
    "ClusterDevices",
    "PoolDevices",
    "cel_string",
    "device_classes",
    "parse_pool_devices",
    "resource_slices",
]

GPU_DRIVER = "gpu.nvidia.com"
NUMA_NODE = "resource.kubernetes.io/numaNode"
TOPOLOGY_ATTRIBUTES = ("phalanx.dev/rack", "phalanx.dev/block")  # node labels copied onto each device
_FIELDS = {"driver", "class", "productName", "memory", "numaNodes", "attributes", "extendedResourceName", "count"}
MAX_DEVICES = 128  # devices in one ResourceSlice (kube-apiserver's limit); the pool's slice holds a node's GPUs


@dataclass(frozen=True)
class PoolDevices:
    """How a pool publishes its GPUs: ``count`` devices per node (0: the pool's ``nvidia.com/gpu``), of
    ``driver``, selected by DeviceClass ``device_class``, spread evenly over ``numa_nodes`` NUMA nodes."""

    driver: str = GPU_DRIVER
    device_class: str = GPU_DRIVER
    product: str = "NVIDIA H100 80GB HBM3"
    memory: str = "80Gi"
    numa_nodes: int = 2
    attributes: Mapping[str, str | int | bool] = field(default_factory=dict)
    # The DeviceClass serves pods asking for this extended resource (DRAExtendedResource), so jobs written for the
    # device plugin still run on a DRA-only pool; "" turns it off.
    extended_resource_name: str = "nvidia.com/gpu"
    count: int = 0


@dataclass
class ClusterDevices:
    """The DRA objects of a simulated cluster, and which drivers' devices count as GPUs in the metrics."""

    classes: list[dra.DeviceClass] = field(default_factory=list)
    slices: list[dra.ResourceSlice] = field(default_factory=list)
    gpu_drivers: frozenset[str] = frozenset({GPU_DRIVER})


def parse_pool_devices(raw: Mapping[str, Any], fields: Fields, at: str) -> PoolDevices | None:
    """The pool's ``devices`` mapping, or ``dra: true`` for the defaults; None when the pool has neither. Names,
    attributes and quantities are checked on the objects they become (``cluster_spec``)."""
    if raw.get("dra") is not None and not isinstance(raw["dra"], bool):  # 1 == True in Python, not in YAML
        fields.invalid(f"{at}.dra", raw["dra"], "must be true or false")
    if "devices" not in raw:
        return PoolDevices() if raw.get("dra") is True else None
    spec = fields.mapping(raw["devices"], f"{at}.devices", _FIELDS)
    at = f"{at}.devices"
    attributes = {} if spec.get("attributes") is None else spec["attributes"]
    if not isinstance(attributes, dict):
        fields.invalid(f"{at}.attributes", json_type(attributes), "must be an object")
        attributes = {}
    for key, v in attributes.items():
        if not isinstance(v, str | int | bool) or not isinstance(key, str):
            fields.invalid(f"{at}.attributes[{key}]", json_type(v), "must be a string, an integer or a boolean")
    driver = fields.text(spec.get("driver"), f"{at}.driver", GPU_DRIVER)
    memory = fields.text(spec.get("memory"), f"{at}.memory", PoolDevices.memory)
    _check_memory(memory, fields, f"{at}.memory")
    return PoolDevices(
        driver=driver,
        device_class=fields.text(spec.get("class"), f"{at}.class", driver),
        product=fields.text(spec.get("productName"), f"{at}.productName", PoolDevices.product),
        memory=memory,
        numa_nodes=fields.integer(spec.get("numaNodes"), f"{at}.numaNodes", 2, low=1, high=MAX_DEVICES),
        attributes={str(k): v for k, v in attributes.items() if isinstance(v, str | int | bool)},
        extended_resource_name=_extended_resource(spec, fields, at),
        count=fields.integer(spec.get("count"), f"{at}.count", 0, high=MAX_DEVICES),
    )


def _check_memory(memory: str, fields: Fields, at: str) -> None:
    """A GPU's memory: kube-apiserver takes any quantity as a device capacity, a GPU has none below zero."""
    try:
        negative = parse_quantity(memory) < 0
    except QuantityError:
        return  # reported with kube-apiserver's message when the slice is validated
    if negative:
        fields.invalid(at, memory, "must be greater than or equal to 0")


def _extended_resource(spec: Mapping[str, Any], fields: Fields, at: str) -> str:
    if "extendedResourceName" in spec and spec["extendedResourceName"] in (None, ""):
        return ""  # written empty: no extended resource
    return fields.text(spec.get("extendedResourceName"), f"{at}.extendedResourceName", "nvidia.com/gpu")


def cel_string(text: str) -> str:
    """``text`` as a CEL string literal: quotes, backslashes and control characters escaped, so a user's string
    (a driver, a product name) is compared as data and can never close the literal and add an expression."""
    out = []
    for c in text:
        if c in ("\\", "'"):
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return "'" + "".join(out) + "'"


def device_classes(pools: Iterable[PoolDevices]) -> list[dra.DeviceClass]:
    """One DeviceClass per class name, selecting the whole GPUs of its driver, as the NVIDIA driver's chart
    installs it. Two pools naming one class must agree on its driver and extended resource."""
    by_name: dict[str, PoolDevices] = {}
    for p in pools:
        seen = by_name.setdefault(p.device_class, p)
        if (seen.driver, seen.extended_resource_name) != (p.driver, p.extended_resource_name):
            raise ValueError(f'DeviceClass "{p.device_class}": pools disagree on its driver or extendedResourceName')
    return [
        dra.DeviceClass(
            metadata=ObjectMeta(name=name),
            spec=dra.DeviceClassSpec(
                selectors=[dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=_class_expression(p.driver)))],
                extended_resource_name=p.extended_resource_name or None,
            ),
        )
        for name, p in sorted(by_name.items())
    ]


def _class_expression(driver: str) -> str:
    quoted = cel_string(driver)
    return f"device.driver == {quoted} && device.attributes[{quoted}].type == 'gpu'"


def resource_slices(node: Node, devices: PoolDevices, count: int) -> dra.ResourceSlice:
    """The node-local slice the driver publishes for ``node``: one pool named after the node, ``count`` GPUs."""
    name = node.metadata.name
    per_numa = -(-count // devices.numa_nodes)  # GPUs fill NUMA node 0 first, as PCIe slots are numbered
    return dra.ResourceSlice(
        metadata=ObjectMeta(name=f"{name}-{devices.driver.lower()}"),  # drivers are compared lower-cased
        spec=dra.ResourceSliceSpec(
            driver=devices.driver,
            node_name=name,
            pool=dra.ResourcePool(name=name, generation=1, resource_slice_count=1),
            devices=[_gpu(node, devices, i, i // per_numa) for i in range(count)],
        ),
    )


def _gpu(node: Node, devices: PoolDevices, index: int, numa: int) -> dra.Device:
    name = node.metadata.name
    uuid = hashlib.blake2b(f"{name}/{index}".encode(), digest_size=8).hexdigest()
    attributes = {
        "type": dra.DeviceAttribute(string="gpu"),
        "uuid": dra.DeviceAttribute(string=f"GPU-{uuid}"),
        "productName": dra.DeviceAttribute(string=devices.product),
        NUMA_NODE: dra.DeviceAttribute(int_=numa),
        "resource.kubernetes.io/pcieRoot": dra.DeviceAttribute(string=f"pci0000:{numa:02x}"),
    }
    for label in TOPOLOGY_ATTRIBUTES:
        if label in node.metadata.labels:
            attributes[label] = dra.DeviceAttribute(string=node.metadata.labels[label])
    attributes.update((k, _attribute(v)) for k, v in devices.attributes.items())
    return dra.Device(
        name=f"gpu-{index}",
        attributes=attributes,
        capacity={"memory": dra.DeviceCapacity(value=devices.memory)},
    )


def _attribute(value: str | int | bool) -> dra.DeviceAttribute:
    if isinstance(value, bool):
        return dra.DeviceAttribute(bool_=value)
    if isinstance(value, int):
        return dra.DeviceAttribute(int_=value)
    return dra.DeviceAttribute(string=value)
