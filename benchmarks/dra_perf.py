"""Engine benchmarks shaped like kube-scheduler's scheduler_perf DRA tests (spec/dra.md §3.14). Engine only.

    python benchmarks/dra_perf.py                     # every shape
    python benchmarks/dra_perf.py ResourceClaimTemplate

Shapes:
  SchedulingWithResourceClaimTemplate 500 nodes: 10 devices per node (maxClaimsPerNode), 2,500 initial pods and
    2,500 measured pods, each with one claim from a template asking for one device (scheduler_perf's
    5000pods_500nodes; CI floor 40 pods/s, typically above 51).
  SteadyStateClusterResourceClaimTemplate empty/half/full 500 nodes: the cluster pre-filled to 0/50/99.8 %,
    then pods are created and deleted 10 at a time; throughput of the measured pods.
  Live 50 nodes: as serve sees SchedulingWithResourceClaimTemplate when pods are created while it runs: 250 initial
    pods, then 250 arriving one at a time, each claim created first and, once its pod is bound, coming back with its
    allocation and reservedFor (the watch echoing the scheduler's own status write).
  GPU 1,000 nodes x 8 GPUs: H100-like slices with a class selector, claims with two CEL selectors (product and
    memory quantity) and a 4-GPU matchAttribute on the NUMA node.
Prints pods/s of the measured phase, cycle latency percentiles and peak RSS.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import msgspec

from phalanx.api import dra
from phalanx.api.models import Container, Node, ObjectMeta, Pod, PodSpec, ResourceRequirements
from phalanx.controllers.resource_claim import generate_claims
from phalanx.scheduling.resource_claims import ResourceObjects
from phalanx.scheduling.scheduler import Scheduler
from scheduler_perf import Result as SchedulerPerfResult
from scheduler_perf import make_nodes

DRIVER = "test-driver.cdi.k8s.io"


class Result(SchedulerPerfResult):
    width = 52


def nodes(n: int) -> list[Node]:
    return make_nodes(n, allocatable={"cpu": "32", "memory": "256Gi", "pods": "110"})


def device_class(name: str = "test-class", expression: str = f'device.driver == "{DRIVER}"') -> dra.DeviceClass:
    selector = dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=expression))
    return dra.DeviceClass(metadata=ObjectMeta(name=name), spec=dra.DeviceClassSpec(selectors=[selector]))


def slices(
    n: int,
    per_node: int,
    driver: str = DRIVER,
    attrs: Callable[[int], dict[str, dra.DeviceAttribute]] | None = None,
    capacity: dict[str, dra.DeviceCapacity] | None = None,
) -> list[dra.ResourceSlice]:
    out = []
    for i in range(n):
        node = f"node-{i:05d}"
        devices = [
            dra.Device(name=f"device-{d}", attributes=attrs(d) if attrs else {}, capacity=capacity or {})
            for d in range(per_node)
        ]
        spec = dra.ResourceSliceSpec(
            driver=driver,
            node_name=node,
            pool=dra.ResourcePool(name=node, generation=1, resource_slice_count=1),
            devices=devices,
        )
        out.append(dra.ResourceSlice(metadata=ObjectMeta(name=f"{node}-{driver}"), spec=spec))
    return out


def template(
    name: str, requests: list[dra.DeviceRequest], constraints: list[dra.DeviceConstraint] | None = None
) -> dra.ResourceClaimTemplate:
    claim = dra.ResourceClaimSpec(devices=dra.DeviceClaim(requests=requests, constraints=constraints or []))
    return dra.ResourceClaimTemplate(
        metadata=ObjectMeta(name=name, namespace="default"), spec=dra.ResourceClaimTemplateSpec(spec=claim)
    )


def exact(name: str, cls: str, count: int = 1, selectors: list[str] = ()) -> dra.DeviceRequest:  # type: ignore[assignment]
    sels = [dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=e)) for e in selectors]
    return dra.DeviceRequest(
        name=name, exactly=dra.ExactDeviceRequest(device_class_name=cls, count=count, selectors=sels)
    )


def pod(name: str, template_name: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec=PodSpec(
            containers=[
                Container(name="c", resources=ResourceRequirements(requests={"cpu": "100m", "memory": "500Mi"}))
            ],
            resource_claims=[{"name": "resource", "resourceClaimTemplateName": template_name}],
        ),
    )


def _add(s: Scheduler, pods: list[Pod], templates: list[dra.ResourceClaimTemplate]) -> None:
    """What the resourceclaim controller does before the scheduler sees a pod: generate its claims."""
    generated = generate_claims(pods, [], templates, [])
    for claim in generated.claims:
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        s.add_resource_claim(claim, generated.generated_from[key])
    for p in pods:
        s.add_pod(p)


def claim_template(n_nodes: int = 500, per_node: int = 10, init: int = 2500, measured: int = 2500) -> Result:
    tmpl = template("test-claim-template", [exact("req-1", "test-class")])
    s = Scheduler()
    s.load(nodes(n_nodes), [], resources=ResourceObjects([device_class()], slices(n_nodes, per_node), [], [tmpl]))
    _add(s, [pod(f"init-{i}", tmpl.metadata.name) for i in range(init)], [tmpl])
    s.run()
    _add(s, [pod(f"measured-{i}", tmpl.metadata.name) for i in range(measured)], [tmpl])
    s.stats.cycle_seconds.clear()
    start = time.perf_counter()
    bound = s.run()
    name = f"SchedulingWithResourceClaimTemplate {n_nodes}n {init}+{measured}"
    return Result(name, bound, time.perf_counter() - start, s.stats.cycle_seconds)


def steady_state(fill: float, n_nodes: int = 500, per_node: int = 10, measured: int = 1000) -> Result:
    """Pre-filled to ``fill`` of the devices, then pods created and deleted 10 at a time."""
    tmpl = template("test-claim-template", [exact("req-1", "test-class")])
    s = Scheduler()
    s.load(nodes(n_nodes), [], resources=ResourceObjects([device_class()], slices(n_nodes, per_node), [], [tmpl]))
    prefill = int(n_nodes * per_node * fill)
    _add(s, [pod(f"fill-{i}", tmpl.metadata.name) for i in range(prefill)], [tmpl])
    s.run()
    s.stats.cycle_seconds.clear()
    start = time.perf_counter()
    bound = 0
    for batch in range(measured // 10):
        names = [f"steady-{batch}-{i}" for i in range(10)]
        _add(s, [pod(n, tmpl.metadata.name) for n in names], [tmpl])
        bound += s.run()
        for n in names:
            s.delete_pod(f"default/{n}")
    label = {0.0: "empty", 0.5: "half", 0.998: "full"}.get(fill, str(fill))
    return Result(
        f"SteadyStateClusterResourceClaimTemplate {label} {n_nodes}n",
        bound,
        time.perf_counter() - start,
        s.stats.cycle_seconds,
    )


def live(n_nodes: int = 50, per_node: int = 10, init: int = 250, measured: int = 250) -> Result:
    """Pods arrive one by one, and each bound pod's claim comes back as the API server has it (serve's watch)."""
    tmpl = template("test-claim-template", [exact("req-1", "test-class")])
    s = Scheduler()
    s.load(nodes(n_nodes), [], resources=ResourceObjects([device_class()], slices(n_nodes, per_node), [], [tmpl]))

    def arrive(name: str) -> int:
        p = pod(name, tmpl.metadata.name)
        generated = generate_claims([p], [], [tmpl], [])
        for claim in generated.claims:
            key = f"{claim.metadata.namespace}/{claim.metadata.name}"
            s.add_resource_claim(claim, generated.generated_from[key])
        s.add_pod(p)
        bound = s.run()
        for claim in generated.claims:
            key = f"{claim.metadata.namespace}/{claim.metadata.name}"
            record = s.claims.tracker.records[key]
            status = dra.ResourceClaimStatus(allocation=record.allocation, reserved_for=list(record.reserved_for))
            s.add_resource_claim(msgspec.structs.replace(claim, status=status), generated.generated_from[key])
        return bound

    for i in range(init):
        arrive(f"init-{i}")
    s.stats.cycle_seconds.clear()
    start = time.perf_counter()
    bound = sum(arrive(f"measured-{i}") for i in range(measured))
    name = f"Live ResourceClaimTemplate {n_nodes}n {init}+{measured}"
    return Result(name, bound, time.perf_counter() - start, s.stats.cycle_seconds)


def gpu_cluster(n_nodes: int = 1000, measured: int = 2000) -> Result:
    """1,000 nodes x 8 GPUs; claims: 4 GPUs on one NUMA node (matchAttribute) with product and memory selectors,
    and 1-GPU claims, alternating."""

    def attrs(d: int) -> dict[str, dra.DeviceAttribute]:
        return {
            "type": dra.DeviceAttribute(string="gpu"),
            "productName": dra.DeviceAttribute(string="NVIDIA H100 80GB HBM3"),
            "uuid": dra.DeviceAttribute(string=f"GPU-{d}"),
            "resource.kubernetes.io/numaNode": dra.DeviceAttribute(int_=0 if d < 4 else 1),
        }

    gpu = "gpu.nvidia.com"
    cls = device_class(gpu, f"device.driver == '{gpu}' && device.attributes['{gpu}'].type == 'gpu'")
    memory = {"memory": dra.DeviceCapacity(value="81559Mi")}
    selectors = [
        f'device.attributes["{gpu}"].productName.startsWith("NVIDIA H100")',
        f'device.capacity["{gpu}"].memory.compareTo(quantity("80G")) >= 0',
    ]
    four = template(
        "four-gpus-numa",
        [exact("gpus", gpu, 4, selectors)],
        [dra.DeviceConstraint(requests=["gpus"], match_attribute="resource.kubernetes.io/numaNode")],
    )
    one = template("one-gpu", [exact("gpu", gpu, 1, selectors)])
    s = Scheduler()
    s.load(
        nodes(n_nodes), [], resources=ResourceObjects([cls], slices(n_nodes, 8, gpu, attrs, memory), [], [four, one])
    )
    pods = [pod(f"p-{i}", (four if i % 2 else one).metadata.name) for i in range(measured)]
    _add(s, pods, [four, one])
    start = time.perf_counter()
    bound = s.run()
    return Result(
        f"GPU {n_nodes}n x 8 (selectors, matchAttribute)", bound, time.perf_counter() - start, s.stats.cycle_seconds
    )


SHAPES: dict[str, Callable[[], Result]] = {
    "ResourceClaimTemplate": claim_template,
    "SteadyStateEmpty": lambda: steady_state(0.0),
    "SteadyStateHalf": lambda: steady_state(0.5),
    "SteadyStateFull": lambda: steady_state(0.998),
    "Live": live,
    "GPUCluster": gpu_cluster,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", choices=[[], *SHAPES], help="shapes to run (default: all)")
    args = parser.parse_args(argv)
    print(
        f"{'shape':<52} {'pods':>8} {'sec':>8} {'pods/s':>10} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'RSS MiB':>9}"
    )
    for name in args.shapes or SHAPES:
        print(SHAPES[name]().row(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
