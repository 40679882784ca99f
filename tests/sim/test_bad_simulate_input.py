"""Issue 19's failure classes on the simulate inputs, one regression test each: no hang, no traceback or exit 1,
no wrong answer accepted, no valid input refused, and every error naming its file (or flag), field and rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from phalanx.cli import cli

CLUSTER = "pools:\n- {name: gpu, count: 2, allocatable: {cpu: '8', memory: 64Gi, nvidia.com/gpu: 2}}\n"
TRACE = "name,submit,duration,pods,gpus\na,0,100,1,1\nb,10,100,2,1\n"


def simulate(tmp_path: Path, *args: str, cluster: str = CLUSTER, trace: str | None = TRACE) -> Result:
    (tmp_path / "cluster.yaml").write_text(cluster)
    argv = ["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--report", str(tmp_path / "r.html")]
    if trace is not None:
        (tmp_path / "jobs.csv").write_text(trace)
        argv += ["--workload", str(tmp_path / "jobs.csv")]
    return CliRunner().invoke(cli, [*argv, "--policy", "gang", *args])


def refused(result: Result, *lines: str) -> None:
    """Exit 2 with exactly these problems on stderr, and nothing on stdout."""
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == list(lines)
    assert result.stdout == ""


# --- 1. hangs -----------------------------------------------------------------------------------------------------


def test_nan_repair_hours_in_a_cluster_spec_is_an_error_not_a_hang(tmp_path: Path) -> None:
    spec = CLUSTER + "failures: {mtbfHours: 0.01, repairHours: .nan}\n"
    result = simulate(tmp_path, cluster=spec)
    refused(result, f"{tmp_path}/cluster.yaml:3: failures.repairHours: Invalid value: nan: must be a finite number")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1_000"])
def test_a_non_finite_or_non_positive_repair_flag_is_a_usage_error(tmp_path: Path, value: str) -> None:
    result = simulate(tmp_path, "--node-mtbf-hours", "0.01", "--node-repair-hours", value)
    assert result.exit_code == 2 and "Invalid value for '--node-repair-hours'" in result.stderr


def test_a_failure_rate_that_would_never_end_is_refused_up_front(tmp_path: Path) -> None:
    result = simulate(tmp_path, "--node-mtbf-hours", "1e-9", "--node-repair-hours", "1e-9")
    assert result.exit_code == 2
    assert result.stderr.startswith("--node-mtbf-hours: Invalid value: 1e-09: too small: 2 nodes over at least 110 s")


@pytest.mark.parametrize(
    ("row", "message"), [("a,nan,1,1,0", "must be a finite number"), ("a,0,inf,1,0", "must be a finite number")]
)
def test_non_finite_times_in_a_trace_are_errors(tmp_path: Path, row: str, message: str) -> None:
    result = simulate(tmp_path, trace=f"name,submit,duration,pods,gpus\n{row}\n")
    assert result.exit_code == 2 and f"{tmp_path}/jobs.csv:2: " in result.stderr and message in result.stderr


# --- 2. tracebacks and internal errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (None, "{d}/jobs.yaml: cannot read workload: No such file or directory"),
        (
            b"name,submit,duration,pods\ncaf\xe9,0,1,1\n",
            "{d}/jobs.yaml: cannot read workload: not UTF-8 text (byte 0xe9 on line 2)",
        ),
        (b"jobs: [\n", "{d}/jobs.yaml:2: cannot parse: did not find expected node content"),
        (b"jobs: 5\n", "{d}/jobs.yaml:1: jobs: Invalid value: integer: must be a list"),
        (
            b"jobs: [{submit: 1e30, duration: 1, pods: 1}]\n",
            '{d}/jobs.yaml:1: jobs[0].submit: Invalid value: "1e30": must be less than or equal to 3155760000',
        ),
    ],
    ids=["missing", "latin-1", "yaml-syntax", "jobs-not-a-list", "submit-1e30"],
)
def test_bad_workload_files_are_input_errors(tmp_path: Path, content: bytes | None, line: str) -> None:
    trace = tmp_path / "jobs.yaml"
    if content is not None:
        trace.write_bytes(content)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    result = CliRunner().invoke(
        cli, ["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload", str(trace)]
    )
    refused(result, line.format(d=tmp_path))


def test_an_unparseable_allocatable_quantity_names_the_pool_field(tmp_path: Path) -> None:
    result = simulate(tmp_path, cluster="pools:\n- {name: gpu, count: 2, allocatable: {cpu: 10Gx}}\n")
    refused(
        result,
        f'{tmp_path}/cluster.yaml:2: pools[0].allocatable[cpu]: Invalid value: "10Gx": must match the regular '
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    )


def test_an_unwritable_report_is_refused_before_the_run_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    metrics = tmp_path / "m.json"
    argv = ["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--jobs", "5", "--metrics", str(metrics)]
    result = CliRunner().invoke(cli, [*argv, "--report", str(tmp_path / "no" / "such" / "r.html")])
    refused(result, f"--report: {tmp_path}/no/such/r.html: no such directory: {tmp_path}/no/such")
    assert not metrics.exists()


# --- 3. wrong answers accepted silently ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("a,0,100,1,-1,4Gi,1", 'cpu: Invalid value: "-1": must be greater than or equal to 0'),
        ("a,0,-100,1,1,4Gi,1", 'duration: Invalid value: "-100": must be greater than or equal to 0'),
        ("a,-5,100,1,1,4Gi,1", 'submit: Invalid value: "-5": must be greater than or equal to 0'),
        ("a,0,100,1,1,4Gi,-2", 'gpus: Invalid value: "-2": must be greater than or equal to 0'),
        ("a,0,100,1,1,4Gi,1.5", 'gpus: Invalid value: "1.5": must be an integer'),
        ("a,0,100,0,1,4Gi,1", 'pods: Invalid value: "0": must be greater than or equal to 1'),
        ("A_Job,0,100,1,1,4Gi,1", 'name: Invalid value: "A_Job": a lowercase RFC 1123 subdomain must consist of'),
    ],
)
def test_negative_or_fractional_trace_fields_are_errors(tmp_path: Path, row: str, problem: str) -> None:
    result = simulate(tmp_path, trace=f"name,submit,duration,pods,cpu,memory,gpus\n{row}\n")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{tmp_path}/jobs.csv:2: {problem}"), result.stderr


@pytest.mark.parametrize(
    ("pool", "problem"),
    [
        (
            "{name: gpu, count: -1, allocatable: {cpu: '8'}}",
            "pools[0].count: Invalid value: -1: must be greater than or equal to 0",
        ),
        ("{name: gpu, count: 2.7, allocatable: {cpu: '8'}}", "pools[0].count: Invalid value: 2.7: must be an integer"),
        (
            "{name: gpu, count: 2, allocatable: {nvidia.com/gpu: 1.5}}",
            'pools[0].allocatable[nvidia.com/gpu]: Invalid value: "1.5": must be an integer',
        ),
        (
            "{name: gpu, count: 2, allocatable: {cpu: '-8'}}",
            'pools[0].allocatable[cpu]: Invalid value: "-8": must be greater than or equal to 0',
        ),
        ("{name: gpu, count: 2, allocatable: {cpu: '8'}, nodesPerRak: 4}", 'pools[0]: unknown field "nodesPerRak"'),
    ],
)
def test_bad_pool_fields_are_errors(tmp_path: Path, pool: str, problem: str) -> None:
    result = simulate(tmp_path, cluster=f"pools:\n- {pool}\n")
    refused(result, f"{tmp_path}/cluster.yaml:2: {problem}")


def test_two_pools_with_one_name_are_an_error(tmp_path: Path) -> None:
    spec = CLUSTER + "- {name: gpu, count: 1, allocatable: {cpu: '4'}}\n"
    refused(simulate(tmp_path, cluster=spec), f'{tmp_path}/cluster.yaml:3: pools[1].name: Duplicate value: "gpu"')


def test_a_kubernetes_cluster_is_validated_as_schedule_validates_it(tmp_path: Path) -> None:
    nodes = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '-8', pods: '10'}}\n"
    result = simulate(tmp_path, cluster=nodes)
    refused(
        result,
        f'{tmp_path}/cluster.yaml:4: Node n1: status.allocatable.cpu: Invalid value: "-8": must be greater than or equal to 0',
    )


def test_a_broken_gpu_selector_is_an_error_at_load(tmp_path: Path) -> None:
    trace = "name,submit,duration,pods,gpus,gpuSelector\na,0,100,1,1,device.attributes[\n"
    result = simulate(tmp_path, trace=trace, cluster=CLUSTER.replace("}}", "}, dra: true}"))
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f'{tmp_path}/jobs.csv:2: gpuSelector: Invalid value: "device.attributes[": compilation failed'
    )


def test_duplicate_job_names_and_restart_names_are_errors(tmp_path: Path) -> None:
    result = simulate(tmp_path, trace="name,submit,duration,pods\na,0,1,1\na,1,1,1\na-r1,2,1,1\n")
    refused(
        result,
        f'{tmp_path}/jobs.csv:3: name: Duplicate value: "a"',
        f'{tmp_path}/jobs.csv:4: name: Invalid value: "a-r1": the simulator names the restarts of job "a" so',
    )


def test_min_count_above_pods_would_never_start_and_is_an_error(tmp_path: Path) -> None:
    result = simulate(tmp_path, trace="name,submit,duration,pods,minCount\na,0,1,2,3\n")
    refused(result, f'{tmp_path}/jobs.csv:2: minCount: Invalid value: "3": must be less than or equal to 2')


# --- 4. valid input refused ---------------------------------------------------------------------------------------


def test_a_multi_document_kubernetes_cluster_is_a_cluster(tmp_path: Path) -> None:
    nodes = "".join(
        f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\nstatus: {{allocatable: {{cpu: '8', memory: 64Gi, nvidia.com/gpu: '2', pods: '10'}}}}\n"
        for i in range(2)
    )
    result = simulate(tmp_path, "-o", "json", cluster=nodes)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["policies"][0]["completed"] == 2


def test_a_csv_trace_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_bytes(b"\xef\xbb\xbf" + TRACE.encode())
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    argv = ["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload", str(tmp_path / "jobs.csv")]
    result = CliRunner().invoke(cli, [*argv, "--report", str(tmp_path / "r.html"), "-o", "json", "--policy", "gang"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["policies"][0]["completed"] == 2


# --- 5. errors that say where -------------------------------------------------------------------------------------


def test_a_node_event_naming_a_missing_node_names_the_file(tmp_path: Path) -> None:
    spec = CLUSTER + "nodeEvents: [{time: 1, node: gpu-9999, action: fail}]\n"
    refused(simulate(tmp_path, cluster=spec), f'{tmp_path}/cluster.yaml:3: nodeEvents[0].node: Not found: "gpu-9999"')


def test_a_trace_node_event_is_checked_against_the_cluster(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    trace = tmp_path / "jobs.yaml"
    trace.write_text("jobs: [{submit: 0, duration: 1, pods: 1}]\nnodeEvents:\n- {time: 1, pool: cpu, action: drain}\n")
    result = CliRunner().invoke(
        cli, ["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload", str(trace)]
    )
    refused(result, f'{trace}:3: nodeEvents[0].pool: Not found: "cpu"')


def test_a_missing_required_column_says_required_not_a_python_key_error(tmp_path: Path) -> None:
    result = simulate(tmp_path, trace="name,duration,pods\na,1,1\n")
    refused(result, f"{tmp_path}/jobs.csv:2: submit: Required value")


def test_kubernetes_objects_simulate_ignores_are_a_warning(tmp_path: Path) -> None:
    nodes = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8', nvidia.com/gpu: '2', pods: '10'}}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n"
        "---\nkind: Node\nmetadata: {name: n2}\n"
    )
    result = simulate(tmp_path, cluster=nodes)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[:2] == [
        f"warning: {tmp_path}/cluster.yaml:11: Node n2: apiVersion: Required value: the object is skipped",
        f"warning: {tmp_path}/cluster.yaml: simulate takes Nodes, DeviceClasses and ResourceSlices from --cluster; ignored: 1 Pods",
    ]


# --- found by fuzzing ---------------------------------------------------------------------------------------------


def test_a_dra_pool_without_nodes_survives_a_node_failure(tmp_path: Path) -> None:
    """The GPU-device count per row was cached by inventory, and an inventory without devices is not rebuilt when a
    node goes: the next sample mixed 3 rows with 4 (ValueError, exit 1)."""
    spec = CLUSTER + "- {name: h100, count: 0, allocatable: {cpu: '8', nvidia.com/gpu: 2}, dra: true}\n"
    spec += "nodeEvents: [{time: 5, node: gpu-0001, action: fail, duration: 10}]\n"
    result = simulate(tmp_path, "-o", "json", cluster=spec)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["policies"][0]["nodeFailures"] == 1


def test_a_trace_that_is_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    levels = ["  a0: &a0 [{submit: 0, duration: 1, pods: 1}]"]
    levels += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    trace = tmp_path / "jobs.yaml"
    trace.write_text("x:\n" + "\n".join(levels) + "\njobs: *a7\n")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    result = CliRunner().invoke(
        cli, ["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload", str(trace)]
    )
    refused(result, f"{trace}: cannot parse: document contains excessive aliasing")


def test_a_count_with_thousands_of_digits_is_out_of_range(tmp_path: Path) -> None:
    result = simulate(tmp_path, trace=f"name,submit,duration,pods\na,0,1,1{'0' * 5000}\n")
    assert result.exit_code == 2
    assert result.stderr.startswith(f'{tmp_path}/jobs.csv:2: pods: Invalid value: "1000')
    assert result.stderr.endswith(": must be less than or equal to 100000\n")
