"""The v1.37 examples (examples/v1.37/, and examples/job-gang, whose Jobs use batch/v1 spec.scheduling): `phalanx
schedule` takes v1.37 snapshots. An example that restates a v1.36 one in scheduling.k8s.io/v1beta1 schedules exactly
as the v1.36 original (one internal model), and device-taint-rule shows DeviceTaintRules at work.
(tests/e2e/test_examples_real.py applies every example to the real API server of its version.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from phalanx.cli import cli

from schedule_cli import schedule_json

ROOT = Path(__file__).resolve().parent.parent
V137 = ROOT / "examples" / "v1.37"


def without_stats(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "stats"}


def test_every_v137_example_is_covered() -> None:
    assert {p.name for p in V137.iterdir() if p.is_dir()} == {"device-taint-rule", "dra-nvlink-gang", "gang-training"}
    assert (V137 / "README.md").is_file()


@pytest.mark.parametrize("name", ["gang-training", "dra-nvlink-gang"])
def test_a_v1beta1_restatement_schedules_as_its_v1alpha2_original(name: str) -> None:
    v137 = schedule_json("-f", str(V137 / name))
    v136 = schedule_json("-f", str(ROOT / "examples" / name))
    assert json.dumps(without_stats(v137), sort_keys=True) == json.dumps(without_stats(v136), sort_keys=True)
    assert any(p["phase"] == "Scheduled" for p in v137["pods"])  # not two empty results


def test_v1beta1_objects_are_read_as_written() -> None:
    """The restatement is not a copy: its PodGroups use workloadRef and disruptionMode {all: {}}."""
    text = (V137 / "gang-training" / "workloads.yaml").read_text()
    assert "scheduling.k8s.io/v1alpha2" not in text and "podGroupTemplateRef" not in text
    assert "workloadRef: {workloadName: training, templateName: llm-pretrain}" in text


def test_device_taint_rules_keep_pods_off_tainted_devices() -> None:
    doc = schedule_json("-f", str(V137 / "device-taint-rule"))
    where = {p["name"]: (p["phase"], p["node"]) for p in doc["pods"]}
    assert where == {
        "infer-0": ("Scheduled", "gpu-b"),  # gpu-b/gpu-0, the one GPU no rule taints
        "infer-1": ("Scheduled", "gpu-a"),  # tolerates the maintenance taint
        "infer-2": ("Unschedulable", None),
    }
    infer0 = next(c for c in doc["resourceClaims"] if c["name"].startswith("infer-0-gpu-"))
    assert [r["device"] for r in infer0["allocation"]["devices"]["results"]] == ["gpu-0"]


def test_without_the_rules_every_pod_gets_a_gpu() -> None:
    """The same cluster and pods without taint-rules.yaml: the rules, not the cluster, kept infer-2 out."""
    files = [V137 / "device-taint-rule" / f for f in ("cluster.yaml", "workloads.yaml")]
    doc = schedule_json(*[arg for f in files for arg in ("-f", str(f))])
    assert {p["name"]: p["phase"] for p in doc["pods"]} == dict.fromkeys(["infer-0", "infer-1", "infer-2"], "Scheduled")


@pytest.mark.parametrize("name", ["device-taint-rule", "dra-nvlink-gang", "gang-training"])
def test_v137_example_is_valid(name: str) -> None:
    result = CliRunner().invoke(cli, ["validate", "-f", str(V137 / name)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
