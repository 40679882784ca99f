"""DRA devices in the simulator: jobs whose pods claim GPUs through ResourceClaimTemplates run and finish on a
cluster whose GPUs are ResourceSlice devices; no device is allocated twice at any instant, every claim is gone
once the jobs are; identical runs give identical reports; a gang of DRA pods cannot deadlock under `gang` but
does under `pod-by-pod`; product selectors and sameNumaNode constrain placement; trace fields and errors."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.api.errors import InputError
from phalanx.cli import cli
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.device_claims import GpuClaim
from phalanx.sim.devices import NUMA_NODE, ClusterDevices
from phalanx.sim.faults import NodeEvent, NodeFailures
from phalanx.sim.metrics import summary
from phalanx.sim.report import render_report
from phalanx.sim.runs import RunKey, SimulationRun
from phalanx.sim.scenario import KubeCluster, Scenario, load_cluster, scenario_from
from phalanx.sim.simulator import POLICIES, SimulationResult, simulate
from phalanx.sim.workload import ClusterSpec, JobRecord, devices_of, generate_jobs, load_trace, nodes_of

ROOT = Path(__file__).resolve().parents[2]
ALLOC = {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8}
CLAIM = GpuClaim()


def dra_cluster(count: int = 4, **pool: object) -> ClusterSpec:
    raw = {"name": "gpu", "count": count, "allocatable": ALLOC, "nodesPerRack": 2, "racksPerBlock": 2, "dra": True}
    return ClusterSpec.parse({"pools": [{**raw, **pool}]}, "test")


def job(name: str, submit: float, duration: float, pods: int, gpus: int, claim: GpuClaim | None = CLAIM) -> JobRecord:
    return JobRecord(name, submit, duration, pods, cpu="4", memory="16Gi", gpus=gpus, claim=claim)


class Checks:
    """Invariants checked after every instant; ``devices`` remembers who held what for later assertions."""

    def __init__(self) -> None:
        self.instants = 0
        self.devices: dict[str, set[str]] = {}  # claim name -> "pool/device" it was ever allocated

    def __call__(self, sched: Scheduler, now: float) -> None:
        self.instants += 1
        held: Counter[tuple[str, str, str]] = Counter()
        for record in sched.claims.tracker.records.values():
            if record.allocation is None:
                continue
            for r in record.allocation.devices.results:
                held[(r.driver, r.pool, r.device)] += 1
                self.devices.setdefault(record.claim.metadata.name, set()).add(f"{r.pool}/{r.device}")
                # A node-local GPU is used on its own node: the claim's pods are placed there.
                for ref in record.reserved_for:
                    row = sched.state.placement.get(f"sim/{ref.name}")
                    assert row is None or sched.state.table.names[row] == r.pool
        twice = [device for device, n in held.items() if n > 1]
        assert not twice, f"devices allocated twice at {now}: {twice}"


def run(
    spec: ClusterSpec,
    jobs: list[JobRecord],
    policy: str,
    node_events: Sequence[NodeEvent] = (),
    failures: NodeFailures | None = None,
) -> tuple[SimulationResult, Scheduler]:
    checks = Checks()
    last: list[Scheduler] = []

    def step(sched: Scheduler, now: float) -> None:
        checks(sched, now)
        last[:] = [sched]

    nodes = nodes_of(spec)
    devices = devices_of(spec, nodes)
    r = simulate(nodes, jobs, POLICIES[policy], None, node_events, failures, 5, on_step=step, devices=devices)
    assert checks.instants == len(r.samples)
    return r, last[0]


def assert_all_released(r: SimulationResult, sched: Scheduler) -> None:
    assert all(x.end is not None or x.failed is not None for x in r.runs)
    assert sched.claims.tracker.records == {}  # no claim left behind, allocated or not
    assert r.samples[-1].allocated_gpus == 0


def small_jobs(count: int, seed: int, dra: bool = True) -> list[JobRecord]:
    """A Philly-shaped trace without the gangs larger than the 32-GPU test cluster."""
    jobs = generate_jobs("philly", count, seed=seed, mean_gap=20, dra=dra)
    return [j for j in jobs if j.gpus * j.pods <= 32]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_dra_jobs_run_and_finish(policy: str) -> None:
    jobs = small_jobs(40, seed=3)
    assert all(j.claim is not None for j in jobs if j.gpus) and len(jobs) > 30
    assert any(j.claim is not None and j.claim.match_attribute for j in jobs)  # sameNumaNode pods too
    r, sched = run(dra_cluster(), jobs, policy)
    s = summary(r)
    assert r.capacity_gpus == 32 and s["gpuAllocationPercent"] > 0
    assert all(0 <= x.allocated_gpus <= 32 for x in r.samples)
    assert_all_released(r, sched)


def test_devices_are_counted_as_gpus_like_the_extended_resource() -> None:
    """Jobs asking for nvidia.com/gpu on a DRA-only pool are served by the DeviceClass's extendedResourceName, and
    the metrics match the same run on device-plugin nodes exactly."""
    jobs = small_jobs(40, seed=5, dra=False)
    plugin = ClusterSpec.parse({"pools": [{"name": "gpu", "count": 4, "allocatable": ALLOC}]}, "t")
    a = summary(simulate(nodes_of(plugin), jobs, POLICIES["gang"]))
    b, sched = run(dra_cluster(), jobs, "gang")
    assert summary(b) == a
    assert_all_released(b, sched)


def test_identical_runs_give_identical_reports() -> None:
    jobs = small_jobs(30, seed=7)
    a, _ = run(dra_cluster(), jobs, "gang-tas")
    b, _ = run(dra_cluster(), jobs, "gang-tas")
    assert summary(a) == summary(b)
    nodes = nodes_of(dra_cluster())
    scenario = Scenario("t", nodes, jobs, devices=devices_of(dra_cluster(), nodes))
    task = SimulationRun(RunKey("t", 0, "gang-tas"), scenario, POLICIES["gang-tas"])
    first, again = task.run(lambda _: None), task.run(lambda _: None)
    assert first.summary == summary(a)
    assert render_report([first]) == render_report([again])


def test_dra_gang_deadlocks_pod_by_pod_but_not_under_gang() -> None:
    """Two 3-node jobs whose pods each claim 8 devices arrive together on 4 nodes."""
    jobs = [job("a", 0.0, 100.0, 3, 8), job("b", 0.0, 100.0, 3, 8)]
    stuck, _ = run(dra_cluster(), jobs, "pod-by-pod")
    assert summary(stuck)["completed"] == 0 and summary(stuck)["neverStarted"] == 2
    assert stuck.samples[-1].held_gpus == stuck.samples[-1].allocated_gpus == 32  # each holds 2 nodes' devices
    gang, sched = run(dra_cluster(), jobs, "gang")
    assert summary(gang)["completed"] == 2
    assert_all_released(gang, sched)


def test_dra_preemption_frees_the_victims_devices() -> None:
    """A high-priority DRA gang preempts a low-priority one holding every device; the victim starts over later
    under new claims, and nothing is left allocated."""
    low = JobRecord("low", 0.0, 1000.0, 2, cpu="8", memory="8Gi", gpus=8, priority=0, claim=CLAIM)
    high = JobRecord("high", 100.0, 50.0, 2, cpu="8", memory="8Gi", gpus=8, priority=100, claim=CLAIM)
    r, sched = run(dra_cluster(2), [low, high], "gang-tas-preemption")
    a, b = r.runs
    assert b.start == 100.0 and b.end == 150.0
    assert a.restarts == 1 and a.start == 150.0 and a.end == 1150.0 and a.lost_gpu_seconds == 100.0 * 16
    assert_all_released(r, sched)


def test_same_numa_node_waits_for_a_whole_numa_node() -> None:
    """One node, 8 GPUs on two NUMA nodes. After a (3 GPUs, NUMA 0) and b (2 on one NUMA node), 3 GPUs are free
    but no NUMA node has 3: c waits for a; without the constraint it starts at once."""
    spec = dra_cluster(1)
    numa = GpuClaim(match_attribute=NUMA_NODE)
    a, b = job("a", 0.0, 100.0, 1, 3), job("b", 0.0, 500.0, 1, 2, numa)
    r, sched = run(spec, [a, b, job("c", 1.0, 10.0, 1, 3, numa)], "gang")
    starts = {x.job.name: x.start for x in r.runs}
    assert starts["c"] == 100.0
    assert_all_released(r, sched)
    free, _ = run(spec, [a, b, job("c", 1.0, 10.0, 1, 3)], "gang")
    assert {x.job.name: x.start for x in free.runs}["c"] == 1.0


def test_same_numa_node_devices_share_the_numa_node() -> None:
    checks = Checks()
    spec = dra_cluster(1)
    nodes = nodes_of(spec)
    jobs = [job("a", 0.0, 100.0, 1, 3), job("b", 0.0, 100.0, 1, 2, GpuClaim(match_attribute=NUMA_NODE))]
    simulate(nodes, jobs, POLICIES["gang"], on_step=checks, devices=devices_of(spec, nodes))
    (b_claim,) = [name for name in checks.devices if name.startswith("b-0-")]
    assert checks.devices[b_claim] == {"gpu-0000/gpu-4", "gpu-0000/gpu-5"}  # NUMA 1: NUMA 0 has one GPU left


def test_product_selector_picks_the_pool() -> None:
    spec = ClusterSpec.parse(
        {
            "pools": [
                {"name": "h100", "count": 2, "allocatable": ALLOC, "dra": True},
                {"name": "b200", "count": 1, "allocatable": ALLOC, "devices": {"productName": "NVIDIA B200"}},
            ]
        },
        "t",
    )
    b200 = GpuClaim(product="NVIDIA B200")
    missing = GpuClaim(product="NVIDIA A100")
    jobs = [job("x", 0.0, 50.0, 1, 8, b200), job("y", 0.0, 50.0, 1, 8, b200), job("z", 0.0, 50.0, 1, 1, missing)]
    r, _ = run(spec, jobs, "gang")
    starts = {x.job.name: x.start for x in r.runs}
    assert {starts["x"], starts["y"]} == {0.0, 50.0}  # one B200 node: one after the other
    assert starts["z"] is None  # no A100 anywhere


def test_cel_selector_on_device_memory() -> None:
    """A selector on the devices' memory capacity: 100Gi or more exists only on the B200 pool."""
    spec = ClusterSpec.parse(
        {
            "pools": [
                {"name": "h100", "count": 1, "allocatable": ALLOC, "dra": True},
                {"name": "b200", "count": 1, "allocatable": ALLOC, "devices": {"memory": "180Gi"}},
            ]
        },
        "t",
    )
    big = GpuClaim(selector="device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) >= 0")
    checks = Checks()
    nodes = nodes_of(spec)
    r = simulate(
        nodes, [job("a", 0.0, 50.0, 1, 2, big)], POLICIES["gang"], on_step=checks, devices=devices_of(spec, nodes)
    )
    assert r.runs[0].end == 50.0
    assert {d.split("/")[0] for held in checks.devices.values() for d in held} == {"b200-0000"}


def test_node_failure_on_a_dra_cluster_restarts_and_releases() -> None:
    jobs = [job("a", 0.0, 300.0, 2, 8), job("b", 0.0, 300.0, 1, 4)]
    events = [NodeEvent(100.0, "fail", node="gpu-0000", duration=50.0)]
    r, sched = run(dra_cluster(), jobs, "gang", node_events=events)
    assert sum(x.restarts for x in r.runs) >= 1 and summary(r)["completed"] == 2
    assert_all_released(r, sched)


def test_pending_pods_claims_are_deleted_with_them() -> None:
    """pod-by-pod: a runs on gpu-0001, b's first pod on gpu-0000, its second waits. gpu-0000 fails, b starts over:
    the waiting pod is deleted before it ever held its claim, and its claim must go with it."""
    jobs = [job("a", 0.0, 100.0, 1, 8), job("b", 1.0, 50.0, 2, 8)]
    events = [NodeEvent(10.0, "fail", node="gpu-0000", duration=5.0)]
    r, sched = run(dra_cluster(2), jobs, "pod-by-pod", node_events=events)
    assert r.runs[1].restarts == 1 and r.runs[1].start == 100.0
    assert_all_released(r, sched)


@pytest.mark.parametrize("policy", ["pod-by-pod", "gang-tas-preemption"])
def test_random_node_and_pod_failures_leave_no_claim(policy: str) -> None:
    """Failed nodes come and go (devices reindexed each time), attempts fail and restart: at every instant no
    device is held twice, and once every job has completed or failed no claim is left."""
    jobs = [dataclasses.replace(j, failure_probability=0.3) for j in small_jobs(30, seed=11)]
    r, sched = run(dra_cluster(), jobs, policy, failures=NodeFailures(2.0, 0.5))
    assert summary(r)["nodeFailures"] > 0 and summary(r)["restarts"] > 0
    assert_all_released(r, sched)


def test_trace_fields(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "name,submit,duration,pods,gpus,dra,gpuProduct,sameNumaNode,matchAttribute,gpuSelector\n"
        "a,0,60,1,2,,,true,,\n"
        "b,0,60,1,8,,NVIDIA B200,,,\n"
        "c,0,60,1,1,true,,,phalanx.dev/rack,device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0\n"
        "d,0,60,1,1,,,,,\n"
    )
    a, b, c, d = load_trace(str(trace))
    assert a.claim == GpuClaim(match_attribute=NUMA_NODE)
    assert b.claim == GpuClaim(product="NVIDIA B200")
    assert c.claim is not None and c.claim.match_attribute == "phalanx.dev/rack" and "40Gi" in c.claim.selector
    assert d.claim is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,0,60,1,0,true,", "jobs.csv:2: gpus: Invalid value: 0: must be greater than 0 for a DRA claim"),
        ("a,0,60,1,1,,numaNode", 'jobs.csv:2: matchAttribute: Invalid value: "numaNode": a fully qualified name'),
        ("a,0,60,1,1,maybe,", 'jobs.csv:2: dra: Invalid value: "maybe": must be true or false'),
        ("a,0,60,1,1,false,resource.kubernetes.io/numaNode", 'jobs.csv:2: dra: Invalid value: "false": must not be'),
    ],
)
def test_bad_trace_fields_are_input_errors(tmp_path: Path, row: str, message: str) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(f"name,submit,duration,pods,gpus,dra,matchAttribute\n{row}\n")
    with pytest.raises(InputError, match=message):
        load_trace(str(trace))


def test_bad_pool_devices_are_input_errors() -> None:
    with pytest.raises(InputError, match=r'^c: pools\[0\].devices: unknown field "colour"$'):
        ClusterSpec.parse({"pools": [{"name": "g", "count": 1, "allocatable": ALLOC, "devices": {"colour": 1}}]}, "c")
    with pytest.raises(InputError, match=r"pools\[0\].devices.count: Required value: no GPUs to publish"):
        ClusterSpec.parse({"pools": [{"name": "g", "count": 1, "allocatable": {"cpu": "8"}, "dra": True}]}, "c")
    with pytest.raises(InputError, match=r"pools\[0\].devices.memory"):
        ClusterSpec.parse({"pools": [{"name": "g", "count": 1, "allocatable": ALLOC, "devices": {"memory": "x"}}]}, "c")


def test_published_slices_look_like_the_driver() -> None:
    spec = dra_cluster(2)
    nodes = nodes_of(spec)
    devices = devices_of(spec, nodes)
    assert devices is not None and "nvidia.com/gpu" not in nodes[0].status.allocatable
    assert [c.spec.extended_resource_name for c in devices.classes] == ["nvidia.com/gpu"]
    first = devices.slices[0].spec
    assert first.node_name == "gpu-0000" and first.pool.name == "gpu-0000" and len(first.devices) == 8
    attrs = first.devices[7].attributes
    assert attrs[NUMA_NODE].int_ == 1 and attrs["phalanx.dev/rack"].string == "gpu-rack-000"
    assert (
        attrs["productName"].string == "NVIDIA H100 80GB HBM3" and first.devices[7].capacity["memory"].value == "80Gi"
    )


def test_kubernetes_yaml_cluster_with_slices() -> None:
    """examples/dra-h100 (Nodes, DeviceClass, ResourceSlices): an H100 job lands on the H100 nodes only."""
    cluster = load_cluster(str(ROOT / "examples" / "dra-h100"))
    assert isinstance(cluster, KubeCluster) and isinstance(cluster.devices, ClusterDevices)
    h100 = GpuClaim(product="NVIDIA H100 80GB HBM3")
    jobs = [job("a", 0.0, 50.0, 2, 8, h100), job("b", 0.0, 50.0, 1, 1, h100)]
    checks = Checks()
    r = simulate(cluster.nodes, jobs, POLICIES["gang"], on_step=checks, devices=cluster.devices)
    assert [x.start for x in r.runs] == [0.0, 50.0]  # two H100 nodes: a takes both
    assert {d.split("/")[0] for held in checks.devices.values() for d in held} == {"h100-a", "h100-b"}


def test_generated_workload_on_a_dra_cluster_claims_devices(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("pools: [{name: gpu, count: 2, allocatable: {cpu: '96', nvidia.com/gpu: 8}, dra: true}]\n")
    scenario = scenario_from(str(cluster), None, "philly", 10, 1)
    assert scenario.devices is not None and all(j.claim is not None for j in scenario.jobs if j.gpus)


def test_cli_runs_the_example() -> None:
    example = ROOT / "examples" / "simulate-dra"
    args = ["simulate", "--cluster", str(example / "cluster.yaml"), "--workload", str(example / "jobs.csv")]
    result = CliRunner().invoke(cli, [*args, "--report", "/dev/null", "-o", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    policies = {p["policy"]: p for p in json.loads(result.stdout)["policies"]}
    assert set(policies) == set(POLICIES)
    assert policies["gang"]["completed"] == policies["gang"]["jobs"]
    assert policies["pod-by-pod"]["completed"] < policies["gang"]["completed"]


def test_cli_takes_a_directory_of_kubernetes_objects(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.yaml"
    trace.write_text("- {name: a, submit: 0, duration: 60, pods: 2, gpus: 8, gpuProduct: NVIDIA H100 80GB HBM3}\n")
    args = ["simulate", "--cluster", str(ROOT / "examples" / "dra-h100"), "--workload", str(trace), "--policy", "gang"]
    result = CliRunner().invoke(cli, [*args, "--report", str(tmp_path / "r.html"), "-o", "json"])
    assert result.exit_code == 0, result.output
    (gang,) = json.loads(result.stdout)["policies"]
    assert gang["completed"] == 1 and gang["gpuAllocationPercent"] > 0
