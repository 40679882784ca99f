"""The scheduling queue: PreEnqueue gates, the active queue in PrioritySort order, and the unschedulable set
that cluster events move back to the active queue (queueing hints).

Pods, not groups, are queued, as in v1.36: when a PodGroup member is popped, the cycle pulls its other queued
members out with ``take``, and orders them by when each first entered the active queue (``entered``, kube's
InitialAttemptTimestamp; v1.36), or by when each first arrived in the queue, gated or not (``arrived``; v1.37's
order, under ``--compat v1.37``). A pod that no plugin rejected is retried on any event. Which events release
which pods comes from the plugins (``PluginSpec.events``), passed in by the engine.

Members a successful PodGroup cycle left unplaced are retried once the active queue is empty (``back_off``): v1.36
requeues every failed PodGroup member through its backoff queue (no queueing hints at group level yet), so their
next cycle comes after the pods already queued, whatever event they wait for.

An unschedulable pod that an event may help goes the same way. kube-scheduler requeues it "after backoff"
(queueAfterBackoff), and a pod that failed moments ago (within its podInitialBackoffSeconds, 1 s by default) is still
backing off. So it waits in the backoff queue, which is popped once the active queue is empty
(SchedulerPopFromBackoffQ, on since v1.33). It does not go back to its place by priority and creation among the pods
still queued. A snapshot's run takes well under a second, so every such pod is still backing off (the engine
keeps no clock, so `serve` and `simulate` treat every woken pod so too). A pod that preempted is one of them: it
waits nominated to a node, and the engine keeps that node's room for it against pods of its priority or lower
(``Scheduler._hold_nominated``), as kube-scheduler's Filter does. A gang member woken by its own group goes straight
back instead: it was gated, not attempted.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import Status

__all__ = ["SchedulingQueue"]


@dataclass
class _Entry:
    pi: PodInfo
    rejected_by: frozenset[str] = frozenset()


class SchedulingQueue:
    """Active heap ordered by (priority desc, creation asc, key); gated and unschedulable pods wait aside, indexed
    by the events that can release them, so an event costs only the pods it may help."""

    def __init__(
        self,
        pre_enqueue: Callable[[PodInfo], Status],
        hints: Mapping[str, frozenset[ClusterEvent]],
        group_scoped: frozenset[str] = frozenset(),
    ) -> None:
        self._pre_enqueue = pre_enqueue
        self._hints = hints  # plugin -> the events that may make a pod it rejected schedulable
        self._group_scoped = group_scoped  # plugins whose events only wake pods of the event's own group
        self._heap: list[tuple[tuple[int, float, str], str]] = []
        self._active: dict[str, PodInfo] = {}
        self.gated: dict[str, tuple[PodInfo, Status]] = {}
        self._gated_by_group: dict[str | None, set[str]] = {}  # gated by a pod's own check (gates, claims)
        self._group_gated: dict[str | None, set[str]] = {}  # gated by a group-scoped plugin (minCount, no group)
        self.unschedulable: dict[str, _Entry] = {}
        self._by_event: dict[ClusterEvent, set[str]] = {}
        # Rejected by no plugin (no node at all): kube-scheduler requeues such a pod on any event.
        self._any_event: set[str] = set()
        self._gang_by_group: dict[str | None, set[str]] = {}
        self._entered: dict[str, int] = {}  # pod key -> rank of its first entry into the active queue
        self._entries = 0
        self._arrived: dict[str, int] = {}  # pod key -> rank of its first arrival in the queue, gated or not
        self._arrivals = 0
        self._backoff: dict[str, PodInfo] = {}  # retried once the active queue is empty

    def __len__(self) -> int:
        return len(self._active)

    def add(self, pi: PodInfo) -> None:
        """Admit a pod: PreEnqueue decides between the active queue and the gated set."""
        self.remove(pi.key)
        if pi.key not in self._arrived:
            self._arrived[pi.key] = self._arrivals
            self._arrivals += 1
        status = self._pre_enqueue(pi)
        if not status.ok:
            self.gated[pi.key] = (pi, status)
            index = self._group_gated if status.plugin in self._group_scoped else self._gated_by_group
            index.setdefault(pi.group_key, set()).add(pi.key)
            return
        self._active[pi.key] = pi
        if pi.key not in self._entered:
            self._entered[pi.key] = self._entries
            self._entries += 1
        heapq.heappush(self._heap, (pi.sort_key(), pi.key))

    def gated_members(self, group_key: str) -> set[str]:
        """The pods of ``group_key`` gated by their own check (scheduling gates, a missing claim)."""
        return self._gated_by_group.get(group_key, set())

    def entered(self, key: str) -> int:
        """The rank of the pod's first entry into the active queue (kube's InitialAttemptTimestamp; later
        requeues keep it); a pod that never entered ranks after every one that did."""
        return self._entered.get(key, self._entries)

    def arrived(self, key: str) -> int:
        """The rank of the pod's first arrival in the queue, gated or not (v1.37 orders a PodGroup's members by
        the time each was added to its queued entity); later requeues keep it."""
        return self._arrived.get(key, self._arrivals)

    def forget(self, key: str) -> None:
        """The pod is gone for good (deleted, not requeued): drop what the queue remembers of it."""
        self.remove(key)
        self._entered.pop(key, None)
        self._arrived.pop(key, None)

    def pop(self) -> PodInfo | None:
        while True:
            while self._heap:
                _, key = heapq.heappop(self._heap)
                pi = self._active.pop(key, None)
                if pi is not None:
                    return pi
            if not self._backoff:
                return None
            waiting, self._backoff = self._backoff, {}
            for key in sorted(waiting):
                self.add(waiting[key])

    def back_off(self, keys: Iterable[str]) -> None:
        """Retry these unschedulable pods once the active queue is empty, whatever they wait for."""
        for key in keys:
            entry = self.unschedulable.get(key)
            if entry is not None:
                self.remove(key)
                self._backoff[key] = entry.pi

    def take(self, keys: Iterable[str]) -> list[PodInfo]:
        """Pull specific pods out of the queue (``PopSpecificPod``): active or unschedulable, so a PodGroup
        cycle always sees every unscheduled member; gated pods stay gated. Without the unschedulable ones, a
        member woken by an event would retry alone and strand the rest of its gang (spec §8.13)."""
        out = []
        for key in keys:
            pi = self._active.pop(key, None) or self._backoff.pop(key, None)
            if pi is None and key in self.unschedulable:
                pi = self.unschedulable[key].pi
                self.remove(key)
            if pi is not None:
                out.append(pi)
        return out

    def remove(self, key: str) -> None:
        self._active.pop(key, None)
        self._backoff.pop(key, None)
        gated = self.gated.pop(key, None)
        if gated is not None:
            self._gated_by_group.get(gated[0].group_key, set()).discard(key)
            self._group_gated.get(gated[0].group_key, set()).discard(key)
        entry = self.unschedulable.pop(key, None)
        self._any_event.discard(key)
        if entry is not None:
            for plugin in entry.rejected_by:
                for event in self._hints.get(plugin, ()):
                    self._by_event.get(event, set()).discard(key)
            self._gang_by_group.get(entry.pi.group_key, set()).discard(key)

    def _group_gate_changed(self, group_key: str) -> bool:
        """Whether the group-scoped gate of ``group_key``'s gated members may have changed. It depends only on the
        group (its existence, its member count), so one member stands for all: while it stays gated with the same
        status, re-checking the others would give the same answer. Without this, each arriving member of a gang
        re-checked every earlier one, quadratic in the gang's size."""
        members = self._group_gated.get(group_key)
        if not members:
            return False
        probe, before = self.gated[next(iter(members))]
        return self._pre_enqueue(probe) != before

    def mark_unschedulable(self, pi: PodInfo, rejected_by: Iterable[str]) -> None:
        """The pod's attempt failed: it waits for an event one of ``rejected_by``'s queueing hints names."""
        self.remove(pi.key)
        entry = self.unschedulable[pi.key] = _Entry(pi, frozenset(rejected_by))
        if not entry.rejected_by:
            self._any_event.add(pi.key)
        for plugin in entry.rejected_by:
            if plugin in self._group_scoped:
                self._gang_by_group.setdefault(pi.group_key, set()).add(pi.key)
                continue
            for event in self._hints.get(plugin, ()):
                self._by_event.setdefault(event, set()).add(pi.key)

    def retry_gated(self, plugin: str) -> int:
        """Re-run PreEnqueue for the pods ``plugin`` gated (a claim they wait for may exist now)."""
        keys = sorted(k for k, (_, status) in self.gated.items() if status.plugin == plugin)
        moved = 0
        for key in keys:
            pi = self.gated[key][0]
            self.remove(key)
            self.add(pi)
            moved += key in self._active
        return moved

    def on_event(self, event: ClusterEvent, group_key: str | None = None) -> int:
        """Move pods that ``event`` may help back to the active queue (queueing hints); a Pod or PodGroup add
        re-runs PreEnqueue for the gated pods of its group. Returns how many pods became active."""
        keys = set(self._by_event.get(event, ())) | self._any_event
        if event in (ClusterEvent.POD_ADD, ClusterEvent.POD_GROUP_ADD) and group_key is not None:
            keys |= self._gang_by_group.get(group_key, set())
            keys |= self._gated_by_group.get(group_key, set())
            if self._group_gate_changed(group_key):
                keys |= self._group_gated.get(group_key, set())
        moved = 0
        by_group: set[str] = set()
        if event in (ClusterEvent.POD_ADD, ClusterEvent.POD_GROUP_ADD) and group_key is not None:
            by_group = self._gang_by_group.get(group_key, set()) | self._gated_by_group.get(group_key, set())
        for key in sorted(keys):
            entry = self.unschedulable.get(key)
            pi = entry.pi if entry is not None else self.gated[key][0] if key in self.gated else None
            if pi is None:
                continue
            if entry is not None and key not in by_group:
                # It failed a moment ago, so it is still backing off: kube-scheduler's queueAfterBackoff puts it in
                # the backoff queue, popped once the active queue is empty (SchedulerPopFromBackoffQ).
                self.remove(key)
                self._backoff[key] = pi
                continue
            self.add(pi)
            moved += key in self._active
        return moved
