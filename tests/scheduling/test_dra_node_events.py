"""DRA and node events: the device index follows node rows and labels, and new slices make pending pods
schedulable, without losing the claims already allocated. Claim events: an allocation made or dropped by someone
else is seen by the next Filter (its node's row is recomputed), and the scheduler's own allocation coming back
through the watch changes nothing."""

from __future__ import annotations

import msgspec

from phalanx.api import dra
from phalanx.api.models import (
    Container,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodSpec,
)
from phalanx.controllers.resource_claim import generate_claims
from phalanx.scheduling.resource_claims import ResourceObjects
from phalanx.scheduling.scheduler import Scheduler

DRIVER = "gpu.example.com"
CLASS = dra.DeviceClass(
    metadata=ObjectMeta(name=DRIVER),
    spec=dra.DeviceClassSpec(
        selectors=[dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=f'device.driver == "{DRIVER}"'))]
    ),
)
TEMPLATE = dra.ResourceClaimTemplate(
    metadata=ObjectMeta(name="one-gpu", namespace="default"),
    spec=dra.ResourceClaimTemplateSpec(
        spec=dra.ResourceClaimSpec(
            devices=dra.DeviceClaim(
                requests=[dra.DeviceRequest(name="gpu", exactly=dra.ExactDeviceRequest(device_class_name=DRIVER))]
            )
        )
    ),
)


def node(name: str) -> Node:
    return Node(
        metadata=ObjectMeta(name=name), status=NodeStatus(allocatable={"cpu": "8", "memory": "8Gi", "pods": "10"})
    )


def gpu_slice(node_name: str) -> dra.ResourceSlice:
    spec = dra.ResourceSliceSpec(
        driver=DRIVER,
        node_name=node_name,
        pool=dra.ResourcePool(name=node_name, generation=1, resource_slice_count=1),
        devices=[dra.Device(name="gpu-0")],
    )
    return dra.ResourceSlice(metadata=ObjectMeta(name=f"{node_name}-gpus"), spec=spec)


def add_gpu_pod(s: Scheduler, name: str) -> None:
    pod = Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec=PodSpec(
            containers=[Container(name="c")], resource_claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        ),
    )
    out = generate_claims([pod], [], [TEMPLATE], [])
    for claim in out.claims:
        s.add_resource_claim(claim, "one-gpu")
    s.add_pod(pod)


def engine(names: list[str]) -> Scheduler:
    s = Scheduler()
    slices = [gpu_slice(n) for n in names]
    s.load([node(n) for n in names], [], resources=ResourceObjects([CLASS], slices, [], [TEMPLATE]))
    return s


def devices_in_use(s: Scheduler) -> list[str]:
    return sorted(
        f"{r.pool}/{r.device}"
        for rec in s.claims.tracker.records.values()
        if rec.allocation is not None
        for r in rec.allocation.devices.results
    )


def test_a_node_added_between_others_keeps_allocations_on_their_devices() -> None:
    s = engine(["a", "c"])
    add_gpu_pod(s, "p1")
    add_gpu_pod(s, "p2")
    s.run()
    assert devices_in_use(s) == ["a/gpu-0", "c/gpu-0"]
    # "b" sorts between "a" and "c": every row after it moves. The claims still hold a's and c's GPUs.
    s.add_node(node("b"))
    s.set_devices([CLASS], [gpu_slice(n) for n in ("a", "b", "c")])
    add_gpu_pod(s, "p3")
    s.run()
    assert s.recorder.outcomes["default/p3"].node == "b"
    assert devices_in_use(s) == ["a/gpu-0", "b/gpu-0", "c/gpu-0"]


def test_new_slices_make_a_pending_pod_schedulable() -> None:
    s = engine(["a"])
    add_gpu_pod(s, "p1")
    add_gpu_pod(s, "p2")
    s.run()
    assert s.recorder.outcomes["default/p2"].phase == "Unschedulable"
    s.add_node(node("b"))
    s.run()
    assert s.recorder.outcomes["default/p2"].phase == "Unschedulable"  # a node without devices does not help
    s.set_devices([CLASS], [gpu_slice("a"), gpu_slice("b")])
    s.run()
    assert s.recorder.outcomes["default/p2"].node == "b"


def test_deleting_a_node_releases_its_pods_claims() -> None:
    s = engine(["a", "b"])
    add_gpu_pod(s, "p1")
    add_gpu_pod(s, "p2")
    s.run()
    gone_node = s.recorder.outcomes["default/p1"].node
    assert gone_node is not None
    s.delete_node(gone_node)
    assert len(devices_in_use(s)) == 1  # only the other pod's claim is still allocated
    assert "default/p1" not in s.claims.held


def test_rows_shifted_by_a_new_node_still_map_devices_to_their_nodes() -> None:
    s = engine(["b", "c"])
    add_gpu_pod(s, "p1")
    s.run()
    taken = s.recorder.outcomes["default/p1"].node
    free = ({"b", "c"} - {taken}).pop()
    s.add_node(node("a"))  # no devices; every row moves down by one
    add_gpu_pod(s, "p2")
    s.run()
    assert s.recorder.outcomes["default/p2"].node == free


def claim_on(node_name: str, name: str = "elsewhere") -> dra.ResourceClaim:
    """A claim another scheduler allocated: node ``node_name``'s only GPU, node-local like the allocator's own."""
    result = dra.DeviceRequestAllocationResult(request="gpu", driver=DRIVER, pool=node_name, device="gpu-0")
    term = NodeSelectorTerm(
        match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])]
    )
    allocation = dra.AllocationResult(
        devices=dra.DeviceAllocationResult(results=[result]), node_selector=NodeSelector(node_selector_terms=[term])
    )
    return dra.ResourceClaim(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=TEMPLATE.spec.spec,
        status=dra.ResourceClaimStatus(allocation=allocation),
    )


def test_an_allocation_made_elsewhere_takes_its_device_from_the_next_filter() -> None:
    s = engine(["a", "b"])
    add_gpu_pod(s, "p1")
    s.run()  # Filter has now judged both nodes for this claim spec
    free = ({"a", "b"} - {s.recorder.outcomes["default/p1"].node}).pop()
    s.add_resource_claim(claim_on(free))
    add_gpu_pod(s, "p2")
    s.run()
    outcome = s.recorder.outcomes["default/p2"]
    assert (outcome.phase, outcome.reason) == ("Unschedulable", "Unschedulable")  # Filter knew: no failed Reserve
    assert outcome.message.startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    assert devices_in_use(s) == ["a/gpu-0", "b/gpu-0"]


def test_an_allocation_dropped_elsewhere_frees_its_device() -> None:
    s = engine(["a"])
    s.add_resource_claim(claim_on("a"))
    add_gpu_pod(s, "p1")
    s.run()
    assert s.recorder.outcomes["default/p1"].phase == "Unschedulable"
    s.add_resource_claim(msgspec.structs.replace(claim_on("a"), status=dra.ResourceClaimStatus()))
    s.run()
    assert s.recorder.outcomes["default/p1"].node == "a"


def test_the_schedulers_own_allocation_coming_back_keeps_the_device_in_use() -> None:
    s = engine(["a", "b"])
    add_gpu_pod(s, "p1")
    s.run()
    (key,) = s.claims.tracker.records
    record = s.claims.tracker.records[key]
    echoed = dra.ResourceClaimStatus(allocation=record.allocation, reserved_for=list(record.reserved_for))
    s.add_resource_claim(msgspec.structs.replace(record.claim, status=echoed), "one-gpu")
    assert devices_in_use(s) == [f"{s.recorder.outcomes['default/p1'].node}/gpu-0"]
    add_gpu_pod(s, "p2")
    add_gpu_pod(s, "p3")
    s.run()
    placed = {s.recorder.outcomes[f"default/{p}"].node for p in ("p1", "p2")}
    assert placed == {"a", "b"}
    assert s.recorder.outcomes["default/p3"].phase == "Unschedulable"
    s.delete_pod("default/p1")
    assert len(devices_in_use(s)) == 1
