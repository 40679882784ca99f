"""Rendering for people: the ScheduleResult as rich tables (pods, PodGroups, per-node usage)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["render_nodes", "render_simulation", "render_table"]

_PHASE_STYLE = {
    "Scheduled": "green",
    "Running": "cyan",
    "Unschedulable": "red",
    "Waiting": "yellow",
    "Evicted": "magenta",
}


_MAX_NODES = 50


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value / 1000:g}"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return f"{value / 2**30:.3g}Gi"
    return str(value)


def render_nodes(nodes: list[dict[str, Any]], console: Console) -> None:
    table = Table(title="Nodes (requested / allocatable)")
    resources = list(nodes[0]["resources"]) if nodes else []
    for col in ("NODE", "PODS", *(r.upper() if "/" not in r else r for r in resources)):
        table.add_column(col)
    for n in nodes[:_MAX_NODES]:
        used, cap = n["pods"]
        cells = [f"{_amount(r, u)}/{_amount(r, a)}" for r, (u, a) in n["resources"].items()]
        table.add_row(n["name"], f"{used}/{cap}", *cells)
    if len(nodes) > _MAX_NODES:
        table.caption = f"{len(nodes) - _MAX_NODES} more nodes not shown (use -o json for everything)"
    console.print(table)


def render_table(result: dict[str, Any], console: Console, nodes: list[dict[str, Any]] | None = None) -> None:
    pods = Table(title="Pods", show_lines=False, expand=False)
    for col in ("NAMESPACE", "NAME", "PHASE", "NODE", "REASON"):
        pods.add_column(col, overflow="fold")
    for p in result["pods"]:
        style = _PHASE_STYLE.get(p["phase"], "")
        why = p["message"] if p["phase"] not in ("Scheduled", "Running") else ""
        pods.add_row(p["namespace"], p["name"], f"[{style}]{p['phase']}[/]", p["node"] or "-", why)
    console.print(pods)
    if result["podGroups"]:
        groups = Table(title="PodGroups")
        for col in ("NAMESPACE", "NAME", "POLICY", "SCHEDULED", "PodGroupScheduled", "MESSAGE"):
            groups.add_column(col, overflow="fold")
        for g in result["podGroups"]:
            cond = g["condition"]
            policy = "basic" if g["minCount"] is None else f"gang minCount={g['minCount']}"
            status = "-" if cond is None else f"{cond['status']} ({cond['reason']})"
            style = "" if cond is None else ("green" if cond["status"] == "True" else "red")
            groups.add_row(
                g["namespace"],
                g["name"],
                policy,
                str(g["scheduledPods"]),
                f"[{style}]{status}[/]",
                "" if cond is None else cond["message"],
            )
        console.print(groups)
    if nodes:
        render_nodes(nodes, console)
    phases = Counter(p["phase"] for p in result["pods"])
    stats = result["stats"]
    summary = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items()))
    console.print(
        f"{len(result['pods'])} pods: {summary}. Scheduled {stats['podsScheduled']} pods in "
        f"{stats['scheduleSeconds']:.3f}s ({stats['podsPerSecond']} pods/s)."
    )


def render_simulation(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], console: Console) -> None:
    """The policy comparison of `phalanx simulate` (rows computed by phalanx.sim.metrics)."""
    table = Table(title=title)
    for col in header:
        table.add_column(col.upper())
    for row in rows:
        table.add_row(*row)
    console.print(table)
