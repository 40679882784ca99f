"""Tree jobs in simulate (issue 15 part 7): a trace job that is a CompositePodGroup with child PodGroups. The format
parses and refuses bad input by file, job and field; the shipped example runs, and its inference tree starts as one
unit, each group in one rack and the whole tree in one block."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.api.errors import InputError
from phalanx.cli import cli
from phalanx.scheduling.recorder import BaseRecorder
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.cluster_spec import BLOCK, RACK, nodes_of
from phalanx.sim.jobs import JobRecord
from phalanx.sim.scenario import load_cluster
from phalanx.sim.simulator import POLICIES, JobRun, simulate
from phalanx.sim.trace import load_workload

EXAMPLE = Path(__file__).parents[2] / "examples" / "simulate-composite"
TREE = """jobs:
- name: serving
  submit: 0
  duration: 100
  gpus: 4
  topology: required:phalanx.dev/block
  groups:
  - {name: prefill, pods: 2, minCount: 1, topology: "required:phalanx.dev/rack"}
  - {name: decode, pods: 3}
"""


def _load(tmp_path: Path, text: str) -> list[JobRecord]:
    path = tmp_path / "jobs.yaml"
    path.write_text(text)
    return load_workload(str(path))[0]


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(InputError) as err:
        _load(tmp_path, text)
    return [p.replace(str(tmp_path) + "/", "") for p in err.value.lines]


def test_a_tree_job_parses_into_its_groups(tmp_path: Path) -> None:
    [job] = _load(tmp_path, TREE)
    assert job.tree is not None
    assert job.pods == 5 and job.gpus == 4
    assert job.tree.topology == "phalanx.dev/block" and job.tree.needed == 2
    prefill, decode = job.tree.groups
    assert (prefill.name, prefill.pods, prefill.gang, prefill.topology) == ("prefill", 2, 1, "phalanx.dev/rack")
    assert (decode.pods, decode.gang, decode.topology, decode.gpus) == (3, 3, "", 4)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            ("  gpus: 4\n", "  gpus: 4\n  pods: 3\n"),
            "jobs.yaml:6: jobs[0].pods: Forbidden: not allowed in a job with `groups`",
        ),
        (
            ("name: decode, pods: 3", "name: decode, pods: 0"),
            "jobs.yaml:9: jobs[0].groups[1].pods: Invalid value: 0: must be greater than or equal to 1",
        ),
        (
            ("minCount: 1", "minCount: 3"),
            "jobs.yaml:8: jobs[0].groups[0].minCount: Invalid value: 3: must be less than or equal to 2",
        ),
        (
            ("required:phalanx.dev/block", "preferred:phalanx.dev/block"),
            'jobs.yaml:6: jobs[0].topology: Invalid value: "preferred:phalanx.dev/block": must be required:<label key>'
            " in a job with `groups` (v1.37 schedulingConstraints.topology)",
        ),
        (("name: decode", "name: prefill"), 'jobs.yaml:9: jobs[0].groups[1].name: Duplicate value: "prefill"'),
        (("pods: 3}", "pods: 3, gpu: 1}"), 'jobs.yaml:9: jobs[0].groups[1]: unknown field "gpu"'),
        (
            ("  groups:\n", "  minGroupCount: 3\n  groups:\n"),
            "jobs.yaml:7: jobs[0].minGroupCount: Invalid value: 3: must be less than or equal to 2",
        ),
    ],
)
def test_bad_tree_input_names_file_job_and_field(tmp_path: Path, edit: tuple[str, str], problem: str) -> None:
    assert TREE.count(edit[0]) == 1
    assert _problems(tmp_path, TREE.replace(*edit)) == [problem]


def test_groups_asking_different_gpus_per_pod_are_refused(tmp_path: Path) -> None:
    text = TREE.replace("pods: 3}", "pods: 3, gpus: 8}")
    problems = _problems(tmp_path, text)
    assert problems == [
        "jobs.yaml:9: jobs[0].groups[1].gpus: Invalid value: 8: every group of a tree asks the same gpus per pod"
    ]


class _Placements(BaseRecorder):
    """An observer: where each job's pods were at the instant it (last) started, and when each pod was first
    bound."""

    def __init__(self) -> None:
        self.started: dict[str, tuple[float, list[str]]] = {}
        self.bound_at: dict[str, float] = {}

    def __call__(self, now: float, sched: Scheduler, runs: Sequence[JobRun], waiting: AbstractSet[int]) -> None:
        for run in runs:
            for key in run.pods:
                if sched.node_of(key) is not None:
                    self.bound_at.setdefault(key, now)
            if run.start == now:
                self.started[run.job.name] = (now, [sched.node_of(k) or "" for k in run.pods])


def _run(policy: str, compat: str | None = None) -> tuple[dict[str, JobRun], dict[str, dict[str, str]], _Placements]:
    """The example under ``policy``: each job's run, the nodes' labels, and the placements seen."""
    nodes = nodes_of(load_cluster(str(EXAMPLE / "cluster.yaml")))
    jobs, _, _ = load_workload(str(EXAMPLE / "jobs.yaml"))
    seen = _Placements()
    result = simulate(nodes, jobs, dataclasses.replace(POLICIES[policy], compat=compat), observer=seen)
    labels = {n.metadata.name: dict(n.metadata.labels) for n in nodes}
    return {r.job.name: r for r in result.runs}, labels, seen


@pytest.mark.parametrize("policy", ["gang-tas", "gang-tas-preemption"])
def test_the_inference_tree_starts_as_one_unit_in_one_block_each_group_in_one_rack(policy: str) -> None:
    runs, labels, seen = _run(policy)
    serving = runs["serving"]
    assert serving.end is not None and serving.restarts == 0
    at, nodes = seen.started["serving"]
    # Every pod of the tree was first bound at the instant the job started: none earlier (no partial tree).
    assert {seen.bound_at[k] for k in serving.pods} == {at}
    assert len({labels[n][BLOCK] for n in nodes}) == 1
    racks = [{labels[n][RACK] for n in nodes[2 * g : 2 * g + 2]} for g in range(6)]  # 2 pods a group, trace order
    assert all(len(r) == 1 for r in racks), racks


def test_training_and_the_tree_compete_for_the_blocks() -> None:
    # Without preemption the tree waits for a whole block's worth of racks: train-b ends at 3600, the urgent
    # training job (priority 1000) takes part of that block, and the tree starts only when it ends at 5400.
    runs, _, seen = _run("gang-tas")
    assert seen.started["train-urgent"][0] == 3600.0
    assert seen.started["serving"][0] == 5400.0
    # With preemption the tree (priority 100) evicts a training job, whole, and runs from its arrival.
    runs, _, seen = _run("gang-tas-preemption")
    assert seen.started["serving"][0] == 60.0
    assert sum(r.restarts_by["preemption"] for r in runs.values()) == 2
    assert runs["serving"].restarts == 0


def test_a_preempted_tree_restarts_as_a_whole(tmp_path: Path) -> None:
    # The tree runs first; a higher-priority job that needs its block evicts it: every pod goes, and it starts
    # over under new names once the block is free again.
    text = (EXAMPLE / "jobs.yaml").read_text()
    jobs = [line for line in text.splitlines() if "train-a" not in line and "train-b" not in line]
    path = tmp_path / "jobs.yaml"
    path.write_text("\n".join(jobs).replace("priority: 100", "priority: 0").replace("submit: 60", "submit: 0"))
    nodes = nodes_of(load_cluster(str(EXAMPLE / "cluster.yaml")))
    trace, _, _ = load_workload(str(path))
    blocker = dataclasses.replace(trace[1], name="block-hog", submit=10, pods=8, priority=2000)
    seen = _Placements()
    result = simulate(nodes, [*trace, blocker], POLICIES["gang-tas-preemption"], observer=seen)
    serving = result.runs[0]
    assert serving.restarts_by["preemption"] >= 1 and serving.end is not None
    at, placed = seen.started["serving"]
    assert {seen.bound_at[k] for k in serving.pods} == {at}
    assert all(n for n in placed)


def test_the_example_runs_through_the_cli(tmp_path: Path) -> None:
    argv = ["simulate", "--cluster", str(EXAMPLE / "cluster.yaml"), "--workload", str(EXAMPLE / "jobs.yaml")]
    argv += [
        "--policy",
        "gang-tas",
        "--policy",
        "gang-tas-preemption",
        "-o",
        "json",
        "--report",
        str(tmp_path / "r.html"),
    ]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    rows = {row["policy"]: row for row in json.loads(result.stdout)["policies"]}
    assert rows["gang-tas"]["completed"] == 4 and rows["gang-tas"]["restarts"] == 0
    assert rows["gang-tas-preemption"]["completed"] == 4 and rows["gang-tas-preemption"]["restarts"] == 2
