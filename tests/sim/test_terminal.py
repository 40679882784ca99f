"""The terminal summary fits 100 columns: narrow tables whose values are never wrapped or cut, policy names whole;
the detail stays in the report and in -o json."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from phalanx.cli import cli
from phalanx.sim.simulator import POLICIES


@pytest.mark.parametrize("seeds", ["1", "2"], ids=["one seed", "mean over seeds"])
def test_the_summary_fits_100_columns(tmp_path: Path, seeds: str) -> None:
    args = ["simulate", "--jobs", "30", "--seeds", seeds, "--workers", "2", "--report", str(tmp_path / "r.html")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "…" not in result.stdout  # nothing truncated
    rows = [line for line in lines if line.startswith("│")]
    tables = 3 if seeds == "1" else 2
    assert len(rows) == tables * len(POLICIES)  # one line per policy and table: no value wrapped onto a second
    for name in POLICIES:
        assert sum(row.split("│")[1].strip() == name for row in rows) == tables
