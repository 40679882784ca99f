"""The engine's one exit: every decision goes out through a :class:`Recorder`, and front ends implement it.

``schedule`` keeps the outcome of each pod for the ScheduleResult (:class:`phalanx.scheduling.outcome.OutcomeLog`),
``serve`` turns decisions into API writes, and ``simulate`` into restarts, metrics and per-job timelines. The
engine calls a recorder synchronously, in decision order, from inside ``run`` (a bind is reported as soon as its
cycle succeeds, so serve can write it while the engine goes on). Recorders must not call back into the engine's
event methods; they may use its read-only queries.

Events:
  - ``observed``: a pod the input already shows bound or finished, kept as it is (phase Running, Succeeded, ...).
  - ``waiting``: a pod held back before any cycle (a PreEnqueue gate, another scheduler's pod, terminating).
  - ``bound``: a cycle placed the pod (for a gang: the whole PodGroup cycle succeeded).
  - ``unschedulable``: a cycle did not place the pod; the :class:`Rejection` says why, structured.
  - ``nominated``: preemption chose the node the pod waits for.
  - ``evicted``: a preemption victim.
  - ``condition_changed``: a cycle set a PodGroup's PodGroupScheduled condition (the value given is the condition
    as it now is: a True one is never regressed) or a preemption gave it DisruptionTarget.
  - ``claim_allocated`` / ``claim_released``: a bound pod's claim is final / a pod no longer holds its claim.
  - ``forgotten``: the pod left the engine (deleted, or its node is gone).
  - ``changed_by``: a rule beyond kube-scheduler v1.36 (kebab-case name, ``rules.py``) changed the decision for
    these pods or PodGroups (keys): without it they would have fared otherwise.
  - ``candidates``: kube-scheduler would have picked at random among these nodes (for a pod) or placements (for
    a PodGroup) where the engine picked one (reported when the seeded tie-break or all-nodes scoring is off).

``explains``: the recorder keeps ``changed_by``. Naming some rules costs a second computation (whether v1.37's
single-run reprieve would have chosen other victims, ``reprieve-by-rerun``); the engine does it only for a
recorder that explains (``schedule``'s OutcomeLog), not for serve's or simulate's, which ignore the names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from phalanx.api.dra import AllocationResult
from phalanx.scheduling.diagnosis import Diagnosis
from phalanx.scheduling.outcome import Eviction, GroupCondition

__all__ = ["BaseRecorder", "Recorder", "Recorders", "Rejection"]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a cycle left a pod unscheduled. ``reason`` is the PodScheduled condition reason (``Unschedulable``,
    ``SchedulerError``), ``message`` kube-scheduler's text, ``plugins`` the plugins whose cluster events may make
    it schedulable, ``diagnosis`` the per-node reason records when filters rejected it."""

    reason: str
    message: str
    plugins: frozenset[str] = frozenset()
    diagnosis: Diagnosis | None = None


class Recorder(Protocol):
    @property
    def explains(self) -> bool: ...

    def observed(self, key: str, phase: str, node: str | None) -> None: ...

    def waiting(self, key: str, reason: str, message: str) -> None: ...

    def bound(self, key: str, node: str) -> None: ...

    def unschedulable(self, key: str, rejection: Rejection) -> None: ...

    def nominated(self, key: str, node: str) -> None: ...

    def evicted(self, eviction: Eviction) -> None: ...

    def condition_changed(self, group: str, condition: GroupCondition) -> None: ...

    def claim_allocated(self, claim: str, pod: str, allocation: AllocationResult | None) -> None: ...

    def claim_released(self, claim: str, pod: str) -> None: ...

    def forgotten(self, key: str) -> None: ...

    def changed_by(self, rule: str, keys: Sequence[str]) -> None: ...

    def candidates(self, key: str, nodes: Sequence[str]) -> None: ...


class BaseRecorder:
    """A recorder that ignores everything: subclass it and override the events a front end needs."""

    explains: bool = False

    def observed(self, key: str, phase: str, node: str | None) -> None:
        pass

    def waiting(self, key: str, reason: str, message: str) -> None:
        pass

    def bound(self, key: str, node: str) -> None:
        pass

    def unschedulable(self, key: str, rejection: Rejection) -> None:
        pass

    def nominated(self, key: str, node: str) -> None:
        pass

    def evicted(self, eviction: Eviction) -> None:
        pass

    def condition_changed(self, group: str, condition: GroupCondition) -> None:
        pass

    def claim_allocated(self, claim: str, pod: str, allocation: AllocationResult | None) -> None:
        pass

    def claim_released(self, claim: str, pod: str) -> None:
        pass

    def forgotten(self, key: str) -> None:
        pass

    def changed_by(self, rule: str, keys: Sequence[str]) -> None:
        pass

    def candidates(self, key: str, nodes: Sequence[str]) -> None:
        pass


class Recorders(BaseRecorder):
    """Several recorders fed the same events, in order (a front end's own and an OutcomeLog, say)."""

    def __init__(self, recorders: Sequence[Recorder]) -> None:
        self.recorders = list(recorders)

    @property
    def explains(self) -> bool:  # type: ignore[override]
        return any(r.explains for r in self.recorders)

    def observed(self, key: str, phase: str, node: str | None) -> None:
        for r in self.recorders:
            r.observed(key, phase, node)

    def waiting(self, key: str, reason: str, message: str) -> None:
        for r in self.recorders:
            r.waiting(key, reason, message)

    def bound(self, key: str, node: str) -> None:
        for r in self.recorders:
            r.bound(key, node)

    def unschedulable(self, key: str, rejection: Rejection) -> None:
        for r in self.recorders:
            r.unschedulable(key, rejection)

    def nominated(self, key: str, node: str) -> None:
        for r in self.recorders:
            r.nominated(key, node)

    def evicted(self, eviction: Eviction) -> None:
        for r in self.recorders:
            r.evicted(eviction)

    def condition_changed(self, group: str, condition: GroupCondition) -> None:
        for r in self.recorders:
            r.condition_changed(group, condition)

    def claim_allocated(self, claim: str, pod: str, allocation: AllocationResult | None) -> None:
        for r in self.recorders:
            r.claim_allocated(claim, pod, allocation)

    def claim_released(self, claim: str, pod: str) -> None:
        for r in self.recorders:
            r.claim_released(claim, pod)

    def forgotten(self, key: str) -> None:
        for r in self.recorders:
            r.forgotten(key)

    def changed_by(self, rule: str, keys: Sequence[str]) -> None:
        for r in self.recorders:
            r.changed_by(rule, keys)

    def candidates(self, key: str, nodes: Sequence[str]) -> None:
        for r in self.recorders:
            r.candidates(key, nodes)
