"""Public trace formats read from the files their publishers ship (the samples in examples/traces are written in
the same formats): Philly's job log and Helios's cluster log map to gangs, durations and arrivals as
docs/simulate.md says; what a reader leaves out is reported; bad files are input errors naming file and field;
and the documented replay command runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.api.errors import InputError
from phalanx.cli import cli
from phalanx.sim.traces import TraceWindow, detect_format, load_jobs
from phalanx.sim.traces.common import gang_of, k8s_name
from phalanx.sim.workload import RACK

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
PHILLY = EXAMPLES / "philly_cluster_job_log.json"
HELIOS = EXAMPLES / "helios_cluster_log.csv"


def philly_job(jobid: str, submitted: str, attempts: list[dict[str, object]], vc: str = "vc1") -> dict[str, object]:
    return {"status": "Pass", "vc": vc, "jobid": jobid, "attempts": attempts, "submitted_time": submitted, "user": "u"}


def attempt(start: str, end: str | None, *gpus_per_host: int) -> dict[str, object]:
    hosts = [{"ip": f"m{k}", "gpus": [f"gpu{g}" for g in range(n)]} for k, n in enumerate(gpus_per_host)]
    return {"start_time": start, "end_time": end, "detail": hosts}


def write(tmp_path: Path, name: str, content: object) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_philly_maps_hosts_to_a_gang_and_the_last_attempt_to_the_duration(tmp_path: Path) -> None:
    trace = write(
        tmp_path,
        "cluster_job_log",
        [
            philly_job(
                "application_1_2", "2017-10-03 08:00:30", [attempt("2017-10-03 08:01:00", "2017-10-03 09:01:00", 8, 8)]
            ),
            philly_job(
                "application_1_1",
                "2017-10-03 08:00:00",
                [
                    attempt("2017-10-03 08:00:10", "2017-10-03 08:01:24", 4),  # failed after 74 s
                    attempt("2017-10-03 08:02:00", "2017-10-03 08:32:00", 4),  # the attempt that ended the job
                ],
                vc="vc2",
            ),
            philly_job(
                "application_1_3", "2017-10-03 08:05:00", [attempt("2017-10-03 08:06:00", "2017-10-03 08:07:00", 8, 4)]
            ),
            philly_job("application_1_4", "2017-10-03 08:06:00", []),
            philly_job("application_1_5", "2017-10-03 08:07:00", [attempt("2017-10-03 08:08:00", None, 1)]),
            philly_job(
                "application_1_6", "2017-10-03 08:08:00", [{"start_time": None, "end_time": None, "detail": []}]
            ),
        ],
    )
    assert detect_format(trace) == "philly"
    loaded = load_jobs(trace)
    assert loaded is not None
    got = [(j.name, j.submit, j.duration, j.pods, j.gpus, j.queue, j.topology) for j in loaded.jobs]
    assert got == [
        ("application-1-1", 0.0, 1800.0, 1, 4, "vc2", ""),
        ("application-1-2", 30.0, 3600.0, 2, 8, "vc1", f"preferred:{RACK}"),
        ("application-1-3", 300.0, 60.0, 12, 1, "vc1", f"preferred:{RACK}"),  # 8 + 4 GPUs: twelve 1-GPU pods
    ]
    assert [(j.cpu, j.memory, j.min_count, j.priority) for j in loaded.jobs[:2]] == [
        ("16", "64Gi", 0, 0),
        ("32", "128Gi", 0, 0),
    ]
    assert loaded.notes == [
        "skipped 1 job(s): an attempt without start_time, end_time or hosts",
        "skipped 1 job(s): no recorded attempt (never scheduled)",
        "skipped 1 job(s): still running when the trace was taken",
    ]


def test_the_philly_sample() -> None:
    loaded = load_jobs(str(PHILLY))
    assert loaded is not None
    raw = json.loads(PHILLY.read_text())
    assert len(loaded.jobs) == len(raw) - 2  # the never-scheduled job and the still-running one are left out
    assert loaded.jobs[0].submit == 0.0 and [j.submit for j in loaded.jobs] == sorted(j.submit for j in loaded.jobs)
    big = max(loaded.jobs, key=lambda j: j.pods * j.gpus)
    assert (big.pods, big.gpus) == (8, 8)  # the 64-GPU gang of eight 8-GPU hosts


def test_helios_maps_nodes_to_a_gang() -> None:
    assert detect_format(str(HELIOS)) == "helios"
    loaded = load_jobs(str(HELIOS))
    assert loaded is not None
    assert loaded.notes == ["skipped 1 job(s): duration 0 (never ran)"]
    by_name = {j.name: j for j in loaded.jobs}
    rows = {line.split(",")[0]: line.split(",") for line in HELIOS.read_text().splitlines()[1:]}
    for job_id, row in rows.items():
        gpus, cpus, nodes, duration = int(row[3]), int(row[4]), int(row[5]), float(row[10])
        if duration == 0:
            assert f"job-{job_id}" not in by_name
            continue
        job = by_name[f"job-{job_id}"]
        assert (job.pods, job.pods * job.gpus, int(job.cpu) * job.pods, job.duration) == (nodes, gpus, cpus, duration)
        assert job.queue == row[2]


def test_a_window_keeps_the_jobs_submitted_in_it_from_time_zero() -> None:
    full = load_jobs(str(HELIOS))
    part = load_jobs(str(HELIOS), window=TraceWindow.parse("0.5:1.5"))
    assert full is not None and part is not None
    expected = [j.submit - 1800 for j in full.jobs if 1800 <= j.submit < 5400]
    assert [j.submit for j in part.jobs] == expected and expected
    assert part.notes[-1] == f"window 0.5h..1.5h: {len(expected)} of {len(full.jobs)} jobs"
    assert TraceWindow.parse(":24") == TraceWindow(0.0, 24.0)
    assert TraceWindow.parse("24:") == TraceWindow(24.0, None)
    for bad in ("24", "5:2", "a:b", "-1:3"):
        with pytest.raises(InputError, match="--trace-window"):
            TraceWindow.parse(bad)


def test_gangs_and_names() -> None:
    assert gang_of([8, 8, 8]) == (3, 8)
    assert gang_of([2]) == (1, 2)
    assert gang_of([8, 4]) == (12, 1)
    assert gang_of([0, 0]) == (2, 0)
    taken: set[str] = set()
    assert k8s_name("Application_1506_14199", taken) == "application-1506-14199"
    assert k8s_name("application_1506_14199", taken) == "application-1506-14199-2"
    assert k8s_name("__", taken) == "job"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "cluster_job_log",
            '[{"jobid": "a", "attempts": 3}]',
            "not a Philly job log: Expected `array`, got `int` - at `$[0].attempts`",
        ),
        ("cluster_job_log", "[{", "not JSON"),
        (
            "cluster_job_log",
            json.dumps([philly_job("j1", "yesterday", [attempt("2017-10-03 08:00:00", "2017-10-03 09:00:00", 1)])]),
            '$[0] (jobid j1): submitted_time: "yesterday" is not a time like 2017-10-07 01:12:09',
        ),
        (
            "cluster_log.csv",
            "job_id,gpu_num\n1,2\n",
            "not a Helios cluster log: missing column(s) ['duration', 'node_num', 'submit_time']",
        ),
        (
            "cluster_log.csv",
            "job_id,gpu_num,cpu_num,node_num,submit_time,duration\n7,two,1,1,2020-06-09 18:41:01,60\n",
            'cluster_log.csv:2: job_id 7: gpu_num: "two" is not a non-negative number',
        ),
    ],
    ids=["philly-type", "philly-json", "philly-time", "helios-columns", "helios-number"],
)
def test_a_bad_trace_is_an_input_error_naming_file_and_field(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = write(tmp_path, name, content)
    fmt = "philly" if name == "cluster_job_log" else "helios"
    with pytest.raises(InputError) as err:
        load_jobs(path, fmt)
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(path.rsplit("/", 1)[0])
    assert message in err.value.lines[0]


def test_format_options_are_checked(tmp_path: Path) -> None:
    own = write(tmp_path, "jobs.csv", "name,submit,duration,pods\na,0,10,1\n")
    assert detect_format(own) == "phalanx" and load_jobs(own) is None
    with pytest.raises(InputError, match="applies to the public trace formats"):
        load_jobs(own, window=TraceWindow(0, 1))
    with pytest.raises(InputError, match="no such trace file"):
        load_jobs(str(tmp_path / "missing.csv"), "phalanx")
    with pytest.raises(InputError, match="cannot read workload"):
        load_jobs(str(tmp_path / "missing.json"))
    result = CliRunner().invoke(cli, ["simulate", "--trace-window", "0:1", "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "--trace-window applies to --workload traces" in result.stderr
    assert not (tmp_path / "r.html").exists()


def test_the_documented_replay_command_runs(tmp_path: Path) -> None:
    args = ["simulate", "--cluster", str(EXAMPLES / "cluster.yaml"), "--workload", str(PHILLY)]
    args += ["--workload-format", "philly", "--trace-window", "0:2", "--policy", "gang", "--workers", "1"]
    result = CliRunner().invoke(cli, [*args, "--report", str(tmp_path / "r.html"), "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (row,) = doc["policies"]
    loaded = load_jobs(str(PHILLY), window=TraceWindow(0, 2))
    assert loaded is not None
    assert row["trace"] == "philly_cluster_job_log.json" and row["jobs"] == len(loaded.jobs)
    assert "note: " in result.stderr and "still running when the trace was taken" in result.stderr
