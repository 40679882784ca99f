"""Node failures and drains for the simulator: the ``nodeEvents`` of a trace or cluster spec, and a seeded
generator of failures (mean time between failures per node, repair time). Formats are in docs/simulate.md.

An event names one node, or ``count`` nodes of a pool (the first ones in name order that the action applies to:
nodes up for ``fail``, schedulable nodes for ``drain``, failed or cordoned nodes for ``recover``).
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from phalanx.api.errors import FieldError
from phalanx.api.validation.fields import union
from phalanx.sim.inputs import MAX_SECONDS, REQUIRED, Fields

__all__ = [
    "ACTIONS",
    "MAX_GENERATED_FAILURES",
    "MAX_HOURS",
    "NodeEvent",
    "NodeFailures",
    "failure_budget_problem",
    "parse_failures",
    "parse_node_events",
]

ACTIONS = ("fail", "drain", "recover")
_FIELDS = {"time", "node", "pool", "count", "action", "duration"}
MAX_HOURS = MAX_SECONDS / 3600
# Each generated failure costs the event loop a node deletion and a scheduling pass (2 ms on 6 nodes, more on big
# clusters): past this many a run takes many minutes, which to a user is a hang.
MAX_GENERATED_FAILURES = 20_000


@dataclass(frozen=True)
class NodeEvent:
    """``action`` on ``node`` (or on ``count`` nodes of ``pool``) at ``time`` seconds; with ``duration`` the
    node recovers that many seconds later, without it it stays down (or cordoned) until a ``recover``."""

    time: float
    action: str
    node: str = ""
    pool: str = ""
    count: int = 1
    duration: float | None = None


@dataclass(frozen=True)
class NodeFailures:
    """Random node failures: each node fails after an exponential time with mean ``mtbf_hours`` and comes back
    ``repair_hours`` later. The simulator gives each node its own generator, seeded by the run's seed and the
    node's name, so a run is reproducible and one node's history does not depend on the others."""

    mtbf_hours: float
    repair_hours: float = 4.0

    def next_failure(self, rng: random.Random, now: float) -> float:
        return now + rng.expovariate(1.0 / (self.mtbf_hours * 3600))


def parse_node_events(
    raw: Any, fields: Fields, prefix: str = "nodeEvents", targets: tuple[Collection[str], Collection[str]] | None = None
) -> list[NodeEvent]:
    """The ``nodeEvents`` list of a trace or cluster spec, sorted by time; every problem goes to ``fields`` with
    its index and field. With ``targets`` (node names, pool names), an event naming neither is an error."""
    events = []
    for i, item in enumerate(fields.items(raw, prefix)):
        event = _event(item, fields, f"{prefix}[{i}]")
        if event is None:
            continue
        if targets is not None:
            _check_target(event, fields, f"{prefix}[{i}]", targets)
        events.append(event)
    return sorted(events, key=lambda e: e.time)


def _event(item: Any, fields: Fields, at: str) -> NodeEvent | None:
    if not isinstance(item, dict):
        fields.mapping(item, at, _FIELDS)  # the error
        return None
    raw = fields.mapping(item, at, _FIELDS)
    action = fields.text(raw.get("action"), f"{at}.action", REQUIRED)
    if action and action not in ACTIONS:
        fields.add(FieldError.unsupported(f"{at}.action", action, list(ACTIONS)))
    node = fields.text(raw.get("node"), f"{at}.node", "")
    pool = fields.text(raw.get("pool"), f"{at}.pool", "")
    for err in union(at, {"node": bool(node), "pool": bool(pool)}):
        fields.add(err)
    count = fields.integer(raw.get("count"), f"{at}.count", 1, low=1)
    time = fields.number(raw.get("time"), f"{at}.time", REQUIRED)
    duration = None
    if raw.get("duration") is not None:
        duration = fields.number(raw.get("duration"), f"{at}.duration", REQUIRED, positive=True)
    return NodeEvent(time, action, node, pool, count, duration)


def _check_target(event: NodeEvent, fields: Fields, at: str, targets: tuple[Collection[str], Collection[str]]) -> None:
    nodes, pools = targets
    if event.node and event.node not in nodes:
        fields.add(FieldError.not_found(f"{at}.node", event.node))
    if event.pool and event.pool not in pools:
        fields.add(FieldError.not_found(f"{at}.pool", event.pool))


def parse_failures(raw: Any, fields: Fields) -> NodeFailures | None:
    """The ``failures: {mtbfHours, repairHours}`` of a cluster spec (None when absent)."""
    if raw is None:
        return None
    spec = fields.mapping(raw, "failures", {"mtbfHours", "repairHours"})
    mtbf = fields.number(spec.get("mtbfHours"), "failures.mtbfHours", REQUIRED, high=MAX_HOURS, positive=True)
    repair = fields.number(spec.get("repairHours"), "failures.repairHours", 4.0, high=MAX_HOURS, positive=True)
    return NodeFailures(mtbf, repair)


def failure_budget_problem(failures: NodeFailures, nodes: int, horizon: float) -> str:
    """Why generating ``failures`` for ``nodes`` nodes would not end in reasonable time (``""`` when it would):
    every run lasts at least ``horizon`` seconds (the latest submit + duration of a job), and each node fails about
    once per ``mtbf + repair``, so a tiny mean time between failures (say 1e-9 hours) means billions of events."""
    cycle = (failures.mtbf_hours + failures.repair_hours) * 3600
    expected = nodes * horizon / cycle
    if expected <= MAX_GENERATED_FAILURES:
        return ""
    return (
        f"too small: {nodes} nodes over at least {horizon:.0f} s of simulated time would fail about "
        f"{expected:.3g} times, and at most {MAX_GENERATED_FAILURES} generated failures are simulated "
        "(raise the mean time between failures or the repair time, or shorten the trace)"
    )
