"""Rendering for people: the policy comparison of ``phalanx simulate`` and the fragmentation experiment's table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

__all__ = ["render_simulation"]


def render_simulation(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], console: Console) -> None:
    """The policy comparison of `phalanx simulate` (rows computed by phalanx.sim.metrics)."""
    table = Table(title=title)
    for col in header:
        table.add_column(col.upper())
    for row in rows:
        table.add_row(*row)
    console.print(table)
