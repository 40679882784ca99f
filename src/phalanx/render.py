"""Rendering for people: the ScheduleResult as rich tables (pods, PodGroups, per-node usage)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["render_table"]

_PHASE_STYLE = {
    "Scheduled": "green",
    "Running": "cyan",
    "Unschedulable": "red",
    "Waiting": "yellow",
    "Evicted": "magenta",
}


def render_table(result: dict[str, Any], console: Console) -> None:
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
    phases = Counter(p["phase"] for p in result["pods"])
    stats = result["stats"]
    summary = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items()))
    console.print(
        f"{len(result['pods'])} pods: {summary}. Scheduled {stats['podsScheduled']} pods in "
        f"{stats['scheduleSeconds']:.3f}s ({stats['podsPerSecond']} pods/s)."
    )
