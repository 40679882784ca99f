"""Numeric flags follow the one rule: a bad value is a usage error naming the flag (exit 2), before any work;
click's own FLOAT and INT would take nan, inf and 1_000 (docs/validation.md, "Command-line flags")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.cli import cli

BAD = {
    ("simulate", "--jobs"): ["0", "-5", "1000001", "1e3", "1_000", "nan"],
    ("simulate", "--seed"): ["1.5", "1_000", "abc", "١٢"],
    ("simulate", "--node-mtbf-hours"): ["nan", "inf", "-inf", "0", "-1", "1e308", "876601", "1_000", "x"],
    ("simulate", "--node-repair-hours"): ["nan", "0", "-0.5"],
    ("simulate", "--pod-failure-probability"): ["nan", "-0.1", "1.5", "inf"],
    ("simulate", "--seeds"): ["0", "-1", "1001"],
    ("schedule", "--seed"): ["nan", "1.5", "1_0"],
    ("serve", "--health-port"): ["99999", "-1", "abc"],
    ("serve", "--kube-api-qps"): ["nan", "-1", "inf"],
    ("serve", "--kube-api-burst"): ["0", "-3"],
    ("serve", "--leader-elect-lease-duration"): ["nan", "0", "-15"],
}


@pytest.mark.parametrize(("command", "flag", "value"), [(c, f, v) for (c, f), vs in BAD.items() for v in vs])
def test_a_bad_flag_value_is_a_usage_error_naming_the_flag(command: str, flag: str, value: str) -> None:
    args = ["-f", "/nonexistent"] if command == "schedule" else []
    result = CliRunner().invoke(cli, [command, *args, flag, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{flag}'" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("flag", "value"), [("--seed", "-7"), ("--seed", "123456789012345678901234567890"), ("--jobs", "3")]
)
def test_good_values_pass(tmp_path: Path, flag: str, value: str) -> None:
    result = CliRunner().invoke(cli, ["simulate", "--jobs", "3", flag, value, "--report", f"{tmp_path}/r.html"])
    assert result.exit_code == 0, result.output


def test_a_policy_that_is_neither_built_in_nor_a_file_names_the_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["simulate", "--jobs", "3", "--policy", "nope", "--report", f"{tmp_path}/r.html"])
    assert result.exit_code == 2
    assert result.stderr.startswith('--policy: unknown policy "nope" (known: pod-by-pod, gang,')


def test_an_unknown_preset_names_the_flag() -> None:
    result = CliRunner().invoke(cli, ["simulate", "--preset", "helios"])
    assert result.exit_code == 2 and "Invalid value for '--preset': 'helios' is not 'philly'" in result.stderr
