"""Running `phalanx schedule` through click's CliRunner, with every JSON result checked against the documented
ScheduleResult schema (docs/schedule-result.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner, Result

from phalanx.cli import cli

ROOT = Path(__file__).resolve().parent.parent
RESULT_SCHEMA: dict[str, Any] = json.loads((ROOT / "docs" / "schedule-result.schema.json").read_text())


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def schedule_json(*args: str, stdin: str | None = None) -> dict[str, Any]:
    """`phalanx schedule ARGS -o json`: must exit 0 and print a valid ScheduleResult."""
    result = run("schedule", *args, "-o", "json", stdin=stdin)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(doc, RESULT_SCHEMA)
    return doc
