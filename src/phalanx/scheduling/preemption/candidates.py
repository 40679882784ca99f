"""Per-pod preemption's candidates (a node and its victims) and kube-scheduler's ranking of them
(``pickOneNodeForPreemption``)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.preemption.common import PRIORITY_OFFSET, start_time

__all__ = ["MIN_CANDIDATES_ABSOLUTE", "MIN_CANDIDATES_PERCENT", "Candidate", "choosable", "rank"]

MIN_CANDIDATES_ABSOLUTE = 100  # DefaultPreemptionArgs defaults
MIN_CANDIDATES_PERCENT = 10


@dataclass
class Candidate:
    row: int
    victims: list[PodInfo]  # most important first
    pdb_violations: int
    order: int = 0
    rules: set[str] = field(default_factory=set)  # beyond-v1.36 rules that changed the victims
    choices: tuple[int, ...] = ()  # compatibility mode: the rows kube-scheduler could have chosen instead


def rank(c: Candidate) -> tuple[int, int, int, int, float, int]:
    """``pickOneNodeForPreemption``: fewest PDB violations, lowest highest-victim priority, smallest priority sum,
    fewest victims, latest start of the highest-priority victims, then the first candidate found."""
    if not c.victims:
        return (0, -(1 << 62), 0, 0, 0.0, c.order)
    top = c.victims[0].priority
    total = sum(v.priority + PRIORITY_OFFSET for v in c.victims)
    earliest = min(start_time(v) for v in c.victims if v.priority == top)
    return (c.pdb_violations, top, total, len(c.victims), -earliest, c.order)


def choosable(keys: Sequence[tuple[Any, ...]], window: int) -> list[int]:
    """Which of the options (sort keys, lower is better) kube-scheduler could pick when it looks at ``window`` of
    them from a random start and breaks ties by the order its parallel workers found them: those that are best
    in some window, i.e. beaten by at most ``len(keys) - window`` others (only the tied best when it sees all)."""
    slack = max(len(keys) - window, 0)
    ordered = sorted(keys)
    return [i for i, key in enumerate(keys) if bisect_left(ordered, key) <= slack]
