"""Rendering for people: the ScheduleResult as rich tables (pods, PodGroups, per-node usage)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["render_claims", "render_diff", "render_nodes", "render_table"]

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
        gib = value / 2**30
        return f"{gib:.0f}Gi" if gib >= 100 else f"{gib:.3g}Gi"
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


def render_claims(result: dict[str, Any], console: Console) -> None:
    """Which devices each claim got (per request, pool/device), and for a claim left unallocated, why its pods
    did not get them."""
    waiting = {(p["namespace"], p["name"]): p["message"] for p in result["pods"] if p["phase"] != "Scheduled"}
    table = Table(title="ResourceClaims")
    for col in ("NAMESPACE", "NAME", "RESERVED FOR", "DEVICES", "NODE"):
        table.add_column(col, overflow="fold")
    for c in result["resourceClaims"]:
        consumers = ", ".join(r["name"] for r in c["reservedFor"]) or "-"
        allocation = c["allocation"]
        if allocation is None:
            why = next(
                (waiting[(c["namespace"], n)] for n in _consumer_pods(result, c) if (c["namespace"], n) in waiting), ""
            )
            table.add_row(c["namespace"], c["name"], consumers, f"[red]not allocated[/] {why}".strip(), "-")
            continue
        by_request: dict[str, list[str]] = {}
        for r in allocation["devices"]["results"]:
            by_request.setdefault(r["request"], []).append(f"{r['pool']}/{r['device']}")
        devices = "; ".join(f"{req}: {' '.join(devs)}" for req, devs in by_request.items())
        terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
        pinned = [v for t in terms for f in t.get("matchFields", []) for v in f.get("values", [])]
        table.add_row(
            c["namespace"], c["name"], consumers, devices, ", ".join(pinned) or ("any" if not terms else "selector")
        )
    console.print(table)


def _consumer_pods(result: dict[str, Any], claim: dict[str, Any]) -> list[str]:
    """Pods a claim was generated for (its name starts with the pod's), for an unallocated claim's reason."""
    names = [p["name"] for p in result["pods"] if p["namespace"] == claim["namespace"]]
    return [n for n in names if claim["name"].startswith(f"{n}-")]


def render_composites(result: dict[str, Any], console: Console) -> None:
    """CompositePodGroup trees: policy, parent, children satisfied of those needed, condition."""
    table = Table(title="CompositePodGroups")
    for col in ("NAMESPACE", "NAME", "POLICY", "PARENT", "CHILDREN", "CompositePodGroupScheduled", "MESSAGE"):
        table.add_column(col, overflow="fold")
    for g in result["compositePodGroups"]:
        cond = g["condition"]
        policy = "basic" if g["minGroupCount"] is None else f"gang minGroupCount={g['minGroupCount']}"
        status = "-" if cond is None else f"{cond['status']} ({cond['reason']})"
        style = "" if cond is None else ("green" if cond["status"] == "True" else "red")
        children = f"{g['satisfiedChildren']}/{len(g['children'])} satisfied: {', '.join(g['children'])}"
        table.add_row(
            g["namespace"],
            g["name"],
            policy,
            g.get("parent", "-"),
            children,
            f"[{style}]{status}[/]",
            "" if cond is None else cond["message"],
        )
    console.print(table)


def render_table(result: dict[str, Any], console: Console, nodes: list[dict[str, Any]] | None = None) -> None:
    pods = Table(title="Pods", show_lines=False, expand=False)
    for col in ("NAMESPACE", "NAME", "PHASE", "NODE", "REASON"):
        pods.add_column(col, overflow="fold")
    for p in result["pods"]:
        style = _PHASE_STYLE.get(p["phase"], "")
        why = p["message"] if p["phase"] not in ("Scheduled", "Running") else ""
        node = p["node"] or "-"
        if p.get("candidateNodes"):
            node += f" (1 of {len(p['candidateNodes'])} candidates)"  # kube-scheduler picks one at random
        if p.get("rules"):
            why = f"{why} [rules: {', '.join(p['rules'])}]".strip()
        pods.add_row(p["namespace"], p["name"], f"[{style}]{p['phase']}[/]", node, why)
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
    if result.get("compositePodGroups"):
        render_composites(result, console)
    if result["resourceClaims"]:
        render_claims(result, console)
    if nodes:
        render_nodes(nodes, console)
    if "diff" in result:
        render_diff(result, console)
    phases = Counter(p["phase"] for p in result["pods"])
    stats = result["stats"]
    summary = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items()))
    mode = result["mode"]
    rules = f"compatibility mode {mode['compat']}" if mode["compat"] else "phalanx's rules"
    console.print(
        f"{len(result['pods'])} pods: {summary}. Scheduled {stats['podsScheduled']} pods in "
        f"{stats['scheduleSeconds']:.3f}s ({stats['podsPerSecond']} pods/s), {rules}."
    )


def render_diff(result: dict[str, Any], console: Console) -> None:
    """Where phalanx's rules and kube-scheduler v1.36 disagree, and the rule behind each difference."""
    from phalanx.snapshot.diff import render_rows

    rows = render_rows(result["diff"])
    if not rows:
        console.print("No pod or PodGroup fares differently under kube-scheduler v1.36 (--diff).")
        return
    table = Table(title="Differences from kube-scheduler v1.36 (--diff)")
    for col in ("OBJECT", "PHALANX", "KUBE-SCHEDULER V1.36", "RULES"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(table)
