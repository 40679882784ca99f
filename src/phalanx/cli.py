"""The phalanx command line: parses arguments, calls the library, renders results. No logic of its own.

Exit codes: 0 ran (even if some pods stay unschedulable); 2 bad input or usage; 1 internal error (a bug: a short
message on stderr and the traceback in a file).
"""

from __future__ import annotations

import json
import sys
import tempfile
import traceback
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click
import yaml
from rich.console import Console

from phalanx.api.errors import InputError
from phalanx.guard.cli import guard

F = TypeVar("F", bound=Callable[..., Any])


def _exits(func: F) -> F:
    """Map input errors to exit 2 (every problem listed) and unexpected errors to exit 1."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            for line in exc.lines:
                click.echo(line, err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception:
            with tempfile.NamedTemporaryFile("w", prefix="phalanx-crash-", suffix=".txt", delete=False) as f:
                traceback.print_exc(file=f)
            click.echo(f"phalanx: internal error (a bug); details in {f.name}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="phalanx")
def cli() -> None:
    """Workload-aware scheduling for AI/ML clusters, and a deploy guard."""


_files = click.option(
    "-f",
    "--filename",
    "paths",
    multiple=True,
    required=True,
    help="File, directory (recursive: *.yaml, *.yml, *.json) or - for stdin. Repeatable.",
)


@cli.command()
@_files
@_exits
def validate(paths: tuple[str, ...]) -> None:
    """Check manifests as kube-apiserver would: one line per problem, exit 2 if any."""
    from phalanx.api.loader import load
    from phalanx.api.validation import validate as validate_inventory

    problems = validate_inventory(load(paths))
    if problems:
        raise InputError(problems)
    click.echo("valid", err=True)


@cli.command()
@_files
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="KubeSchedulerConfiguration YAML.")
@click.option("--scheduler-name", default=None, help="Only schedule pods with this spec.schedulerName.")
@click.option("--seed", default=0, show_default=True, help="Seed for tie-breaking between equal nodes.")
@_exits
def schedule(
    paths: tuple[str, ...], output: str, config_path: str | None, scheduler_name: str | None, seed: int
) -> None:
    """What would a v1.36 workload-aware scheduler do with this snapshot?"""
    from phalanx.scheduling.config import load_config
    from phalanx.scheduling.snapshot import build_result, node_summary, schedule_snapshot

    config = load_config(config_path) if config_path else None
    for warning in config.warnings if config else []:
        click.echo(f"warning: {warning}", err=True)
    sched, _, timings = schedule_snapshot(paths, config, scheduler_name, seed=seed)
    result = build_result(sched, timings)
    if output == "json":
        click.echo(json.dumps(result, indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(result, sort_keys=False), nl=False)
    else:
        from phalanx.render import render_table

        render_table(result, Console(width=200 if not sys.stdout.isatty() else None), node_summary(sched))


cli.add_command(guard)


def main() -> None:
    cli(prog_name="phalanx")
