"""The scheduling queue: PreEnqueue gates, the active queue in PrioritySort order, and the unschedulable set
that cluster events move back to the active queue (queueing hints).

Pods, not groups, are queued, as in v1.36: when a PodGroup member is popped, the cycle pulls its other queued
members out with ``take``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import Status

__all__ = ["EVENT_HINTS", "SchedulingQueue"]

# Which cluster events can make a pod rejected by a plugin schedulable (EnqueueExtensions.EventsToRegister).
EVENT_HINTS: dict[str, frozenset[str]] = {
    "NodeResourcesFit": frozenset({"PodDelete", "NodeAdd", "NodeUpdate"}),
    "NodePorts": frozenset({"PodDelete", "NodeAdd"}),
    "TaintToleration": frozenset({"NodeAdd", "NodeUpdate"}),
    "NodeAffinity": frozenset({"NodeAdd", "NodeUpdate"}),
    "NodeUnschedulable": frozenset({"NodeAdd", "NodeUpdate"}),
    "NodeName": frozenset({"NodeAdd"}),
    "GangScheduling": frozenset({"PodAdd", "PodGroupAdd"}),
}


@dataclass
class _Entry:
    pi: PodInfo
    rejected_by: frozenset[str] = frozenset()


class SchedulingQueue:
    """Active heap ordered by (priority desc, creation asc, key); gated and unschedulable pods wait aside."""

    def __init__(self, pre_enqueue: Callable[[PodInfo], Status]) -> None:
        self._pre_enqueue = pre_enqueue
        self._heap: list[tuple[tuple[int, float, str], str]] = []
        self._active: dict[str, PodInfo] = {}
        self.gated: dict[str, tuple[PodInfo, Status]] = {}
        self.unschedulable: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._active)

    def add(self, pi: PodInfo) -> None:
        """Admit a pod: PreEnqueue decides between the active queue and the gated set."""
        status = self._pre_enqueue(pi)
        if not status.ok:
            self.gated[pi.key] = (pi, status)
            return
        self.gated.pop(pi.key, None)
        self._active[pi.key] = pi
        heapq.heappush(self._heap, (pi.sort_key(), pi.key))

    def pop(self) -> PodInfo | None:
        while self._heap:
            _, key = heapq.heappop(self._heap)
            pi = self._active.pop(key, None)
            if pi is not None:
                return pi
        return None

    def take(self, keys: Iterable[str]) -> list[PodInfo]:
        """Pull specific pods out of the active queue (``PopSpecificPod``); pods not in it are skipped."""
        return [pi for key in keys if (pi := self._active.pop(key, None)) is not None]

    def remove(self, key: str) -> None:
        self._active.pop(key, None)
        self.gated.pop(key, None)
        self.unschedulable.pop(key, None)

    def mark_unschedulable(self, pi: PodInfo, rejected_by: Iterable[str]) -> None:
        self.unschedulable[pi.key] = _Entry(pi, frozenset(rejected_by))

    def on_event(self, event: str, group_key: str | None = None) -> int:
        """Move pods that ``event`` may help back to the active queue; re-run PreEnqueue for gated pods of
        ``group_key``. Returns how many pods moved."""
        moved = 0
        for key, entry in list(self.unschedulable.items()):
            if any(event in EVENT_HINTS.get(p, ()) for p in entry.rejected_by) and (
                group_key is None or "GangScheduling" not in entry.rejected_by or entry.pi.group_key == group_key
            ):
                del self.unschedulable[key]
                self.add(entry.pi)
                moved += 1
        if event in ("PodAdd", "PodGroupAdd") and group_key is not None:
            for key, (pi, _) in list(self.gated.items()):
                if pi.group_key == group_key:
                    del self.gated[key]
                    self.add(pi)
                    moved += key in self._active
        return moved
