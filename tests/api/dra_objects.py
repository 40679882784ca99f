"""DRA objects for the validation tests: the spec's H100 ResourceSlice (dra.md §5.2) and claims (§5.4)."""

from __future__ import annotations

from typing import Any

H100 = "NVIDIA H100 80GB HBM3"


def h100_device(i: int) -> dict[str, Any]:
    """One GPU of an HGX H100 node, as the NVIDIA driver publishes it."""
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-5d2c{i:04x}-0000-0000-0000-000000000000"},
            "productName": {"string": H100},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "driverVersion": {"version": "580.95.5"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "addressingMode": {"string": "HMM"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x18 + i * 0x10:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{0x15 + i * 0x10:02x}"},
            "resource.kubernetes.io/numaNode": {"int": i // 4},
        },
        "capacity": {"memory": {"value": "81559Mi"}},
    }


H100_SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "00000-gpu.nvidia.com-node-h100-01-x7k2q"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "node-h100-01",
        "pool": {"name": "node-h100-01", "generation": 1, "resourceSliceCount": 1},
        "devices": [h100_device(i) for i in range(8)],
    },
}

GPU_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {
        "selectors": [
            {
                "cel": {
                    "expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
                }
            }
        ],
        "extendedResourceName": "nvidia.com/gpu",
    },
}


def cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def claim(devices: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"devices": devices},
    }


# §5.4 (a): a whole 8-GPU H100 node, as a template.
EIGHT_H100: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "eight-h100", "namespace": "ml"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "count": 8,
                            "selectors": [
                                cel('device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")')
                            ],
                        },
                    }
                ]
            }
        }
    },
}

# §5.4 (b) to (f).
PREFER_H200 = claim(
    {
        "requests": [
            {
                "name": "gpus",
                "firstAvailable": [
                    {
                        "name": "h200",
                        "deviceClassName": "gpu.nvidia.com",
                        "count": 8,
                        "selectors": [cel('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H200"')],
                    },
                    {
                        "name": "h100",
                        "deviceClassName": "gpu.nvidia.com",
                        "count": 8,
                        "selectors": [cel('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0')],
                    },
                ],
            }
        ],
        "config": [
            {
                "requests": ["gpus/h200"],
                "opaque": {
                    "driver": "gpu.nvidia.com",
                    "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"},
                },
            }
        ],
    },
    "prefer-h200",
)
NUMA_GPUS_AND_NIC = claim(
    {
        "requests": [
            {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}},
            {"name": "nic", "exactly": {"deviceClassName": "rdma.example.com"}},
        ],
        "constraints": [{"matchAttribute": "resource.kubernetes.io/numaNode", "requests": ["gpus", "nic"]}],
    },
    "numa",
)
PARTITION_OF_4 = claim(
    {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}],
        "constraints": [{"matchAttribute": "gpu.nvidia.com/partition4"}],
    },
    "partition",
)
TWO_VFS = claim(
    {
        "requests": [{"name": "vf", "exactly": {"deviceClassName": "vf.nic.example.com", "count": 2}}],
        "constraints": [{"distinctAttribute": "nic.example.com/pfName", "requests": ["vf"]}],
    },
    "vfs",
)
SHARED_VGPU = claim(
    {
        "requests": [
            {
                "name": "vgpu",
                "exactly": {"deviceClassName": "vgpu.example.com", "capacity": {"requests": {"memory": "10Gi"}}},
            }
        ]
    },
    "vgpu",
)
SPEC_CLAIMS = [PREFER_H200, NUMA_GPUS_AND_NIC, PARTITION_OF_4, TWO_VFS, SHARED_VGPU]
