"""Per-pod preemption's candidates (a node and its victims) and kube-scheduler's ranking of them
(``pickOneNodeForPreemption``)."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.preemption.common import PRIORITY_OFFSET, start_time

__all__ = ["MIN_CANDIDATES_ABSOLUTE", "MIN_CANDIDATES_PERCENT", "Candidate", "rank"]

MIN_CANDIDATES_ABSOLUTE = 100  # DefaultPreemptionArgs defaults
MIN_CANDIDATES_PERCENT = 10


@dataclass
class Candidate:
    row: int
    victims: list[PodInfo]  # most important first
    pdb_violations: int
    order: int = 0


def rank(c: Candidate) -> tuple[int, int, int, int, float, int]:
    """``pickOneNodeForPreemption``: fewest PDB violations, lowest highest-victim priority, smallest priority sum,
    fewest victims, latest start of the highest-priority victims, then the first candidate found."""
    if not c.victims:
        return (0, -(1 << 62), 0, 0, 0.0, c.order)
    top = c.victims[0].priority
    total = sum(v.priority + PRIORITY_OFFSET for v in c.victims)
    earliest = min(start_time(v) for v in c.victims if v.priority == top)
    return (c.pdb_violations, top, total, len(c.victims), -earliest, c.order)
