"""A simulated cluster's GPUs as DRA devices: a pool's ``devices`` (or ``dra: true``) option, and the ResourceSlices
and DeviceClass a GPU driver would publish for it (the engine counts GPU devices per node: ``Scheduler.gpu_devices``).
Formats are documented in docs/simulate.md."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.api import dra
from phalanx.api.models import Node, ObjectMeta
from phalanx.api.quantity import QuantityError, parse_quantity

__all__ = [
    "GPU_DRIVER",
    "NUMA_NODE",
    "ClusterDevices",
    "PoolDevices",
    "device_classes",
    "parse_pool_devices",
    "resource_slices",
]

GPU_DRIVER = "gpu.nvidia.com"
NUMA_NODE = "resource.kubernetes.io/numaNode"
TOPOLOGY_ATTRIBUTES = ("phalanx.dev/rack", "phalanx.dev/block")  # node labels copied onto each device
_FIELDS = {"driver", "class", "productName", "memory", "numaNodes", "attributes", "extendedResourceName", "count"}


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


def parse_pool_devices(raw: dict[str, Any], where: str) -> PoolDevices | None:
    """The pool's ``devices`` mapping, or ``dra: true`` for the defaults; None when the pool has neither."""
    if "devices" not in raw:
        if raw.get("dra") not in (None, False, True):
            raise ValueError(f"{where}.dra: must be true or false")
        return PoolDevices() if raw.get("dra") else None
    spec = raw["devices"]
    if not isinstance(spec, dict):
        raise ValueError(f"{where}.devices: must be a mapping")
    unknown = set(spec) - _FIELDS
    if unknown:
        raise ValueError(f"{where}.devices: unknown field(s) {sorted(unknown)}")
    attributes = spec.get("attributes") or {}
    if not isinstance(attributes, dict) or not all(isinstance(v, str | int | bool) for v in attributes.values()):
        raise ValueError(f"{where}.devices.attributes: must map names to strings, integers or booleans")
    driver = str(spec.get("driver") or GPU_DRIVER)
    out = PoolDevices(
        driver=driver,
        device_class=str(spec.get("class") or driver),
        product=str(spec.get("productName") or PoolDevices.product),
        memory=str(spec.get("memory") or PoolDevices.memory),
        numa_nodes=int(spec.get("numaNodes", 2)),
        attributes={str(k): v for k, v in attributes.items()},
        extended_resource_name=str(spec.get("extendedResourceName", "nvidia.com/gpu") or ""),
        count=int(spec.get("count", 0)),
    )
    try:
        parse_quantity(out.memory)
    except QuantityError as exc:
        raise ValueError(f"{where}.devices.memory: {exc}") from exc
    if out.numa_nodes < 1 or out.count < 0:
        raise ValueError(f"{where}.devices: numaNodes must be at least 1 and count not negative")
    return out


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
    return f"device.driver == '{driver}' && device.attributes['{driver}'].type == 'gpu'"


def resource_slices(node: Node, devices: PoolDevices, count: int) -> dra.ResourceSlice:
    """The node-local slice the driver publishes for ``node``: one pool named after the node, ``count`` GPUs."""
    name = node.metadata.name
    per_numa = -(-count // devices.numa_nodes)  # GPUs fill NUMA node 0 first, as PCIe slots are numbered
    return dra.ResourceSlice(
        metadata=ObjectMeta(name=f"{name}-{devices.driver}"),
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
