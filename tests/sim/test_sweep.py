"""Sweeps: results come back in run order whichever backend ran them, a killed worker's run is retried once, a
run that keeps failing is reported (never dropped), bad input stops the sweep, and `simulate --workers N` gives
the same JSON byte for byte as one process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sweep_tasks import AlwaysDie, BadInput, DieOnce, Draw, Raises

from phalanx.api.errors import InputError
from phalanx.cli import cli
from phalanx.sim.sweep import InProcess, LocalProcesses, RayCluster, available_cpus, backend_for, run_sweep

# Runs of different sizes: the heaviest is handed out first, so they finish out of order.
DRAWS = [Draw(seed, count) for seed, count in [(1, 3), (2, 40), (3, 1), (4, 25), (5, 2)]]


def test_results_come_back_in_run_order_on_every_backend() -> None:
    alone = run_sweep(DRAWS, InProcess())
    two = run_sweep(DRAWS, LocalProcesses(2))
    assert alone.failures == [] and two.failures == []
    assert two.results == alone.results
    assert [len(r or []) for r in two.results] == [3, 40, 1, 25, 2]


def test_progress_covers_the_sweep() -> None:
    seen: list[tuple[int, int]] = []
    run_sweep(DRAWS, LocalProcesses(2), lambda done, total: seen.append((done, total)))
    assert seen[-1] == (71, 71)
    assert all(total == 71 and 0 <= done <= total for done, total in seen)


def test_a_killed_worker_is_retried_once(tmp_path: Path) -> None:
    outcome = run_sweep([Draw(1), DieOnce(str(tmp_path / "marker")), Draw(2)], LocalProcesses(2))
    assert outcome.failures == []
    killed = (tmp_path / "marker").read_text()
    assert outcome.results[1] == f"second attempt after {killed}"
    assert outcome.results[0] == run_sweep([Draw(1)], InProcess()).results[0]


@pytest.mark.parametrize("backend", [InProcess(), LocalProcesses(2)], ids=["in-process", "processes"])
def test_a_run_that_keeps_failing_is_reported_not_dropped(backend: InProcess | LocalProcesses) -> None:
    tasks = [Draw(1), Raises(), Draw(2)]
    if isinstance(backend, LocalProcesses):
        tasks.insert(1, AlwaysDie())  # in-process, this would kill the test itself
    outcome = run_sweep(tasks, backend)
    failed = {f.label: (f.attempts, f.error) for f in outcome.failures}
    assert failed["raises"] == (2, "RuntimeError: boom")
    if isinstance(backend, LocalProcesses):
        assert failed["always-die"] == (2, "the worker process was killed by SIGKILL while running it")
    assert [f.index for f in outcome.failures] == sorted(f.index for f in outcome.failures)
    assert outcome.results[0] is not None and outcome.results[-1] is not None
    assert sum(r is None for r in outcome.results) == len(outcome.failures)


def test_bad_input_in_a_run_stops_the_sweep() -> None:
    with pytest.raises(InputError) as err:
        run_sweep([Draw(1), BadInput(), Draw(2)], LocalProcesses(2))
    assert err.value.lines == ["trace.csv: row 3: duration: not a number"]


def test_backend_from_the_options() -> None:
    assert backend_for(1, None) == InProcess()
    assert backend_for(3, None) == LocalProcesses(3)
    assert backend_for(None, None) == (InProcess() if available_cpus() == 1 else LocalProcesses(available_cpus()))
    assert backend_for(None, "ray://head:10001") == RayCluster("ray://head:10001")
    with pytest.raises(InputError, match="exclude each other"):
        backend_for(2, "auto")
    with pytest.raises(InputError, match="at least 1"):
        backend_for(0, None)


def simulate_json(tmp_path: Path, *extra: str) -> str:
    args = ["simulate", "--jobs", "40", "--seeds", "2", "--policy", "gang", "--policy", "pod-by-pod"]
    result = CliRunner().invoke(cli, [*args, "--report", str(tmp_path / "r.html"), "-o", "json", *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_simulate_gives_the_same_json_on_one_or_two_workers(tmp_path: Path) -> None:
    one = simulate_json(tmp_path, "--workers", "1")
    two = simulate_json(tmp_path, "--workers", "2")
    assert one == two
    doc = json.loads(one)
    assert [(r["seed"], r["policy"]) for r in doc["policies"]] == [
        (1, "gang"),
        (1, "pod-by-pod"),
        (2, "gang"),
        (2, "pod-by-pod"),
    ]
    assert doc["failedRuns"] == []
    assert [(a["policy"], a["seeds"]) for a in doc["aggregate"]] == [("gang", [1, 2]), ("pod-by-pod", [1, 2])]
    # The aggregate is the mean over the seeds' rows.
    gang = [r["queueSeconds"]["mean"] for r in doc["policies"] if r["policy"] == "gang"]
    assert doc["aggregate"][0]["queueSeconds.mean"]["mean"] == pytest.approx(sum(gang) / 2, abs=1e-3)


def test_the_fragmentation_experiment_as_a_sweep_matches_the_sequential_one() -> None:
    from phalanx.sim.fragmentation.experiment import experiment
    from phalanx.sim.fragmentation.openb import load_nodes, load_pods
    from phalanx.sim.fragmentation.reference import REFERENCE

    data = Path(__file__).resolve().parent / "data"
    nodes_csv, pods_csv = str(data / "openb_nodes_sample.csv"), str(data / "openb_pods_sample.csv")
    args = ["simulate", "--experiment", "fragmentation", "--nodes", nodes_csv, "--pods", pods_csv, "--seeds", "2"]
    args += ["--runner", "array", "--policy", "fgd", "--policy", "phalanx", "-o", "json"]
    outputs = []
    for workers in ("1", "2"):
        result = CliRunner().invoke(cli, [*args, "--workers", workers])
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    sequential = experiment(
        load_nodes(nodes_csv), load_pods(pods_csv), "openb_pods_sample", ["fgd", "phalanx"], 2, REFERENCE
    )
    assert json.loads(outputs[0]) == sequential.to_json()


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "--ray 127.0.0.1:1: nothing answers at 127.0.0.1:1"),
        ("ray://127.0.0.1:1", "--ray ray://127.0.0.1:1: nothing answers at 127.0.0.1:1"),
        ("head", "--ray head: want auto, local, HOST:PORT or ray://HOST:PORT"),
    ],
)
def test_a_ray_address_nothing_answers_at_is_a_usage_error(tmp_path: Path, address: str, message: str) -> None:
    pytest.importorskip("ray")
    args = ["simulate", "--jobs", "5", "--ray", address, "--report", str(tmp_path / "r.html")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and result.stderr.startswith(message), result.output
    assert not (tmp_path / "r.html").exists()


def test_ray_missing_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where Ray is not installed
    result = CliRunner().invoke(cli, ["simulate", "--ray", "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 2
    assert result.stderr == "--ray needs Ray in this environment: pip install 'phalanx[ray]'\n"


class _AbortingRay:
    """Stands in for the ``ray`` module's init/shutdown only: the Ray Client proxy of a busy head aborting the
    first connections, as seen in CI. (The real Ray paths are tests/sim/test_sweep_ray.py.)"""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def init(self, **options: object) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionAbortedError("Initialization failure from server:")

    def shutdown(self) -> None:
        pass


@pytest.mark.parametrize(("failures", "joins"), [(2, True), (3, False)])
def test_a_ray_client_connection_aborted_by_a_busy_head_is_retried(
    monkeypatch: pytest.MonkeyPatch, failures: int, joins: bool
) -> None:
    import socket
    import sys

    from phalanx.api.errors import InputError
    from phalanx.sim.sweep import ray_tasks

    fake = _AbortingRay(failures)
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(ray_tasks.time, "sleep", lambda s: None)
    with socket.create_server(("127.0.0.1", 0)) as head:
        address = f"ray://127.0.0.1:{head.getsockname()[1]}"
        if joins:
            assert ray_tasks.connect(address) is fake
        else:
            with pytest.raises(InputError, match="cannot join a Ray cluster: ConnectionAbortedError"):
                ray_tasks.connect(address)
    assert fake.calls == min(failures + 1, 3)
