"""Simulation invariants: jobs are conserved, none runs before it arrives, allocation never exceeds capacity,
identical runs give identical reports, and pod-by-pod scheduling really deadlocks where gangs do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.cli import cli
from phalanx.sim.metrics import summary
from phalanx.sim.report import render_report
from phalanx.sim.runs import RunKey, SimulationRun
from phalanx.sim.scenario import Scenario
from phalanx.sim.simulator import POLICIES, simulate
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, generate_jobs, load_trace, nodes_of

SMALL = ClusterSpec([Pool("gpu", 8, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8, "pods": 110}, 4, 2)])


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_invariants(policy: str) -> None:
    jobs = generate_jobs("philly", 120, seed=3, mean_gap=20)
    r = simulate(nodes_of(SMALL), jobs, POLICIES[policy])
    assert len(r.runs) == len(jobs)  # conservation: every job is accounted for
    for run in r.runs:
        if run.start is not None:
            assert run.start >= run.job.submit
        if run.end is not None:
            assert run.start is not None and run.end == pytest.approx(run.start + run.job.duration)
    assert all(0 <= s.allocated_gpus <= r.capacity_gpus for s in r.samples)
    assert [s.time for s in r.samples] == sorted(s.time for s in r.samples)


def test_identical_runs_give_identical_reports() -> None:
    jobs = generate_jobs("philly", 80, seed=5, mean_gap=20)
    task = SimulationRun(RunKey("t", 5, "gang-tas"), Scenario("t", nodes_of(SMALL), jobs), POLICIES["gang-tas"])
    a, b = task.run(lambda _: None), task.run(lambda _: None)
    assert a.summary == b.summary == summary(simulate(nodes_of(SMALL), jobs, POLICIES["gang-tas"]))
    assert a.timelines == b.timelines
    assert render_report([a]) == render_report([b])


def two_big_gangs() -> list[JobRecord]:
    """Two 3-node jobs arrive together on a 4-node cluster: together they need 6 nodes."""
    return [
        JobRecord("a", 0.0, 100.0, 3, cpu="8", memory="8Gi", gpus=8),
        JobRecord("b", 0.0, 100.0, 3, cpu="8", memory="8Gi", gpus=8),
    ]


def test_pod_by_pod_deadlocks_where_gang_does_not() -> None:
    nodes = nodes_of(ClusterSpec([Pool("gpu", 4, {"cpu": "96", "memory": "64Gi", "nvidia.com/gpu": 8, "pods": 110})]))
    stuck = summary(simulate(nodes, two_big_gangs(), POLICIES["pod-by-pod"]))
    # Pods interleave by creation order: each job grabs two nodes and waits forever for a third.
    assert stuck["completed"] == 0 and stuck["neverStarted"] == 2
    gang = summary(simulate(nodes, two_big_gangs(), POLICIES["gang"]))
    assert gang["completed"] == 2 and gang["neverStarted"] == 0


def test_trace_formats(tmp_path: Path) -> None:
    csv_path = tmp_path / "jobs.csv"
    csv_path.write_text(
        "name,submit,duration,pods,gpus,minCount,priority,topology\n"
        "a,0,60,2,8,2,0,required:phalanx.dev/rack\nb,5,30,1,1,,,\n"
    )
    yaml_path = tmp_path / "jobs.yaml"
    yaml_path.write_text("jobs:\n- {name: a, submit: 0, duration: 60, pods: 2, gpus: 8}\n")
    jobs = load_trace(str(csv_path))
    assert [(j.name, j.pods, j.gang, j.topology) for j in jobs] == [
        ("a", 2, 2, "required:phalanx.dev/rack"),
        ("b", 1, 1, ""),
    ]
    assert load_trace(str(yaml_path))[0].gpus == 8


def test_bad_trace_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "jobs.csv"
    bad.write_text("name,submit,duration,pods,colour\na,0,1,1,red\n")
    result = CliRunner().invoke(cli, ["simulate", "--workload", str(bad), "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 2
    assert result.stderr == f'{bad}:1: unknown column "colour"\n'


def test_cli_writes_report_metrics_and_timeseries(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.yaml"
    trace.write_text(
        "- {name: a, submit: 0, duration: 60, pods: 2, gpus: 8}\n- {name: b, submit: 1, duration: 30, pods: 1, gpus: 1}\n"
    )
    report, metrics, series = tmp_path / "r.html", tmp_path / "m.json", tmp_path / "t.csv"
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--workload",
            str(trace),
            "--policy",
            "gang",
            "--report",
            str(report),
            "--metrics",
            str(metrics),
            "--timeseries",
            str(series),
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [p["policy"] for p in out["policies"]] == ["gang"] and out["policies"][0]["completed"] == 2
    assert (out["policies"][0]["trace"], out["policies"][0]["seed"], out["failedRuns"]) == ("jobs.yaml", 1, [])
    assert json.loads(metrics.read_text()) == out
    assert series.read_text().splitlines()[0] == (
        "policy,time,allocated_gpus,running_jobs,queued_jobs,held_gpus,fragmented_gpus,trace,seed"
    )
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>") and '<script type="application/json" id="report-data">' in page
    assert "<script src" not in page and "<link" not in page  # everything inline: nothing to fetch


def test_preempted_jobs_start_over_and_finish() -> None:
    nodes = nodes_of(ClusterSpec([Pool("gpu", 2, {"cpu": "96", "memory": "64Gi", "nvidia.com/gpu": 8})]))
    jobs = [
        JobRecord("low", 0.0, 1000.0, 2, cpu="8", memory="8Gi", gpus=8, priority=0),
        JobRecord("high", 100.0, 50.0, 2, cpu="8", memory="8Gi", gpus=8, priority=100),
    ]
    r = simulate(nodes, jobs, POLICIES["gang-tas-preemption"])
    low, high = r.runs
    assert high.start == 100.0 and high.end == 150.0  # the high-priority job preempts at once
    assert low.restarts == 1 and low.start == 150.0 and low.end == 1150.0  # then the victim starts over
    assert low.lost_gpu_seconds == 100.0 * 16
    without = simulate(nodes, jobs, POLICIES["gang-tas"])
    assert without.runs[1].start == 1000.0 and without.runs[0].restarts == 0


def test_a_user_supplied_configuration_is_a_policy(tmp_path: Path) -> None:
    """--policy NAME=FILE: jobs get PodGroups as under `gang`, and the engine runs the KubeSchedulerConfiguration."""
    from phalanx.api.errors import InputError
    from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit
    from phalanx.scheduling.scheduler import Scheduler
    from phalanx.sim.simulator import policy_of

    config = tmp_path / "binpack.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args: {scoringStrategy: {type: MostAllocated}}\n"
    )
    policy = policy_of(f"binpack={config}")
    assert policy.name == "binpack" and policy.gang and policy_of(str(config)).name == "binpack"
    strategies: set[str] = set()

    def seen(sched: Scheduler, now: float) -> None:
        for plugin, _ in sched.default_profile.scores:
            if isinstance(plugin, NodeResourcesFit):
                strategies.add(plugin.args.strategy)

    nodes = nodes_of(ClusterSpec([Pool("gpu", 4, {"cpu": "96", "memory": "64Gi", "nvidia.com/gpu": 8, "pods": 110})]))
    done = summary(simulate(nodes, two_big_gangs(), policy, on_step=seen))
    assert done["completed"] == 2 and strategies == {"MostAllocated"}
    with pytest.raises(InputError, match="unknown policy"):
        policy_of("greedy")
    with pytest.raises(InputError):
        policy_of(f"x={tmp_path / 'missing.yaml'}")
    out = CliRunner().invoke(
        cli, ["simulate", "--policy", "gang", "--policy", f"binpack={config}", "--jobs", "20", "-o", "json",
              "--report", str(tmp_path / "r.html")], catch_exceptions=False,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert [p["policy"] for p in json.loads(out.stdout)["policies"]] == ["gang", "binpack"]
