"""``phalanx schedule`` on the snapshot kube-scheduler got (as read back from the API server), through the CLI in
this process (CliRunner: the same code path as the command, without a Python start-up per snapshot).

Which pods have a node that phalanx's own scores decide: phalanx breaks ties between equally scored nodes with a
seeded hash where kube-scheduler picks at random, so a chosen node is only comparable when there was no tie. Two
things are checked: phalanx's node selection for the pod had a single best node (read off the total scores the
engine selects from), and every tie-break seed put the pod on the same node (which also catches ties earlier in
the run that moved it, and ties between topology domains).

A fifth run (seed 0) takes the other timing of preemption victims (``other_timing``): with ``--async-preemption``
they keep their nodes until the pods already queued have been tried, as kube-scheduler's asynchronous deletion
mostly leaves them; without it, they are gone at once. The four main runs take the harness's timing (``async_victims``,
default: at once); the harness marks a disagreement async-preemption when the fifth run gives kube-scheduler's
outcome.

``COMPAT`` switches the harness to ``phalanx schedule --compat v1.36 --feature-gates ...`` (``--compat v1.37``
against a v1.37 control plane; issue #13, deliverables 1 and 2) as soon as the command has the flag; until then
phalanx runs with its default profile.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from phalanx.cli import cli, schedule
from phalanx.scheduling.profile import Profile

__all__ = ["COMPAT", "PhalanxOutcome", "phalanx_args", "run_phalanx"]

SEEDS = (0, 1, 2, 3)
COMPAT = any(p.name == "compat" for p in schedule.params)


def phalanx_args(gates: dict[str, bool], compat: str = "v1.36") -> list[str]:
    """The flags that make phalanx answer for kube-scheduler of release ``compat`` with the control plane's
    feature gates."""
    if not COMPAT:
        return []
    flags = ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(gates.items()))
    return ["--compat", compat, "--feature-gates", flags]


@dataclass
class PhalanxOutcome:
    """What phalanx decided for the pods pending at the start (keys are namespace/name), with seed 0."""

    placed: dict[str, str] = field(default_factory=dict)
    nominated: dict[str, str] = field(default_factory=dict)
    evicted: dict[str, str] = field(default_factory=dict)  # victim -> preemptor (Kind/namespace/name)
    conditions: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    unique: set[str] = field(default_factory=set)  # placed pods whose node no tie decided
    # placed pods whose node was a tie: the equally best nodes (--compat v1.36 reports them as candidateNodes)
    candidates: dict[str, list[str]] = field(default_factory=dict)
    # (scheduled set, victims) for each seed: more than one means the outcome itself depends on tie-breaks
    variants: list[tuple[frozenset[str], frozenset[str]]] = field(default_factory=list)
    # the same snapshot with the other victim timing (seed 0): lingering until the queue drains, or gone at once
    other_timing: PhalanxOutcome | None = None
    error: str = ""
    seconds: float = 0.0


@contextmanager
def _recording_ties() -> Iterator[dict[str, int]]:
    """Per pod, how many nodes shared the best total score the last time the engine selected a node for it."""
    best: dict[str, int] = {}
    original = Profile.select

    def select(self: Profile, pod: Any, rows: Any, total: Any) -> int:
        best[pod.key] = int((total == total.max()).sum())
        return original(self, pod, rows, total)

    Profile.select = select  # type: ignore[method-assign]
    try:
        yield best
    finally:
        Profile.select = original  # type: ignore[method-assign]


def _invoke(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"phalanx {' '.join(args)} exited {result.exit_code}: {result.stderr or result.output}")
    return dict(json.loads(result.stdout))


def run_phalanx(
    objects: Sequence[dict[str, Any]],
    pending: Sequence[str],
    config: dict[str, Any] | None,
    scheduler_name: str | None,
    gates: dict[str, bool],
    seeds: Sequence[int] = SEEDS,
    compat: str = "v1.36",
    async_victims: bool = False,
) -> PhalanxOutcome:
    with tempfile.TemporaryDirectory(prefix="diffconf-") as tmp:
        snap = Path(tmp) / "snapshot.json"
        snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
        args = ["schedule", "-f", str(snap), "-o", "json", *phalanx_args(gates, compat)]
        if config:
            cfg = Path(tmp) / "config.json"
            cfg.write_text(json.dumps(config))
            args += ["--config", str(cfg)]
        if scheduler_name:
            args += ["--scheduler-name", scheduler_name]
        timing, other = (["--async-preemption"], []) if async_victims else ([], ["--async-preemption"])
        try:
            with _recording_ties() as best:
                first = _invoke([*args, *timing, "--seed", str(seeds[0])])
            others = [_invoke([*args, *timing, "--seed", str(s)]) for s in seeds[1:]]
            lingering = _invoke([*args, *other, "--seed", str(seeds[0])])
        except RuntimeError as exc:
            return PhalanxOutcome(error=str(exc))
    out = _outcome(first, set(pending))
    out.other_timing = _outcome(lingering, set(pending))
    out.seconds = float(first.get("stats", {}).get("scheduleSeconds", 0.0))
    results = [first, *others]
    nodes = [_outcome(r, set(pending)).placed for r in results]
    out.unique = {
        k
        for k, node in out.placed.items()
        if best.get(k, 1) == 1 and k not in out.candidates and all(n.get(k) == node for n in nodes)
    }
    out.variants = sorted({_signature(_outcome(r, set(pending))) for r in results}, key=str)
    return out


def _signature(o: PhalanxOutcome) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(o.placed), frozenset(o.evicted)


def _outcome(result: dict[str, Any], pending: set[str]) -> PhalanxOutcome:
    out = PhalanxOutcome()
    for pod in result["pods"]:
        key = f"{pod['namespace']}/{pod['name']}"
        if key not in pending:
            continue
        if pod["phase"] == "Scheduled":
            out.placed[key] = pod["node"]
            if len(pod.get("candidateNodes") or []) > 1:
                out.candidates[key] = list(pod["candidateNodes"])
        else:
            if pod.get("nominatedNode"):
                out.nominated[key] = pod["nominatedNode"]
            out.messages[key] = pod.get("message") or ""
    for ev in result.get("evictions") or []:
        p = ev.get("preemptor") or {}
        out.evicted[f"{ev['namespace']}/{ev['name']}"] = f"{p.get('kind')}/{p.get('namespace')}/{p.get('name')}"
    for pg in result.get("podGroups") or []:
        c = pg.get("condition")
        out.conditions[f"{pg['namespace']}/{pg['name']}"] = (c["status"], c.get("reason", "")) if c else None
    return out
