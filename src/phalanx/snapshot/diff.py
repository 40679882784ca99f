"""``phalanx schedule --diff``: every pod and PodGroup whose outcome differs between phalanx's own rules and
kube-scheduler v1.36's (``--compat v1.36``), and the rule that changed it.

Outcomes compared: a pod's phase, node and nominated node; a PodGroup's scheduled pods and its PodGroupScheduled
status and reason (messages are not outcomes). Attribution, in order: the rules the phalanx run itself names for
the object (the engine reports a rule where it changed a decision, ``pods[].rules``); else, for an object moved
only as a consequence (a pod displaced by a gang a rule placed), each rule that acted in the run is turned off
alone and the object's outcome watched: the rules whose removal changes it; else all rules that acted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TextIO

from phalanx.scheduling.config import SchedulerConfig
from phalanx.scheduling.rules import COMPAT_V1_36, RULES, Rules
from phalanx.snapshot.result import build_result
from phalanx.snapshot.schedule import schedule_snapshot

__all__ = ["Outcomes", "diff_results", "diff_snapshot", "outcomes", "render_rows"]

Key = tuple[str, str, str]  # kind, namespace, name
Outcomes = dict[Key, dict[str, Any]]


def outcomes(result: Mapping[str, Any]) -> Outcomes:
    """The compared outcome of every pod and PodGroup of a ScheduleResult."""
    out: Outcomes = {}
    for p in result["pods"]:
        out[("Pod", p["namespace"], p["name"])] = {
            "phase": p["phase"],
            "node": p["node"],
            "nominatedNode": p.get("nominatedNode"),
        }
    for g in result["podGroups"]:
        cond = g["condition"] or {}
        out[("PodGroup", g["namespace"], g["name"])] = {
            "scheduledPods": g["scheduledPods"],
            "status": cond.get("status"),
            "reason": cond.get("reason"),
        }
    return out


def _named_rules(result: Mapping[str, Any]) -> dict[Key, list[str]]:
    named: dict[Key, list[str]] = {}
    for p in result["pods"]:
        if p.get("rules"):
            named[("Pod", p["namespace"], p["name"])] = p["rules"]
    for g in result["podGroups"]:
        if g.get("rules"):
            named[("PodGroup", g["namespace"], g["name"])] = g["rules"]
    return named


def diff_results(
    phalanx: Mapping[str, Any],
    compat: Mapping[str, Any],
    rules: Rules,
    rerun: Callable[[Rules], Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The ``diff`` list of the ScheduleResult. ``phalanx`` and ``compat`` are the two runs' results, ``rules`` the
    phalanx run's rules; ``rerun(rules)`` schedules the same snapshot again with other rules (for attribution)."""
    mine, theirs = outcomes(phalanx), outcomes(compat)
    differing = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    named = _named_rules(phalanx)
    acted = sorted({r for rs in named.values() for r in rs})
    blame: dict[Key, set[str]] = {k: set(named.get(k, ())) for k in differing}
    unexplained = [k for k in differing if not blame[k]]
    if unexplained and acted:
        for rule in acted:
            without = outcomes(rerun(replace(rules, **{rule.replace("-", "_"): False})))
            for k in unexplained:
                if without.get(k) != mine.get(k):
                    blame[k].add(rule)
        for k in unexplained:
            blame[k] = blame[k] or set(acted)
    return [
        {
            "kind": kind,
            "namespace": ns,
            "name": name,
            "phalanx": mine.get((kind, ns, name)),
            "v1.36": theirs.get((kind, ns, name)),
            "rules": sorted(blame[(kind, ns, name)]),
        }
        for kind, ns, name in differing
    ]


def render_rows(diff: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(object, phalanx, v1.36, rules) text rows for the table view."""
    return [
        (
            f"{d['kind']} {d['namespace']}/{d['name']}",
            _text(d["phalanx"]),
            _text(d["v1.36"]),
            ", ".join(d["rules"]) or "-",
        )
        for d in diff
    ]


def _text(outcome: Mapping[str, Any] | None) -> str:
    if outcome is None:
        return "-"
    if "phase" in outcome:
        where = outcome["node"] or (f"nominated {outcome['nominatedNode']}" if outcome.get("nominatedNode") else "")
        return f"{outcome['phase']} {where}".strip()
    status = f"{outcome['status']}/{outcome['reason']}" if outcome["status"] is not None else "no condition"
    return f"{outcome['scheduledPods']} scheduled, {status}"


def diff_snapshot(
    result: Mapping[str, Any],
    paths: Sequence[str],
    config: SchedulerConfig,
    scheduler_name: str | None,
    seed: int,
    stdin: Callable[[], TextIO | None],
    async_victims: bool = False,
) -> list[dict[str, Any]]:
    """``--diff`` for a run made with ``config`` (either mode) whose ScheduleResult is ``result``: the snapshot is
    scheduled again in the other mode (and once per acting rule when attribution needs it). ``stdin`` gives a
    fresh reader of the snapshot's standard input for each run."""

    def run(rules: Rules) -> dict[str, Any]:
        # Every rule off is v1.36: its release too (member order, no trees, v1.36's Job controller), so the column
        # is what kube-scheduler v1.36 does with the run's feature gates. A run with some rules on is phalanx's.
        compat = "v1.36" if rules == COMPAT_V1_36 else None
        sched, _, timings = schedule_snapshot(
            paths, replace(config, rules=rules, compat=compat), scheduler_name, stdin(), seed, async_victims
        )
        return build_result(sched, timings)

    if config.rules == RULES:
        return diff_results(result, run(COMPAT_V1_36), RULES, run)
    return diff_results(run(RULES), result, RULES, run)
