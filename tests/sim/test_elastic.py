"""Elastic gangs in the simulator: a trace's ``jobEvents`` change a job's gang minCount during the run. A decrease
lets a gang that did not fit start at once with fewer pods; the summary and the report say what it did to the
job's wait; bad events are input errors naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.api.errors import InputError
from phalanx.cli import cli
from phalanx.sim.elastic import MinCountEvent
from phalanx.sim.metrics import summary
from phalanx.sim.simulator import POLICIES, simulate
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, load_workload, nodes_of

# 4 nodes x 8 GPUs; "busy" holds one node for an hour, so the 4-node gang "train" fits only once it is done.
CLUSTER = ClusterSpec([Pool("gpu", 4, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8, "pods": 110})])
JOBS = [
    JobRecord("busy", 0.0, 3600.0, 1, cpu="8", memory="32Gi", gpus=8),
    JobRecord("train", 10.0, 7200.0, 4, cpu="8", memory="32Gi", gpus=8),
]
TRACE = """\
jobs:
- {name: busy, submit: 0, duration: 3600, pods: 1, cpu: "8", memory: 32Gi, gpus: 8}
- {name: train, submit: 10, duration: 7200, pods: 4, cpu: "8", memory: 32Gi, gpus: 8}
jobEvents:
- {time: 600, job: train, minCount: 3}
"""


def _train(events: list[MinCountEvent]) -> tuple[float | None, dict]:  # type: ignore[type-arg]
    r = simulate(nodes_of(CLUSTER), JOBS, POLICIES["gang"], job_events=events)
    return next(x.start for x in r.runs if x.job.name == "train"), summary(r)


def test_min_count_decrease_starts_a_waiting_gang_at_once() -> None:
    start, before = _train([])
    assert start == 3600.0  # all 4 pods: it waits for busy's node
    assert before["minCountChanges"] == []
    start, after = _train([MinCountEvent(600.0, "train", 3)])
    assert start == 600.0  # three members fit now: the engine retried the gang when its PodGroup changed
    assert after["minCountChanges"] == [
        {
            "job": "train",
            "time": 600.0,
            "from": 4,
            "to": 3,
            "waitedBeforeSeconds": 590.0,
            "waitedAfterSeconds": 0.0,
        }
    ]
    assert after["queueSeconds"]["mean"] < before["queueSeconds"]["mean"]


def test_min_count_increase_and_changes_to_a_running_or_unarrived_job() -> None:
    events = [MinCountEvent(5.0, "train", 2), MinCountEvent(100.0, "busy", 1), MinCountEvent(200.0, "train", 4)]
    r = simulate(nodes_of(CLUSTER), JOBS, POLICIES["gang"], job_events=events)
    train = next(x for x in r.runs if x.job.name == "train")
    # Before its arrival the change becomes the job's minCount: 2 of its pods fit at once, so it starts at 10 s
    # and the later increase finds it running.
    assert train.start == 10.0
    rows = summary(r)["minCountChanges"]
    assert [(c["job"], c["from"], c["to"], c["waitedBeforeSeconds"]) for c in rows] == [
        ("train", 4, 2, None),
        ("busy", 1, 1, None),
        ("train", 2, 4, None),
    ]


def test_trace_job_events_reach_the_report_and_the_timeline(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "pools: [{name: gpu, count: 4, allocatable: {cpu: '96', memory: 1024Gi, nvidia.com/gpu: 8, pods: 110}}]\n"
    )
    trace = tmp_path / "jobs.yaml"
    trace.write_text(TRACE)
    report = tmp_path / "r.html"
    args = ["simulate", "--cluster", str(cluster), "--workload", str(trace), "--policy", "gang", "-o", "json"]
    result = CliRunner().invoke(cli, [*args, "--report", str(report)])
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)["policies"][0]
    assert row["minCountChanges"][0]["waitedAfterSeconds"] == 0.0
    page = report.read_text()
    assert 'id="min-count"' in page and "4 -&gt; 3" in page
    assert "gang minCount changed from 4 to 3 (trace jobEvents)" in page  # on the job's wait timeline


def test_bad_job_events_are_input_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        TRACE
        + "- {time: 700, job: nope, minCount: 1}\n- {time: 800, job: train, minCount: 5}\n- {time: 900, job: train}\n"
    )
    with pytest.raises(InputError) as err:
        load_workload(str(bad))
    assert err.value.lines == [
        f'{bad}:6: jobEvents[1].job: Not found: "nope": no job of the trace has this name',
        f"{bad}:7: jobEvents[2].minCount: Invalid value: 5: must be less than or equal to 4",
        f"{bad}:8: jobEvents[3].minCount: Required value",
    ]


def test_job_events_under_compat_v136_are_refused(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.yaml"
    trace.write_text(TRACE)
    args = ["simulate", "--workload", str(trace), "--policy", "gang", "--compat", "v1.36", "-o", "json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert f"{trace}: jobEvents change a PodGroup's minCount, which v1.36 does not allow" in result.output


def test_the_elastic_gang_example_starts_the_trainer_when_its_min_count_is_lowered() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "elastic-gang"
    args = ["simulate", "--cluster", str(example / "cluster.yaml"), "--workload", str(example / "jobs.yaml")]
    result = CliRunner().invoke(cli, [*args, "--policy", "gang", "-o", "json", "--report", ""])
    assert result.exit_code == 0, result.output
    (change,) = json.loads(result.output)["policies"][0]["minCountChanges"]
    assert (change["from"], change["to"], change["waitedBeforeSeconds"], change["waitedAfterSeconds"]) == (
        8,
        5,
        1740.0,
        0.0,
    )
    table = CliRunner().invoke(cli, [*args, "--policy", "gang", "--report", ""])
    assert table.exit_code == 0, table.output
    assert "minCount changes (trace jobEvents)" in table.output
    assert "trainer" in table.output and "8 -> 5" in table.output


def test_the_report_shows_the_change_in_a_real_browser(tmp_path: Path) -> None:
    """The change's table and the trainer's "why it waited" rows, rendered by Chromium with no console problem."""
    from chromium import CHROMIUM, Browser

    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    example = Path(__file__).resolve().parents[2] / "examples" / "elastic-gang"
    report = tmp_path / "report.html"
    args = ["simulate", "--cluster", str(example / "cluster.yaml"), "--workload", str(example / "jobs.yaml")]
    result = CliRunner().invoke(cli, [*args, "--policy", "gang", "--report", str(report)])
    assert result.exit_code == 0, result.output
    with Browser(tmp_path / "profile") as page:
        page.open(report.as_uri(), "window.phalanxReport && window.phalanxReport.ready")
        table = page.evaluate(
            "Array.from(document.querySelectorAll('#min-count tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))"
        )
        assert table == [["gang", "trainer", "0.50", "8 -> 5", "29.0", "0.0"]]
        page.evaluate(
            "(document.getElementById('why-search').value = 'trainer', "
            "document.getElementById('why-search').dispatchEvent(new Event('change')), true)"
        )
        rows = page.evaluate(
            "Array.from(document.querySelectorAll('#why-table tbody tr')).map(r => [r.cells[0].textContent, r.cells[4].textContent, r.cells[5].textContent])"
        )
        assert ["0.50", "MinCountChanged", "gang minCount changed from 8 to 5 (trace jobEvents)"] in rows
        assert page.problems() == []
