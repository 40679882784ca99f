"""The openb fragmentation experiment through the engine: each GPU a DRA device with consumable capacity, each GPU
pod a ResourceClaim, each placement a scheduling cycle of the same Scheduler `phalanx schedule` uses.

The cluster: one Node per openb node (its CPU and memory; nodes named ``<rank>-<name>`` with the seed's static
node priority, as the artifact does, and ties going to the first name), one ResourceSlice per node with a device
per GPU (attribute ``model``, capacity ``milli: 1000``, ``allowMultipleAllocations``) and one DeviceClass. A pod
asks for ``num_gpu`` devices with ``milli: gpu_milli`` each (``1000`` for whole GPUs), restricted to its
acceptable models by a CEL selector. The profile scores with GpuShare alone (the artifact enables exactly one
score plugin) and ranks exactly. DRA picks the GPU inside the node (first fit, in device order).
"""

from __future__ import annotations

import numpy as np

from phalanx.api import dra
from phalanx.api.errors import InputError
from phalanx.api.models import Container, Node, NodeStatus, ObjectMeta, Pod, PodSpec, ResourceRequirements
from phalanx.arrays import IntArray
from phalanx.scheduling.config import ProfileConfig, SchedulerConfig, default_profile
from phalanx.scheduling.plugins.gpu_share import NAME as GPU_SHARE
from phalanx.scheduling.plugins.gpu_share import GpuShareArgs
from phalanx.scheduling.plugins.gpu_share.policy import GPU_MILLI, POLICIES
from phalanx.scheduling.recorder import BaseRecorder
from phalanx.scheduling.resource_claims import ResourceObjects
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.fragmentation.experiment import Runner, RunResult, target_of
from phalanx.sim.fragmentation.openb import OpenbNodes, OpenbPods, arrival

__all__ = ["DEVICE_CLASS", "DRIVER", "ENGINE", "MODEL_LABEL", "cluster_objects", "run_engine"]

DRIVER = "gpu.openb.phalanx.dev"
DEVICE_CLASS = "gpu.openb.phalanx.dev"
MODEL_LABEL = "alibabacloud.com/gpu-card-model"
_NAMESPACE = "openb"


def cluster_objects(nodes: OpenbNodes, rank: IntArray) -> tuple[list[Node], ResourceObjects]:
    """Nodes named ``<rank>-<name>`` and their GPUs as shared DRA devices."""
    out_nodes: list[Node] = []
    slices: list[dra.ResourceSlice] = []
    for i, name in enumerate(nodes.names):
        node = f"{int(rank[i]):04d}-{name}"
        model = nodes.models[int(nodes.model[i])]
        out_nodes.append(
            Node(
                metadata=ObjectMeta(name=node, labels={MODEL_LABEL: model}),
                status=NodeStatus(
                    allocatable={"cpu": f"{int(nodes.cpu[i])}m", "memory": f"{int(nodes.mem[i])}Mi", "pods": "1001"}
                ),
            )
        )
        capacity = {"milli": dra.DeviceCapacity(value=GPU_MILLI)}
        devices = [
            dra.Device(
                name=f"gpu-{g}",
                attributes={"model": dra.DeviceAttribute(string=model)},
                capacity=capacity,
                allow_multiple_allocations=True,
            )
            for g in range(int(nodes.gpus[i]))
        ]
        if devices:
            pool = dra.ResourcePool(name=node, generation=1, resource_slice_count=1)
            spec = dra.ResourceSliceSpec(driver=DRIVER, node_name=node, pool=pool, devices=devices)
            slices.append(dra.ResourceSlice(metadata=ObjectMeta(name=f"{node}-gpus"), spec=spec))
    selector = dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=f'device.driver == "{DRIVER}"'))
    cls = dra.DeviceClass(metadata=ObjectMeta(name=DEVICE_CLASS), spec=dra.DeviceClassSpec(selectors=[selector]))
    return out_nodes, ResourceObjects([cls], slices)


def _claim(name: str, num_gpu: int, milli: int, models: frozenset[str] | None) -> dra.ResourceClaim:
    selectors = []
    if models is not None:
        allowed = ", ".join(f'"{m}"' for m in sorted(models))
        expression = f'device.attributes["{DRIVER}"].model in [{allowed}]'
        selectors.append(dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=expression)))
    exact = dra.ExactDeviceRequest(
        device_class_name=DEVICE_CLASS,
        count=num_gpu,
        selectors=selectors,
        capacity=dra.CapacityRequirements(requests={"milli": milli}),
    )
    spec = dra.ResourceClaimSpec(devices=dra.DeviceClaim(requests=[dra.DeviceRequest(name="gpu", exactly=exact)]))
    return dra.ResourceClaim(metadata=ObjectMeta(name=name, namespace=_NAMESPACE, uid=f"uid-{name}"), spec=spec)


def _pod(name: str, cpu: int, mem: int, claim: str | None) -> Pod:
    requests: dict[str, str | int | float] = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
    return Pod(
        metadata=ObjectMeta(name=name, namespace=_NAMESPACE, uid=f"uid-{name}"),
        spec=PodSpec(
            containers=[Container(name="main", resources=ResourceRequirements(requests=requests))],
            resource_claims=[{"name": "gpu", "resourceClaimName": claim}] if claim else [],
        ),
    )


def _config(nodes: OpenbNodes, pods: OpenbPods, policy: str, seed: int) -> SchedulerConfig:
    base = default_profile()
    args = GpuShareArgs(
        policy=policy,
        capacity="milli",
        model_attribute="model",
        models=list(nodes.models),
        target=target_of(pods, nodes),
        exact_ranking=True,
        seed=seed,
    )
    profile = ProfileConfig(
        scheduler_name=base.scheduler_name,
        filters=list(base.filters),
        scores=[(GPU_SHARE, 1)],
        args={GPU_SHARE: args},
        gang=False,
        preemption=False,  # every pod has priority 0: nothing to preempt
        static_ties=True,  # the artifact's static node priority: node names carry it
    )
    return SchedulerConfig([profile])


class _Bound(BaseRecorder):
    """The node each pod was bound to (a pod that fits nowhere is never bound)."""

    def __init__(self) -> None:
        self.nodes: dict[str, str] = {}

    def bound(self, key: str, node: str) -> None:
        self.nodes[key] = node


def run_engine(nodes: OpenbNodes, pods: OpenbPods, policy: str, seed: int, tune: float = 1.3) -> RunResult:
    """Place the seed's arrivals one by one through the engine (no queue, retry, preemption or departure: a pod
    that fits nowhere is deleted, as the artifact does). The fragmentation log is not kept (NaN)."""
    if policy not in POLICIES:
        raise InputError([f'unknown policy "{policy}" (known: {", ".join(POLICIES)})'])
    order = arrival(pods, nodes, seed, tune)
    node_objects, resources = cluster_objects(nodes, order.node_rank)
    bound = _Bound()
    sched = Scheduler(_config(nodes, pods, policy, seed), seed=seed, recorder=bound)
    sched.load(node_objects, [], resources=resources)
    row_of = {n.metadata.name: i for i, n in enumerate(node_objects)}
    events = len(order.order)
    arrived, used = np.zeros(events, dtype=np.int64), np.zeros(events, dtype=np.int64)
    node = np.full(events, -1, dtype=np.int64)
    total_arrived = total_used = 0
    for e, i in enumerate(order.order.tolist()):
        name = f"p-{e:06d}"
        num, milli = int(pods.num_gpu[i]), int(pods.gpu_milli[i])
        gpus = num > 0 and milli > 0
        if gpus:
            sched.add_resource_claim(_claim(name, num, milli, pods.spec[i]))
        sched.add_pod(_pod(name, int(pods.cpu[i]), int(pods.mem[i]), name if gpus else None))
        sched.run()
        total_arrived += num * milli
        placed = bound.nodes.get(f"{_NAMESPACE}/{name}")
        if placed is not None:
            total_used += num * milli
            node[e] = row_of[placed]
        else:
            sched.delete_pod(f"{_NAMESPACE}/{name}")
            if gpus:
                sched.delete_resource_claim(_NAMESPACE, name)
        arrived[e], used[e] = total_arrived, total_used
    return RunResult(policy, seed, nodes.gpu_capacity, arrived, used, np.full(events, np.nan), node)


ENGINE = Runner("engine", run_engine)
