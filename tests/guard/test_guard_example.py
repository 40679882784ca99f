"""The documented example, end to end: examples/guard/deploy.sh calls install-tools.sh, which calls curl on the
code host. Enforce mode must name the whole chain; audit mode plus `report` must list every dependency."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import PHALANX, Net

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "guard"


def test_enforce_names_the_chain_from_the_script_to_curl(guard, net: Net) -> None:
    r = guard(str(EXAMPLE / "deploy.sh"), "--policy", str(EXAMPLE / "guard.yaml"))
    assert r.returncode == 0, r.stderr
    assert "deploy: could not fetch tools" in r.stdout
    line = next(x for x in r.stderr.splitlines() if "blocked dns github.com" in x)
    assert "deploy.sh -> install-tools.sh -> curl -sSL -m 10 -o /dev/null https://github.com/" in line


def test_audit_then_report_lists_every_dependency(guard, net: Net, tmp_path: Path) -> None:
    r = guard(str(EXAMPLE / "deploy.sh"), "--audit", "--deny", "github.com")
    assert r.returncode == 0, r.stderr
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in r.events))
    md = subprocess.run([*PHALANX, "guard", "report", "--format", "markdown", str(events)], capture_output=True,
                        text=True, timeout=60, check=True).stdout  # fmt: skip
    assert "| `github.com` | dns | **audit** |" in md
    assert "`migrations.internal.example`" in md
    assert "install-tools.sh" in md
