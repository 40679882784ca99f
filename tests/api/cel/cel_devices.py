"""Realistic devices for CEL tests: an HGX H100 GPU as the NVIDIA DRA driver publishes it (dra.md §5.2)."""

from __future__ import annotations

from phalanx.api.cel import DeviceView, device_view
from phalanx.api.dra import DeviceAttribute, DeviceCapacity


def h100(numa_node: int = 0, memory: str = "81559Mi", list_attributes: bool = False) -> DeviceView:
    """With DRAListTypeAttributes off (the v1.36 default) the list attribute makes every selector fail, as in
    kube-scheduler; ``partitions`` is only added when the gate is on."""
    attributes = {
        "type": DeviceAttribute(string="gpu"),
        "uuid": DeviceAttribute(string="GPU-5d2c0a41-8c1e-4a8e-9f63-2b7c1d0e9a11"),
        "productName": DeviceAttribute(string="NVIDIA H100 80GB HBM3"),
        "brand": DeviceAttribute(string="Nvidia"),
        "architecture": DeviceAttribute(string="Hopper"),
        "cudaComputeCapability": DeviceAttribute(version="9.0.0"),
        "driverVersion": DeviceAttribute(version="580.95.5"),
        "cudaDriverVersion": DeviceAttribute(version="13.0.0"),
        "resource.kubernetes.io/pciBusID": DeviceAttribute(string="0000:18:00.0"),
        "resource.kubernetes.io/pcieRoot": DeviceAttribute(string="pci0000:15"),
        "resource.kubernetes.io/numaNode": DeviceAttribute(int_=numa_node),
    }
    if list_attributes:
        attributes["partitions"] = DeviceAttribute(ints=[1, 2, 4, 8])
    return device_view("gpu.nvidia.com", attributes, {"memory": DeviceCapacity(value=memory)}, False, list_attributes)
