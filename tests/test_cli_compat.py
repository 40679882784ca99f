"""The engine's modes on the command line: ``--feature-gates`` and ``featureGates`` (validated as kube-scheduler
validates them, honoured by the engine), ``--compat v1.36`` and ``--diff`` on ``schedule``, the same flags on
``simulate`` and ``serve``, and the ScheduleResult's ``mode`` and ``diff``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.scheduling.feature_gates import (
    DEFAULT_GATES,
    PHALANX_PROFILE,
    PHALANX_PROFILE_V1_37,
    FeatureGateError,
    resolve_gates,
)
from phalanx.scheduling.feature_gates_v1_36 import GATES

from schedule_cli import ROOT, run, schedule_json

SCENARIOS = ROOT / "tests" / "scenarios"


def _snapshot(tmp_path: Path, scenario: str) -> str:
    """A scenario's objects as a snapshot file."""
    objects = yaml.safe_load((SCENARIOS / scenario).read_text(encoding="utf-8"))["objects"]
    path = tmp_path / scenario
    path.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    return str(path)


def _pods(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in doc["pods"]}


def _config(tmp_path: Path, body: str) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + body, encoding="utf-8"
    )
    return str(path)


# --- validation, in kube-scheduler's words ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("NoSuchGate=true", "--feature-gates: unrecognized feature gate: NoSuchGate"),
        (
            "DynamicResourceAllocation=false",
            "--feature-gates: cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
        ),
        (
            "GangScheduling=yes",
            '--feature-gates: invalid value of GangScheduling=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        ("GangScheduling", "--feature-gates: missing bool value for GangScheduling"),
        ("kubelet:GangScheduling=true", "--feature-gates: component not registered: kubelet"),
        (
            "GenericWorkload=false,GangScheduling=true",
            "--feature-gates: GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
        ),
        (
            "PodLevelResources=false",
            "--feature-gates: feature gate PodLevelResources=false is not supported by phalanx",
        ),
    ],
)
def test_bad_feature_gates_are_input_errors(tmp_path: Path, flag: str, message: str) -> None:
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    result = run("schedule", "-f", snapshot, "--feature-gates", flag)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_bad_feature_gates_in_the_config_name_file_line_and_gate(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    cfg = _config(tmp_path, "featureGates:\n  GangScheduling: true\n  NoSuchGate: true\n  DRAAdminAccess: false\n")
    result = run("schedule", "-f", snapshot, "--config", cfg)
    assert result.exit_code == 2
    assert f"{cfg}:5: KubeSchedulerConfiguration: featureGates.NoSuchGate: unrecognized feature gate" in result.stderr
    assert f"{cfg}:6: KubeSchedulerConfiguration: featureGates.DRAAdminAccess: cannot set feature gate" in result.stderr
    wrong = _config(tmp_path, "featureGates:\n  GangScheduling: [true]\n")
    result = run("schedule", "-f", snapshot, "--config", wrong)
    assert result.exit_code == 2
    assert "featureGates.GangScheduling" in result.stderr


def test_unknown_compat_version_is_an_input_error(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    result = run("schedule", "-f", snapshot, "--compat", "v1.35")
    assert result.exit_code == 2
    assert '--compat: Unsupported value: "v1.35": supported values: "v1.36", "v1.37"' in result.stderr


def test_every_v1_36_gate_is_known_and_the_profile_turns_the_workload_gates_on() -> None:
    assert len(GATES) > 200  # every gate kube-scheduler v1.36.3 lists in --help
    assert GATES["GangScheduling"] == ("ALPHA", False, False)
    assert GATES["DRADeviceTaintRules"] == ("BETA", False, False)
    for name in PHALANX_PROFILE:
        assert DEFAULT_GATES.enabled(name), name
    assert DEFAULT_GATES.changed() == dict.fromkeys(PHALANX_PROFILE, True)
    # A gate the user names wins over the profile; what depends on a gate turned off stays off.
    off = resolve_gates({"GenericWorkload": False})
    assert not any(off.enabled(n) for n in PHALANX_PROFILE if n != "DRADeviceTaintRules")
    assert off.changed() == {"DRADeviceTaintRules": True}  # not a workload gate: it needs only DRADeviceTaints
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: Nope"):
        resolve_gates({"Nope": True})


def test_v1_37_gates_fold_gang_and_preemption_into_generic_workload() -> None:
    """With v1.37's table (--compat v1.37), GangScheduling and WorkloadAwarePreemption no longer exist and
    GenericWorkload switches the gang plugin and workload-aware preemption; CompositePodGroup is v1.37's own."""
    gates = resolve_gates(version="v1.37")
    assert gates.version == "v1.37"
    assert gates.changed() == dict.fromkeys(PHALANX_PROFILE_V1_37, True)
    sched = gates.scheduling()
    assert sched.gang_scheduling and sched.workload_aware_preemption and sched.composite_pod_group
    assert sched.device_taint_rules  # GA and on in v1.37
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: GangScheduling"):
        resolve_gates({"GangScheduling": True}, version="v1.37")
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: CompositePodGroup"):
        resolve_gates({"CompositePodGroup": True})  # v1.36's table
    off = resolve_gates({"GenericWorkload": False}, version="v1.37").scheduling()
    assert not (off.gang_scheduling or off.workload_aware_preemption or off.composite_pod_group)
    no_tree = resolve_gates({"CompositePodGroup": False}, version="v1.37").scheduling()
    assert no_tree.gang_scheduling and not no_tree.composite_pod_group
    with pytest.raises(
        FeatureGateError,
        match=r"CompositePodGroup is enabled, but depends on .*\[GenericWorkload TopologyAwareWorkloadScheduling\]",
    ):
        resolve_gates({"GenericWorkload": False, "CompositePodGroup": True}, version="v1.37")


def test_compat_v1_37_takes_v1_37_gates_on_the_command_line_and_in_the_config(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    doc = schedule_json("-f", snapshot, "--compat", "v1.37", "--feature-gates", "CompositePodGroup=false")
    assert doc["mode"]["compat"] == "v1.37"
    # CompositePodGroup=false is v1.37's default: the report lists only what differs from it
    assert doc["mode"]["featureGates"] == {g: True for g in PHALANX_PROFILE_V1_37 if g != "CompositePodGroup"}
    result = run("schedule", "-f", snapshot, "--feature-gates", "CompositePodGroup=false")
    assert result.exit_code == 2 and "unrecognized feature gate: CompositePodGroup" in result.stderr
    result = run("schedule", "-f", snapshot, "--compat", "v1.37", "--feature-gates", "GangScheduling=false")
    assert result.exit_code == 2 and "unrecognized feature gate: GangScheduling" in result.stderr
    cfg = _config(tmp_path, "featureGates:\n  PodGroupPreemptionPolicy: false\n")
    doc = schedule_json("-f", snapshot, "--compat", "v1.37", "--config", cfg)
    assert doc["mode"]["featureGates"].get("PodGroupPreemptionPolicy") is None  # back at v1.37's default (off)
    result = run("schedule", "-f", snapshot, "--config", cfg)
    assert result.exit_code == 2
    assert f"{cfg}:4: KubeSchedulerConfiguration: featureGates.PodGroupPreemptionPolicy: unrecognized" in result.stderr


def test_device_taint_rules_gate_off_ignores_the_rules() -> None:
    example = str(ROOT / "examples" / "v1.37" / "device-taint-rule")
    placed = {p["name"] for p in schedule_json("-f", example)["pods"] if p["phase"] == "Scheduled"}
    assert placed == {"infer-0", "infer-1"}  # a rule taints the GPU infer-2 would need
    off = schedule_json("-f", example, "--feature-gates", "DRADeviceTaintRules=false")
    assert {p["name"] for p in off["pods"] if p["phase"] == "Scheduled"} == {"infer-0", "infer-1", "infer-2"}


def test_all_alpha_sets_every_unnamed_alpha_gate() -> None:
    """AllAlpha turns on every alpha gate not named; the alpha gates phalanx does not model must then be named
    off (the error names them), so the run never silently differs from kube-scheduler's."""
    with pytest.raises(FeatureGateError, match="DRANodeAllocatableResources=true is not supported by phalanx"):
        resolve_gates({"AllAlpha": True})
    gates = resolve_gates(
        {
            "AllAlpha": True,
            "DRANodeAllocatableResources": False,
            "TaintTolerationComparisonOperators": False,
            "DRAListTypeAttributes": False,
        }
    )
    assert gates.enabled("GenericWorkload") and gates.enabled("WorkloadAwarePreemption")
    assert gates.enabled("DRAListTypeAttributes") is False  # named explicitly
    assert gates.enabled("SchedulerAsyncAPICalls") is False  # beta: AllAlpha leaves it at its default


# --- the gates change what the engine does ------------------------------------------------------------------------


def test_flag_overrides_the_config_and_both_reach_the_engine(tmp_path: Path) -> None:
    """GangScheduling off (config): the heterogeneous gang's members are placed pod by pod, so the small one
    schedules and the big one does too; the flag turns it back on: the gang rule holds again."""
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    cfg = _config(tmp_path, "featureGates: {GangScheduling: false}\n")
    doc = schedule_json("-f", snapshot, "--config", cfg, "--compat", "v1.36")
    assert "GangScheduling" not in doc["mode"]["featureGates"]  # off is v1.36's default: not a change
    assert doc["mode"]["compat"] == "v1.36" and doc["mode"]["rules"] == []
    assert {p["name"]: p["phase"] for p in doc["pods"]}["small"] == "Scheduled"
    gang = schedule_json("-f", snapshot, "--config", cfg, "--compat", "v1.36", "--feature-gates", "GangScheduling=true")
    assert gang["mode"]["featureGates"]["GangScheduling"] is True
    assert {p["name"]: p["phase"] for p in gang["pods"]} == {"small": "Unschedulable", "big": "Unschedulable"}


def test_generic_workload_off_ignores_pod_groups(tmp_path: Path) -> None:
    """GenericWorkload off: PodGroups do not exist for the scheduler (and with it the gang, TAS and WAP gates):
    the members are scheduled pod by pod in PrioritySort order, big (older) onto gpu-8, then small onto gpu-4, where
    v1.36's gang cycle, small first, fails; and no PodGroup cycle runs."""
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    doc = schedule_json("-f", snapshot, "--compat", "v1.36", "--feature-gates", "GenericWorkload=false")
    assert doc["mode"]["featureGates"] == {
        "DRADeviceTaintRules": True
    }  # the profile's one gate that is not a workload's
    pods = _pods(doc)
    assert (pods["big"]["phase"], pods["big"]["node"]) == ("Scheduled", "gpu-8")
    assert (pods["small"]["phase"], pods["small"]["node"]) == ("Scheduled", "gpu-4")
    assert doc["podGroups"][0]["condition"] is None


def test_topology_gate_off_ignores_scheduling_constraints(tmp_path: Path) -> None:
    """TopologyAwareWorkloadScheduling off: the gang that fits no single domain is placed across domains."""
    snapshot = _snapshot(tmp_path, "tas-v136-gang-larger-than-any-domain.yaml")
    on = schedule_json("-f", snapshot, "--compat", "v1.36")
    assert {p["phase"] for p in on["pods"]} == {"Unschedulable"}
    off = schedule_json("-f", snapshot, "--compat", "v1.36", "--feature-gates", "TopologyAwareWorkloadScheduling=false")
    assert {p["phase"] for p in off["pods"]} == {"Scheduled"}


def test_workload_aware_preemption_gate_off_preempts_member_by_member(tmp_path: Path) -> None:
    """WorkloadAwarePreemption off: the members preempt pod by pod inside the cycle (DefaultPreemption), so the
    victims are evicted by Pod preemptors, not by the PodGroup."""
    snapshot = _snapshot(tmp_path, "wap-full-cluster-gpu-job-yields.yaml")
    on = schedule_json("-f", snapshot)
    assert {e["preemptor"]["kind"] for e in on["evictions"]} == {"PodGroup"}
    off = schedule_json("-f", snapshot, "--feature-gates", "WorkloadAwarePreemption=false")
    assert off["evictions"] and {e["preemptor"]["kind"] for e in off["evictions"]} == {"Pod"}


def test_dra_gate_off_changes_allocation(tmp_path: Path) -> None:
    """DRAConsumableCapacity off: a multi-allocatable GPU is no longer shared, so fewer inference pods fit."""
    example = str(ROOT / "examples" / "dra-shared-gpu")
    on = schedule_json("-f", example)
    off = schedule_json("-f", example, "--feature-gates", "DRAConsumableCapacity=false")
    count = lambda doc: sum(p["phase"] == "Scheduled" for p in doc["pods"])  # noqa: E731
    assert count(off) < count(on)
    assert off["mode"]["featureGates"] == {**dict.fromkeys(PHALANX_PROFILE, True), "DRAConsumableCapacity": False}


def test_workload_resource_claims_gate_off_gives_each_member_its_own_claim(tmp_path: Path) -> None:
    """DRAWorkloadResourceClaims off: the PodGroup's claim template is generated per pod, not once per group."""
    snapshot = _snapshot(tmp_path, "dra-podgroup-claim-where-gang-fits.yaml")
    on = schedule_json("-f", snapshot)
    assert [c["name"].rsplit("-", 1)[0] for c in on["resourceClaims"]] == ["trainer-gpus"]
    off = schedule_json("-f", snapshot, "--feature-gates", "DRAWorkloadResourceClaims=false")
    assert sorted(c["name"].rsplit("-", 1)[0] for c in off["resourceClaims"]) == ["w0-gpus", "w1-gpus"]


def test_workload_with_job_gate_off_expands_jobs_without_a_pod_group() -> None:
    snapshot = str(ROOT / "examples" / "job-gang" / "snapshot.yaml")
    # v1.37's Job controller makes a PodGroup for every Job: a basic one for the preprocessing Job, a gang for
    # the training Job.
    assert len(schedule_json("-f", snapshot)["podGroups"]) == 2
    off = schedule_json("-f", snapshot, "--feature-gates", "WorkloadWithJob=false")
    assert off["podGroups"] == [] and len(off["pods"]) == 6


# --- --compat and --diff -----------------------------------------------------------------------------------------


def test_compat_mode_is_reported_and_rules_are_off(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    mine = schedule_json("-f", snapshot)
    assert mine["mode"]["compat"] is None and "largest-first-retry" in mine["mode"]["rules"]
    assert _pods(mine)["big"]["rules"] == ["largest-first-retry"]
    theirs = schedule_json("-f", snapshot, "--compat", "v1.36")
    assert theirs["mode"] == {"compat": "v1.36", "rules": [], "featureGates": dict.fromkeys(PHALANX_PROFILE, True)}
    assert all(not p.get("rules") for p in theirs["pods"])
    assert {p["phase"] for p in theirs["pods"]} == {"Unschedulable"}
    assert schedule_json("-f", snapshot, "--compat", "1.36")["mode"]["compat"] == "v1.36"


def _diff_keys(doc: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    return [(d["kind"], d["name"], d["rules"]) for d in doc["diff"]]


def test_diff_names_the_rule_that_changed_each_outcome(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")
    doc = schedule_json("-f", snapshot, "--diff")
    assert _diff_keys(doc) == [
        ("Pod", "big", ["largest-first-retry"]),
        ("Pod", "small", ["largest-first-retry"]),
        ("PodGroup", "llm", ["largest-first-retry"]),
    ]
    big = doc["diff"][0]
    assert big["phalanx"] == {"phase": "Scheduled", "node": "gpu-8", "nominatedNode": None}
    assert big["v1.36"] == {"phase": "Unschedulable", "node": None, "nominatedNode": None}
    # From the other side: the same differences, the run's own result in v1.36's mode.
    compat = schedule_json("-f", snapshot, "--compat", "v1.36", "--diff")
    assert _diff_keys(compat) == _diff_keys(doc)
    assert compat["diff"][0]["v1.36"] == big["v1.36"] and compat["mode"]["compat"] == "v1.36"
    # The table lists them too.
    table = run("schedule", "-f", snapshot, "--diff")
    assert table.exit_code == 0
    assert "largest-first-retry" in table.stdout and "Pod default/big" in table.stdout


def test_diff_is_empty_where_the_modes_agree(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, "preemption-v136-candidate-order.yaml")
    assert schedule_json("-f", snapshot, "--diff")["diff"] == []


def test_diff_blames_a_consequence_on_the_rule_that_caused_it(tmp_path: Path) -> None:
    """A displaced pod is attributed by re-running with each acting rule off: the gang the annotation placed."""
    name = "topology-narrowing-keeps-gang-in-one-rack.yaml"
    snapshot = _snapshot(tmp_path, name)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(yaml.safe_load((SCENARIOS / name).read_text(encoding="utf-8"))["config"]))
    doc = schedule_json("-f", snapshot, "--config", str(cfg), "--diff")
    assert doc["diff"], "the modes place the gang differently"
    assert all(d["rules"] for d in doc["diff"])
    assert {r for d in doc["diff"] for r in d["rules"]} <= {"best-fit-narrowing", "topology-annotations"}


def test_diff_reads_stdin_once_for_both_runs(tmp_path: Path) -> None:
    text = Path(_snapshot(tmp_path, "gang-heterogeneous-largest-first.yaml")).read_text(encoding="utf-8")
    doc = schedule_json("-f", "-", "--diff", stdin=text)
    assert [d["name"] for d in doc["diff"]] == ["big", "small", "llm"]


# --- the same flags on simulate and serve -------------------------------------------------------------------------


def test_help_says_phalanx_profile_is_the_default() -> None:
    for command in ("schedule", "simulate", "serve"):
        text = " ".join(run(command, "--help").stdout.split())
        assert "--feature-gates" in text and "--compat" in text, command
        assert "phalanx's profile turns the workload gates on" in text, command
        assert "v1.36's defaults" in text, command


def test_simulate_takes_the_mode_and_rejects_bad_gates(tmp_path: Path) -> None:
    bad = run("simulate", "--jobs", "5", "--feature-gates", "NoSuchGate=true", "--report", str(tmp_path / "r.html"))
    assert bad.exit_code == 2 and "unrecognized feature gate: NoSuchGate" in bad.stderr
    bad = run("simulate", "--jobs", "5", "--compat", "v2", "--report", str(tmp_path / "r.html"))
    assert bad.exit_code == 2 and 'Unsupported value: "v2"' in bad.stderr
    args = ("simulate", "--jobs", "8", "--policy", "gang", "-o", "json", "--report", str(tmp_path / "r.html"))
    ok = run(*args, "--compat", "v1.36", "--feature-gates", "GangScheduling=false")
    assert ok.exit_code == 0, ok.output
    assert [p["policy"] for p in json.loads(ok.stdout)["policies"]] == ["gang"]


def test_serve_rejects_bad_gates_before_connecting(tmp_path: Path) -> None:
    result = run("serve", "--kubeconfig", str(tmp_path / "none"), "--feature-gates", "NoSuchGate=true")
    assert result.exit_code == 2 and "unrecognized feature gate: NoSuchGate" in result.stderr
    result = run("serve", "--kubeconfig", str(tmp_path / "none"), "--compat", "v9")
    assert result.exit_code == 2 and 'Unsupported value: "v9"' in result.stderr


def test_docs_list_every_gate_phalanx_classifies() -> None:
    """docs/feature-gates.md has a table row for every honoured, no-effect and unsupported gate."""
    from phalanx.scheduling.feature_gates import HONOURED, NO_EFFECT, UNSUPPORTED, UNSUPPORTED_V1_37

    text = (ROOT / "docs" / "feature-gates.md").read_text(encoding="utf-8")
    rows = {line.split("`")[1] for line in text.splitlines() if line.startswith("| `")}
    assert rows == set(HONOURED) | set(NO_EFFECT) | set(UNSUPPORTED) | set(UNSUPPORTED_V1_37)
