"""KubeSchedulerConfiguration errors: every problem is ``FILE[:LINE]: KubeSchedulerConfiguration: FIELD.PATH:
message`` and exit 2, in kube-scheduler's words, and each plugin validates its own arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from phalanx.api.errors import InputError
from phalanx.cli import cli
from phalanx.scheduling.config import load_config, parse_config
from phalanx.scheduling.plugins.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "bin-packing" / "snapshot.yaml"
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n"


def _errors(raw: Any) -> list[str]:
    with pytest.raises(InputError) as info:
        parse_config(raw, "cfg.yaml")
    return info.value.lines


def _plugin_args(name: str, args: Any) -> list[str]:
    return _errors(
        {"kind": "KubeSchedulerConfiguration", "profiles": [{"pluginConfig": [{"name": name, "args": args}]}]}
    )


@pytest.mark.parametrize("args", ["scoringStrategy", ["a"], 7, True], ids=["string", "list", "number", "bool"])
def test_args_that_are_not_a_map_exit_2_naming_file_line_and_field(tmp_path: Path, args: Any) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(HEAD + f"  pluginConfig:\n  - name: NodeResourcesFit\n    args: {args!r}\n".replace("'", '"'))
    result = CliRunner().invoke(cli, ["schedule", "-f", str(SNAPSHOT), "--config", str(cfg)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"{cfg}:7: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].args: Invalid value: "
    )
    assert result.stderr.rstrip().endswith("must be an object")
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"kind: KubeSchedulerConfiguration\nprofiles: [\n", ":3: KubeSchedulerConfiguration: cannot parse: "),
        (
            b"kind: KubeSchedulerConfiguration\nprofiles: [caf\xe9]\n",
            ": KubeSchedulerConfiguration: cannot read: not UTF-8",
        ),
        (b"\x00\x01\x02\xff", ": KubeSchedulerConfiguration: cannot read: not UTF-8"),
        (
            b"kind: Deployment\n",
            ':1: KubeSchedulerConfiguration: kind: Unsupported value: "Deployment": supported values: ',
        ),
        (
            b"- 1\n- 2\n",
            ": KubeSchedulerConfiguration: Invalid value: array: must be a KubeSchedulerConfiguration object",
        ),
    ],
    ids=["yaml-error", "non-utf8", "binary", "wrong-kind", "not-an-object"],
)
def test_unreadable_files_exit_2(tmp_path: Path, content: bytes, message: str) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_bytes(content)
    result = CliRunner().invoke(cli, ["schedule", "-f", str(SNAPSHOT), "--config", str(cfg)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(str(cfg) + message), result.stderr


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope.yaml: KubeSchedulerConfiguration: cannot read: No such file"):
        load_config(str(tmp_path / "nope.yaml"))


@pytest.mark.parametrize(
    ("profile", "line"),
    [
        ({"plugins": "all"}, 'profiles[0].plugins: Invalid value: "all": must be an object'),
        ({"plugins": {"filter": []}}, "profiles[0].plugins.filter: Invalid value: array: must be an object"),
        (
            {"plugins": {"score": {"enabled": {"name": "x"}}}},
            "profiles[0].plugins.score.enabled: Invalid value: object",
        ),
        ({"plugins": {"score": {"disabled": "x"}}}, 'profiles[0].plugins.score.disabled: Invalid value: "x"'),
        ({"plugins": {"sort": {}}}, 'profiles[0].plugins: unknown extension point "sort"'),
        (
            {"plugins": {"score": {"enabled": [{"name": "Nope"}]}}},
            'profiles[0].plugins.score.enabled[0].name: unknown plugin "Nope"',
        ),
        (
            {"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 101}]}}},
            "profiles[0].plugins.score.enabled[0].weight: Invalid value: 101: must be in the range 1-100",
        ),
        ({"pluginConfig": {"name": "x"}}, "profiles[0].pluginConfig: Invalid value: object: must be a list"),
        ({"pluginConfig": [{"args": {}}]}, "profiles[0].pluginConfig[0].name: Required value"),
        ({"schedulerName": 3}, "profiles[0].schedulerName: Invalid value: 3: must be a string"),
    ],
)
def test_wrong_types_and_unknown_names(profile: dict[str, Any], line: str) -> None:
    lines = _errors({"kind": "KubeSchedulerConfiguration", "profiles": [profile]})
    assert any(x.startswith(f"cfg.yaml: KubeSchedulerConfiguration: {line}") for x in lines), lines


def test_duplicate_plugin_config_and_scheduler_name() -> None:
    entry = {"name": "NodeResourcesFit", "args": {}}
    lines = _errors(
        {
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"pluginConfig": [entry, entry]}, {"schedulerName": "default-scheduler"}],
        }
    )
    assert (
        'cfg.yaml: KubeSchedulerConfiguration: profiles[0].pluginConfig[1].name: Duplicate value: "NodeResourcesFit"'
        in lines
    )
    assert (
        'cfg.yaml: KubeSchedulerConfiguration: profiles[1].schedulerName: Duplicate value: "default-scheduler"' in lines
    )


ARGS_CASES = [
    ("NodeResourcesFit", {"scoringStrategy": {"type": "Most"}}, 'scoringStrategy.type: Unsupported value: "Most": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}, {"utilization": 40, "score": 1}]}}}, "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 1}, {"utilization": 40, "score": 1}]}}}, "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 40: utilization values must be sorted in increasing order"),
    ("NodeResourcesFit", {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}}, "scoringStrategy.resources[0].weight: Invalid value: 0: resource weight of cpu not in valid range [1, 100]"),
    ("NodeResourcesFit", {"ignoredResources": "gpu"}, 'ignoredResources: Invalid value: "gpu": must be a list'),
    ("NodeResourcesFit", {"scoringStrategy": {"typo": 1}}, "scoringStrategy.typo: Invalid value: unknown field"),
    ("NodeResourcesBalancedAllocation", {"resources": [{"weight": 1}]}, "resources[0].name: Required value"),
    ("PodTopologySpread", {"defaultingType": "Other"}, 'defaultingType: Unsupported value: "Other": supported values: "List", "System"'),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [{"maxSkew": "one"}]}, 'defaultConstraints[0].maxSkew: Invalid value: string: must be an integer'),
    ("InterPodAffinity", {"hardPodAffinityWeight": 101}, "hardPodAffinityWeight: Invalid value: 101: not in valid range [0-100]"),
    ("InterPodAffinity", {"ignorePreferredTermsOfExistingPods": "yes"}, 'ignorePreferredTermsOfExistingPods: Invalid value: "yes": must be a boolean'),
    ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: Invalid value: array: must be an object"),
    ("GpuShare", {"policy": "greedy"}, 'policy: Unsupported value: "greedy": supported values: '),
    ("TopologyPlacementGenerator", {"levels": ["rack", "rack"]}, 'levels[1]: Duplicate value: "rack"'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("plugin", "args", "message"), ARGS_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(ARGS_CASES)]
)
def test_each_plugin_validates_its_args(plugin: str, args: Any, message: str) -> None:
    lines = _plugin_args(plugin, args)
    prefix = "cfg.yaml: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].args."
    assert any(x.startswith(prefix + message) for x in lines), lines


@pytest.mark.parametrize("name", sorted(n for n, s in REGISTRY.items() if s.parse_args is not None))
def test_every_parser_takes_empty_args_and_refuses_a_string(name: str) -> None:
    parse = REGISTRY[name].parse_args
    assert parse is not None
    assert parse(None) == parse({})  # no args: the plugin's defaults
    assert _plugin_args(name, "x") == [
        'cfg.yaml: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].args: Invalid value: "x": must be an object'
    ]


def test_lines_point_at_the_field(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(HEAD + "  pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 500\n")
    with pytest.raises(InputError) as info:
        load_config(str(cfg))
    assert info.value.lines == [
        f"{cfg}:8: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].args.hardPodAffinityWeight: "
        "Invalid value: 500: not in valid range [0-100]"
    ]
