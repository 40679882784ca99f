"""Node failures and drains for the simulator: the ``nodeEvents`` of a trace or cluster spec, and a seeded
generator of failures (mean time between failures per node, repair time). Formats are in docs/simulate.md.

An event names one node, or ``count`` nodes of a pool (the first ones in name order that the action applies to:
nodes up for ``fail``, schedulable nodes for ``drain``, failed or cordoned nodes for ``recover``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from phalanx.api.errors import InputError

__all__ = ["ACTIONS", "NodeEvent", "NodeFailures", "parse_failures", "parse_node_events"]

ACTIONS = ("fail", "drain", "recover")
_FIELDS = {"time", "node", "pool", "count", "action", "duration"}


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


def parse_node_events(raw: Any, where: str) -> list[NodeEvent]:
    """The ``nodeEvents`` list of a trace or cluster spec; every problem is reported with its index and field."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError([f"{where}: nodeEvents: must be a list"])
    events, problems = [], []
    for i, item in enumerate(raw):
        try:
            events.append(_event(item))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"{where}: nodeEvents[{i}]: {exc}")
    if problems:
        raise InputError(problems)
    return sorted(events, key=lambda e: e.time)


def _event(item: Any) -> NodeEvent:
    if not isinstance(item, dict):
        raise TypeError("must be a mapping with time, action and node or pool")
    unknown = set(item) - _FIELDS
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}")
    action = str(item["action"])
    if action not in ACTIONS:
        raise ValueError(f'action: Unsupported value: "{action}": supported values: {", ".join(ACTIONS)}')
    node, pool = str(item.get("node") or ""), str(item.get("pool") or "")
    if bool(node) == bool(pool):
        raise ValueError("exactly one of node and pool is required")
    count = int(item.get("count", 1))
    time = float(item["time"])
    duration = None if item.get("duration") is None else float(item["duration"])
    if count < 1 or time < 0 or (duration is not None and duration <= 0):
        raise ValueError("count must be at least 1, time at least 0 and duration positive")
    return NodeEvent(time, action, node, pool, count, duration)


def parse_failures(raw: Any, where: str) -> NodeFailures | None:
    """The ``failures: {mtbfHours, repairHours}`` of a cluster spec (None when absent)."""
    if raw is None:
        return None
    try:
        if not isinstance(raw, dict) or set(raw) - {"mtbfHours", "repairHours"}:
            raise ValueError("takes mtbfHours and repairHours")
        mtbf, repair = float(raw["mtbfHours"]), float(raw.get("repairHours", 4.0))
        if mtbf <= 0 or repair <= 0:
            raise ValueError("mtbfHours and repairHours must be positive")
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError([f"{where}: failures: {exc}"]) from exc
    return NodeFailures(mtbf, repair)
