"""`phalanx guard`: the deploy guard's command group."""

from __future__ import annotations

import click


@click.group(invoke_without_command=False)
def guard() -> None:
    """Run a command so that it cannot reach forbidden hosts (cgroup v2 + eBPF + DNS policy proxy)."""
