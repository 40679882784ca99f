"""The phalanx command line: parses arguments, calls the library, renders results. No logic of its own."""

from __future__ import annotations

import click

from phalanx.guard.cli import guard


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="phalanx")
def cli() -> None:
    """Workload-aware scheduling for AI/ML clusters, and a deploy guard."""


cli.add_command(guard)


def main() -> None:
    cli(prog_name="phalanx")
