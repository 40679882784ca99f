"""End to end through the CLI: `phalanx schedule` and `phalanx validate` on files, directories and stdin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from phalanx.cli import cli

from schedule_cli import run, schedule_json

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gang-training"


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in doc["pods"]}


def test_example_gang_training() -> None:
    doc = schedule_json("-f", str(EXAMPLE))
    pods = by_name(doc)
    pretrain = {pods[f"llm-pretrain-{i}"]["node"] for i in range(3)}
    assert len(pretrain) == 3 and all(n and n.startswith("gpu-node-") for n in pretrain)
    assert {pods[f"finetune-{i}"]["phase"] for i in range(2)} == {"Unschedulable"}
    assert {pods[f"eval-{i}"]["phase"] for i in range(4)} == {"Scheduled"}
    assert pods["giant-0"]["message"].startswith("0/6 nodes are available:")
    assert "6 Insufficient nvidia.com/gpu" in pods["giant-0"]["message"]
    assert {pods[f"web-{i}"]["node"] for i in range(3)} <= {"cpu-node-1", "cpu-node-2"}
    assert pods["orphan"]["phase"] == "Waiting"
    groups = {g["name"]: g for g in doc["podGroups"]}
    assert groups["llm-pretrain"]["condition"]["status"] == "True"
    assert groups["finetune"]["condition"]["reason"] == "Unschedulable"
    assert groups["finetune"]["scheduledPods"] == 0
    assert doc["stats"]["podsScheduled"] == sum(p["phase"] == "Scheduled" for p in doc["pods"])


def test_output_is_deterministic_and_yaml_matches_json() -> None:
    first, second = schedule_json("-f", str(EXAMPLE)), schedule_json("-f", str(EXAMPLE))
    first.pop("stats"), second.pop("stats")
    assert first == second
    as_yaml = yaml.safe_load(run("schedule", "-f", str(EXAMPLE), "-o", "yaml").stdout)
    as_yaml.pop("stats")
    assert as_yaml == first


def test_table_output_for_people() -> None:
    result = run("schedule", "-f", str(EXAMPLE), "-o", "table")
    assert result.exit_code == 0
    assert "PodGroups" in result.stdout and "llm-pretrain" in result.stdout and "Unschedulable" in result.stdout


def test_stdin_and_multiple_files(tmp_path: Path) -> None:
    cluster = (EXAMPLE / "cluster.yaml").read_text()
    doc = schedule_json("-f", "-", "-f", str(EXAMPLE / "workloads.yaml"), stdin=cluster)
    assert by_name(doc)["llm-pretrain-0"]["phase"] == "Scheduled"


BAD_POD = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: bad, namespace: ns}
spec:
  containers:
  - name: main
    resources:
      requests: {cpu: "2"}
      limits: {cpu: "1"}
"""


def test_schedule_refuses_invalid_input_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_POD)
    result = run("schedule", "-f", str(path), "-o", "json")
    assert result.exit_code == 2
    assert result.stdout == ""
    line = result.stderr.strip().splitlines()[0]
    assert line.startswith(f"{path}:13: Pod ns/bad: spec.containers[0].resources.requests: Invalid value: ")
    assert "must be less than or equal to cpu limit" in line


def test_validate_exit_codes(tmp_path: Path) -> None:
    assert run("validate", "-f", str(EXAMPLE)).exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_POD)
    result = run("validate", "-f", str(tmp_path))
    assert result.exit_code == 2
    assert "Pod ns/bad" in result.stderr


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("kind: [unclosed", "cannot parse"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: 3}]}\n",
            "spec.containers[0].name: Invalid value: 3: must be of type string",
        ),
    ],
    ids=["yaml-syntax", "wrong-type"],
)
def test_bad_documents_are_clear_errors(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(content)
    result = run("schedule", "-f", str(path))
    assert result.exit_code == 2
    assert fragment in result.stderr and str(path) in result.stderr


def test_missing_file_is_usage_error() -> None:
    result = run("schedule", "-f", "/nonexistent/snapshot.yaml")
    assert result.exit_code == 2
    assert "no such file or directory" in result.stderr


def test_unknown_priority_class_is_input_error(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priorityClassName: nope\n  containers: [{name: c}]\n"
    )
    result = run("schedule", "-f", str(path))
    assert result.exit_code == 2
    # Priority admission's words, at the file, line and field (the scheduler's own message named none).
    assert (
        result.stderr
        == f"{path}:5: Pod default/p: spec.priorityClassName: Forbidden: no PriorityClass with name nope was found\n"
    )


def test_config_unknown_plugin_is_error(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  plugins:\n    score:\n      enabled: [{name: NoSuchPlugin}]\n"
    )
    result = run("schedule", "-f", str(EXAMPLE), "--config", str(cfg))
    assert result.exit_code == 2
    assert 'unknown plugin "NoSuchPlugin"' in result.stderr


PACKING = """\
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: a}, status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: b}, status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: running}, spec: {nodeName: a, containers: [{name: c, resources: {requests: {cpu: "2", memory: 4Gi}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: new}, spec: {containers: [{name: c, resources: {requests: {cpu: "1", memory: 2Gi}}}]}}
"""

MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
"""


def test_scoring_strategy_from_config(tmp_path: Path) -> None:
    snap = tmp_path / "snap.yaml"
    snap.write_text(PACKING)
    assert by_name(schedule_json("-f", str(snap)))["new"]["node"] == "b"  # LeastAllocated spreads
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(MOST_ALLOCATED)
    assert by_name(schedule_json("-f", str(snap), "--config", str(cfg)))["new"]["node"] == "a"  # packs


def test_scheduler_name_filter(tmp_path: Path) -> None:
    snap = tmp_path / "snap.yaml"
    snap.write_text(
        PACKING.replace("metadata: {name: new}, spec: {", "metadata: {name: new}, spec: {schedulerName: x, ")
    )
    pods = by_name(schedule_json("-f", str(snap), "--scheduler-name", "phalanx"))
    assert pods["new"]["phase"] == "Waiting" and pods["new"]["reason"] == "OtherScheduler"
    assert by_name(schedule_json("-f", str(snap), "--scheduler-name", "x"))["new"]["phase"] == "Scheduled"


def test_bin_packing_example_spreads_by_default_and_packs_with_its_config() -> None:
    example = ROOT / "examples" / "bin-packing"
    spread = by_name(schedule_json("-f", str(example / "snapshot.yaml")))
    assert spread["train-0"]["phase"] == "Unschedulable"
    packed = by_name(schedule_json("-f", str(example / "snapshot.yaml"), "--config", str(example / "pack-gpus.yaml")))
    assert {packed["train-0"]["node"], packed["train-1"]["node"]} == {"gpu-3", "gpu-4"}
    assert {packed[f"infer-{i}"]["node"] for i in range(6)} == {"gpu-1", "gpu-2"}


def test_jobs_in_a_snapshot_are_expanded_by_the_job_controller() -> None:
    doc = schedule_json("-f", str(ROOT / "examples" / "job-gang" / "snapshot.yaml"))
    pretrain = [p for p in doc["pods"] if p["name"].startswith("pretrain-")]
    assert len(pretrain) == 4 and {p["phase"] for p in pretrain} == {"Scheduled"}
    (group,) = doc["podGroups"]
    assert group["name"].startswith("pretrain-") and group["name"].count("-worker-0-") == 1
    assert group["minCount"] == 4 and group["scheduledPods"] == 4
    assert len([p for p in doc["pods"] if p["name"].startswith("preprocess-")]) == 2


def test_admin_access_claims_need_a_labelled_namespace(tmp_path: Path) -> None:
    """DRAAdminAccess admission: adminAccess only in namespaces labelled resource.kubernetes.io/admin-access."""
    claim = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: {ns}}}\n"
        "spec: {{devices: {{requests: [{{name: r, exactly: {{deviceClassName: c, allocationMode: All, adminAccess: true}}}}]}}}}\n"
    )
    ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ops, labels: {resource.kubernetes.io/admin-access: 'true'}}\n"
    ok = tmp_path / "ok.yaml"
    ok.write_text(ns + "---\n" + claim.format(name="monitor", ns="ops"), encoding="utf-8")
    assert CliRunner().invoke(cli, ["schedule", "-f", str(ok), "-o", "json"]).exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(ns + "---\n" + claim.format(name="sneaky", ns="default"), encoding="utf-8")
    out = CliRunner().invoke(cli, ["schedule", "-f", str(bad), "-o", "json"])
    assert out.exit_code == 2
    assert "ResourceClaim default/sneaky: spec.devices.requests[0].adminAccess: Forbidden" in out.output
