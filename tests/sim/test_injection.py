"""What phalanx generates from user strings cannot be subverted by them: a job's gpuProduct and a pool's driver end
up in CEL selectors, pool and job names in object names and label values. Each is escaped (the string stays data)
or validated (refused at its field), tried with quotes, backslashes, `||` and unicode."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.api.cel.device import DeviceView
from phalanx.api.cel.selector import compile_selector
from phalanx.cli import cli
from phalanx.sim.device_claims import GpuClaim, claim_template
from phalanx.sim.devices import PoolDevices, cel_string, device_classes

HOSTILE = [
    "a' || true || 'b",
    "it's",
    'say "hi"',
    "back\\slash\\",
    "\\' || true || \\'",
    "line\nbreak\ttab",
    "ünïcödé 名前 🚀",
    "' || device.driver != '",
]


def _product_selector(product: str) -> str:
    template = claim_template("t", "ns", 1, GpuClaim(product=product))
    request = template.spec.spec.devices.requests[0]
    assert request.exactly is not None
    return request.exactly.selectors[0].cel.expression


def _gpu(product: str) -> DeviceView:
    return DeviceView("gpu.nvidia.com", {"gpu.nvidia.com": {"productName": product}}, {})


@pytest.mark.parametrize("product", HOSTILE)
def test_a_gpu_product_is_compared_as_data(product: str) -> None:
    selector = compile_selector(_product_selector(product))
    assert selector.matches(_gpu(product))
    assert not selector.matches(_gpu("NVIDIA H100 80GB HBM3"))
    assert not selector.matches(_gpu(""))


@pytest.mark.parametrize("text", [*HOSTILE, "", "plain"])
def test_cel_string_round_trips_through_the_cel_lexer(text: str) -> None:
    literal = cel_string(text)
    assert compile_selector(f"device.driver == {literal}").matches(DeviceView(text, {}, {}))


@pytest.mark.parametrize("driver", ["gpu.nvidia.com' || true || '", "gpu nvidia", "gpu\\x", "ünï.example.com"])
def test_a_pool_driver_that_is_not_a_driver_name_is_refused_at_its_field(tmp_path: Path, driver: str) -> None:
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        "pools:\n- name: gpu\n  count: 1\n  allocatable: {cpu: '8', nvidia.com/gpu: 2}\n"
        f"  devices: {{driver: {driver!r}}}\n".replace("\\\\", "\\")
    )
    result = CliRunner().invoke(cli, ["simulate", "--cluster", str(spec), "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{spec}:5: pools[0].devices.driver: Invalid value: ")


def test_the_device_class_selector_escapes_the_driver_even_if_it_were_not_validated() -> None:
    (cls,) = device_classes([PoolDevices(driver="x' || true || 'y", device_class="c")])
    selector = compile_selector(cls.spec.selectors[0].cel.expression)
    other = DeviceView("gpu.nvidia.com", {"gpu.nvidia.com": {"type": "gpu"}}, {})
    assert not selector.matches(other)


def test_a_hostile_product_name_on_both_sides_matches_only_itself_end_to_end(tmp_path: Path) -> None:
    """A pool publishing "a' || true || 'b" GPUs serves the job asking for exactly that product, and a job asking
    for it does not get the pool's H100s."""
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        "pools:\n"
        "- {name: odd, count: 1, allocatable: {cpu: '8', memory: 64Gi, nvidia.com/gpu: 2}, devices: {productName: \"a' || true || 'b\"}}\n"
        "- {name: h100, count: 1, allocatable: {cpu: '8', memory: 64Gi, nvidia.com/gpu: 2}, dra: true}\n"
    )
    trace = tmp_path / "jobs.yaml"
    trace.write_text(
        "- {name: odd, submit: 0, duration: 10, pods: 1, gpus: 2, gpuProduct: \"a' || true || 'b\"}\n"
        "- {name: greedy, submit: 0, duration: 10, pods: 1, gpus: 4, gpuProduct: \"a' || true || 'b\"}\n"
    )
    argv = ["simulate", "--cluster", str(spec), "--workload", str(trace), "--policy", "gang", "-o", "json"]
    result = CliRunner().invoke(cli, [*argv, "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    row = __import__("json").loads(result.stdout)["policies"][0]
    # "odd" runs on its own pool; "greedy" wants 4 such GPUs, the cluster has 2 (the H100s do not match).
    assert (row["completed"], row["neverStarted"]) == (1, 1)


@pytest.mark.parametrize("name", ["Job'1", "job||x", "jöb", "a" * 64, "-a"])
def test_a_job_name_becomes_object_names_and_labels_only_when_valid(tmp_path: Path, name: str) -> None:
    spec = tmp_path / "cluster.yaml"
    spec.write_text("pools:\n- {name: gpu, count: 1, allocatable: {cpu: '8'}}\n")
    trace = tmp_path / "jobs.yaml"
    trace.write_text(f"- {{name: {name!r}, submit: 0, duration: 10, pods: 1}}\n")
    result = CliRunner().invoke(cli, ["simulate", "--cluster", str(spec), "--workload", str(trace)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{trace}:1: [0].name: Invalid value: ")


@pytest.mark.parametrize("name", ["GPU", "gpu pool", "gpu'||x", "gpü", "g" * 60])
def test_a_pool_name_becomes_node_names_and_labels_only_when_valid(tmp_path: Path, name: str) -> None:
    spec = tmp_path / "cluster.yaml"
    spec.write_text(f"pools:\n- {{name: {name!r}, count: 1, allocatable: {{cpu: '8'}}, nodesPerRack: 1}}\n")
    result = CliRunner().invoke(cli, ["simulate", "--cluster", str(spec), "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{spec}:2: pools[0].name: Invalid value: ")
