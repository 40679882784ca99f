"""Node failures, drains and pod failures in the simulator: invariants under random faults (jobs conserved,
failed ones included; no pod on a failed or drained node; allocation within the capacity of the nodes alive;
identical runs give identical reports), and scenarios: a failed node restarts a gang, a drain evicts and cordons,
pod failures exhaust backoffLimit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.api.errors import InputError
from phalanx.cli import cli
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.faults import NodeEvent, NodeFailures
from phalanx.sim.metrics import summary
from phalanx.sim.report import render_report
from phalanx.sim.runs import RunKey, SimulationRun
from phalanx.sim.scenario import Faults, Scenario, load_cluster
from phalanx.sim.simulator import POLICIES, SimulationResult, simulate
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, generate_jobs, load_workload, nodes_of

SMALL = ClusterSpec([Pool("gpu", 8, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8, "pods": 110}, 4, 2)])
FAULTS = [
    NodeEvent(600.0, "fail", pool="gpu", count=2, duration=1800.0),
    NodeEvent(900.0, "drain", node="gpu-0005", duration=900.0),
    NodeEvent(2000.0, "fail", node="gpu-0007"),
    NodeEvent(5000.0, "recover", node="gpu-0007"),
]


def _two_nodes() -> list:  # type: ignore[type-arg]
    return nodes_of(ClusterSpec([Pool("gpu", 2, {"cpu": "96", "memory": "64Gi", "nvidia.com/gpu": 8})]))


def _run_with_checks(policy: str, failures: NodeFailures | None = None) -> SimulationResult:
    """A faulty run whose every instant is checked: pods only on nodes alive and schedulable, none over capacity."""
    jobs = generate_jobs("philly", 60, seed=4, mean_gap=20, failure_probability=0.2)
    everyone = {n.metadata.name for n in nodes_of(SMALL)}
    steps: list[tuple[float, frozenset[str]]] = []

    def check(sched: Scheduler, now: float) -> None:
        t = sched.state.table
        rows = set(sched.state.placement.values())
        assert not any(t.unschedulable[row] for row in rows)  # no pod on a drained (cordoned) node
        assert (t.requested <= t.allocatable).all() and (t.pod_count <= t.max_pods).all()
        steps.append((now, frozenset(everyone - set(t.names))))

    r = simulate(nodes_of(SMALL), jobs, POLICIES[policy], None, FAULTS, failures, seed=9, on_step=check)
    # The engine's nodes are exactly those the node log says are up: a failed node holds no pod.
    down: set[str] = set()
    log = iter(r.node_log)
    pending = next(log, None)
    for now, gone in steps:
        while pending is not None and pending[0] <= now:
            _, action, node = pending
            if action == "fail":
                down.add(node)
            elif action == "recover":
                down.discard(node)
            pending = next(log, None)
        assert gone == down
    return r


@pytest.mark.parametrize("policy", ["pod-by-pod", "gang-tas-preemption"])
def test_invariants_under_faults(policy: str) -> None:
    r = _run_with_checks(policy, NodeFailures(mtbf_hours=10.0, repair_hours=0.5))
    s = summary(r)
    completed = {i for i, x in enumerate(r.runs) if x.end is not None}
    failed = {i for i, x in enumerate(r.runs) if x.failed is not None}
    waiting = {i for i, x in enumerate(r.runs) if x.start is None and x.end is None and x.failed is None}
    assert not completed & failed and not completed & waiting and not failed & waiting
    assert len(completed) + len(failed) + len(waiting) == len(r.runs) == 60  # conservation
    assert s["completed"] == len(completed) and s["failedJobs"] == len(failed)
    assert s["nodeFailures"] >= 3 and s["nodeDrains"] == 1
    assert s["restartsByCause"]["nodeFailure"] + s["restartsByCause"]["podFailure"] > 0
    assert all(0 <= x.allocated_gpus <= x.alive_gpus for x in r.samples)  # within the nodes alive
    assert min(x.alive_gpus for x in r.samples) < r.capacity_gpus
    for run in r.runs:
        if run.end is not None:
            assert run.start is not None and run.end == pytest.approx(run.start + run.job.duration)


def test_identical_runs_give_identical_reports_with_faults() -> None:
    jobs = generate_jobs("philly", 50, seed=5, mean_gap=20, failure_probability=0.3)
    failures = NodeFailures(mtbf_hours=5.0, repair_hours=1.0)
    a = simulate(nodes_of(SMALL), jobs, POLICIES["gang-tas"], None, FAULTS, failures, seed=3)
    b = simulate(nodes_of(SMALL), jobs, POLICIES["gang-tas"], None, FAULTS, failures, seed=3)
    assert a.node_log == b.node_log and summary(a) == summary(b)
    scenario = Scenario("t", nodes_of(SMALL), jobs, Faults(FAULTS, failures, 3))
    task = SimulationRun(RunKey("t", 3, "gang-tas"), scenario, POLICIES["gang-tas"])
    first, again = task.run(lambda _: None), task.run(lambda _: None)
    assert first.summary == summary(a) and first.timelines == again.timelines
    assert render_report([first]) == render_report([again])
    c = simulate(nodes_of(SMALL), jobs, POLICIES["gang-tas"], None, FAULTS, failures, seed=4)
    assert c.node_log != a.node_log  # the seed drives the generated failures


def test_node_failure_restarts_the_whole_gang() -> None:
    job = JobRecord("train", 0.0, 1000.0, 2, cpu="8", memory="8Gi", gpus=8)
    events = [NodeEvent(100.0, "fail", node="gpu-0000", duration=50.0)]
    r = simulate(_two_nodes(), [job], POLICIES["gang"], node_events=events)
    (run,) = r.runs
    # Both pods go (one failed, one deleted), the job waits for a second node, and starts over when it is back.
    assert run.restarts == 1 and run.restarts_by["nodeFailure"] == 1 and run.failed_pods == 1
    assert run.start == 150.0 and run.end == 1150.0 and run.failed is None
    assert run.lost_by["nodeFailure"] == 100.0 * 16 == run.lost_gpu_seconds
    assert r.node_log == [(100.0, "fail", "gpu-0000"), (150.0, "recover", "gpu-0000")]
    assert summary(r)["lostGpuHoursByCause"]["nodeFailure"] == round(1600 / 3600, 1)


def test_drain_evicts_cordons_and_uncordons() -> None:
    jobs = [JobRecord(n, 0.0, 1000.0, 1, cpu="8", memory="8Gi", gpus=8) for n in ("a", "b")]
    events = [NodeEvent(100.0, "drain", pool="gpu", count=1, duration=200.0)]
    seen: list[str] = []

    def on_gpu_0000(sched: Scheduler, now: float) -> None:
        row = sched.state.table.index["gpu-0000"]
        if 100.0 <= now < 300.0:
            assert sched.state.table.unschedulable[row] and not sched.state.node_pods[row]
        seen.extend(sched.state.node_pods[row])

    r = simulate(_two_nodes(), jobs, POLICIES["gang"], node_events=events, on_step=on_gpu_0000)
    evicted = [x for x in r.runs if x.restarts]
    assert len(evicted) == 1 and evicted[0].restarts_by["drain"] == 1 and evicted[0].failed_pods == 0
    assert evicted[0].start == 300.0 and evicted[0].end == 1300.0  # back on the node once it is uncordoned
    assert summary(r)["nodeDrains"] == 1 and summary(r)["failedJobs"] == 0
    assert seen  # pods were on the drained node before and after


def test_pod_failures_exhaust_backoff_limit() -> None:
    doomed = JobRecord("doomed", 0.0, 100.0, 2, cpu="8", memory="8Gi", gpus=8, failure_probability=1.0, backoff_limit=2)
    fine = JobRecord("fine", 0.0, 100.0, 1, cpu="8", memory="8Gi", gpus=8)
    r = simulate(_two_nodes(), [doomed, fine], POLICIES["gang"], seed=1)
    bad, good = r.runs
    # Each attempt fails: 3 failed pods exceed backoffLimit 2, after 2 restarts the Job fails.
    assert bad.failed_pods == 3 and bad.restarts == 2 and bad.failed is not None and bad.end is None
    assert bad.restarts_by["podFailure"] == 2 and bad.lost_by["podFailure"] > 0 and not bad.pods
    assert good.end is not None and good.failed is None
    s = summary(r)
    assert s["failedJobs"] == 1 and s["completed"] == 1 and s["neverStarted"] == 0
    never = JobRecord("never", 0.0, 100.0, 1, gpus=8, failure_probability=1.0, backoff_limit=0)
    (once,) = simulate(_two_nodes(), [never], POLICIES["gang"]).runs
    assert once.restarts == 0 and once.failed is not None


def test_trace_and_cluster_inputs(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.yaml"
    trace.write_text(
        "jobs:\n- {submit: 0, duration: 10, pods: 1, failureProbability: 0.5, backoffLimit: 1}\n"
        "nodeEvents:\n- {time: 5, node: gpu-0001, action: fail, duration: 60}\n"
    )
    jobs, events, _ = load_workload(str(trace))
    assert jobs[0].failure_probability == 0.5 and jobs[0].backoff_limit == 1
    assert events == [NodeEvent(5.0, "fail", "gpu-0001", duration=60.0)]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "pools: [{name: gpu, count: 2, allocatable: {nvidia.com/gpu: 8}}]\n"
        "nodeEvents: [{time: 1, pool: gpu, count: 2, action: drain}]\nfailures: {mtbfHours: 100}\n"
    )
    spec = load_cluster(str(cluster))
    assert isinstance(spec, ClusterSpec) and spec.failures == NodeFailures(100.0, 4.0)
    assert spec.node_events == [NodeEvent(1.0, "drain", pool="gpu", count=2)]
    bad = tmp_path / "bad.yaml"
    bad.write_text("jobs: []\nnodeEvents:\n- {time: 1, node: a, action: explode}\n- {time: 1, action: fail}\n")
    with pytest.raises(InputError) as err:
        load_workload(str(bad))
    assert err.value.lines == [
        f'{bad}:3: nodeEvents[0].action: Unsupported value: "explode": supported values: "fail", "drain", "recover"',
        f'{bad}:4: nodeEvents[1]: Invalid value: "": must specify one of: `node`, `pool`',
    ]
    with pytest.raises(InputError, match='node "nope" is not in the cluster'):
        simulate(_two_nodes(), [], POLICIES["gang"], node_events=[NodeEvent(1.0, "fail", "nope")])


def test_cli_generator_options(tmp_path: Path) -> None:
    args = ["simulate", "--jobs", "30", "--policy", "gang", "--report", str(tmp_path / "r.html"), "-o", "json"]
    faulty = [*args, "--node-mtbf-hours", "5", "--node-repair-hours", "1", "--pod-failure-probability", "0.5"]
    out = CliRunner().invoke(cli, faulty)
    assert out.exit_code == 0, out.output
    row = json.loads(out.output)["policies"][0]
    assert row["nodeFailures"] > 0 and row["restartsByCause"]["podFailure"] > 0
    page = (tmp_path / "r.html").read_text()
    assert "node failures / drains" in page and "nodeFailure: restarts (GPU-h lost)" in page
    bad = CliRunner().invoke(cli, [*args, "--node-mtbf-hours", "0"])
    assert bad.exit_code == 2 and "Invalid value for '--node-mtbf-hours': '0' is not > 0" in bad.output
