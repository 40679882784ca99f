"""Per-job timelines of one simulation run, for the report: when each job waited and ran, how each attempt ended,
and why it waited, in the scheduler's own words (the pod outcomes the engine reported) as they changed.

``TimelineRecorder`` is a simulator observer (``simulate(observer=...)``): after every instant it looks only at
the jobs that arrived, wait or run, so it costs about what the simulator's own sampling does."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from phalanx.scheduling.outcome import MSG_WAIT_GANG_SCHEDULED, MSG_WAIT_MIN_COUNT
from phalanx.scheduling.recorder import BaseRecorder, Rejection
from phalanx.scheduling.scheduler import Scheduler
from phalanx.sim.simulator import JobRun
from phalanx.sim.workload import JobRecord

__all__ = [
    "END_OF_RUN",
    "MIN_COUNT_CHANGED",
    "QUEUED",
    "RUNNING",
    "JobTimeline",
    "Span",
    "TimelineRecorder",
    "WaitReason",
]

QUEUED, RUNNING = "queued", "running"
MIN_COUNT_CHANGED = "MinCountChanged"  # the reason of a timeline entry for a trace's minCount change
STARTED, COMPLETED, FAILED = "started", "completed", "failed"
END_OF_RUN = "endOfRun"  # still waiting when the run ended: it never started (again)
# Member messages that only say "another member is the problem"; the member that says why is more useful.
_ECHOES = frozenset({MSG_WAIT_GANG_SCHEDULED, MSG_WAIT_MIN_COUNT})


@dataclass(frozen=True, slots=True)
class Span:
    """One stretch of a job's life. ``ended_by`` says how it ended: ``started`` (a queued span), ``completed``,
    ``failed`` (BackoffLimitExceeded), a restart cause (preemption, drain, nodeFailure, podFailure) or
    ``endOfRun``."""

    state: str  # QUEUED or RUNNING
    start: float
    end: float
    ended_by: str


@dataclass(frozen=True, slots=True)
class WaitReason:
    """What the engine said about a waiting job from ``time`` on: the reason and message of its most telling
    unbound pod, and how many of its pods were bound meanwhile (a partial gang holds them)."""

    time: float
    reason: str
    message: str
    bound: int


@dataclass
class JobTimeline:
    spans: list[Span] = field(default_factory=list)
    reasons: list[WaitReason] = field(default_factory=list)


@dataclass
class _Track:
    """What the recorder last saw of an active job, to tell what changed."""

    state: str
    since: float
    restarts: int = 0
    by: Counter[str] = field(default_factory=Counter)
    start: float | None = None
    changes: int = 0  # minCount changes already on the timeline


class TimelineRecorder(BaseRecorder):
    """Observer building one JobTimeline per job of ``jobs`` (same order as the simulator's runs). As the engine's
    recorder it keeps each pod's latest verdict (held back, or unschedulable and why); after each instant it
    turns them into the waiting jobs' reasons."""

    def __init__(self, jobs: Sequence[JobRecord]) -> None:
        self.verdicts: dict[str, tuple[str, str]] = {}  # pod key -> (reason, message), while it is not placed
        self.jobs = jobs
        self.lines = [JobTimeline() for _ in jobs]
        self.order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))
        self.arrived = 0
        self.active: dict[int, _Track] = {}
        self.last_seen = 0.0

    # --- the engine's decisions ---------------------------------------------------------------------------------

    def waiting(self, key: str, reason: str, message: str) -> None:
        self.verdicts[key] = (reason, message)

    def unschedulable(self, key: str, rejection: Rejection) -> None:
        self.verdicts[key] = (rejection.reason, rejection.message)

    def bound(self, key: str, node: str) -> None:
        self.verdicts.pop(key, None)

    def forgotten(self, key: str) -> None:
        self.verdicts.pop(key, None)

    # --- after each instant -------------------------------------------------------------------------------------

    def __call__(self, now: float, sched: Scheduler, runs: Sequence[JobRun], waiting: AbstractSet[int]) -> None:
        self.last_seen = now
        while self.arrived < len(self.order) and self.jobs[self.order[self.arrived]].submit <= now:
            i = self.order[self.arrived]
            self.active[i] = _Track(QUEUED, self.jobs[i].submit)
            self.arrived += 1
        for i in list(self.active):
            self._follow(i, now, runs[i])
        for i in sorted(waiting):
            self._reason(i, now, sched, runs[i])

    def _follow(self, i: int, now: float, run: JobRun) -> None:
        t = self.active[i]
        reasons = self.lines[i].reasons
        for change in run.min_count_changes[t.changes :]:  # an event on the job's timeline, among its wait reasons
            note = f"gang minCount changed from {change.old} to {change.new} (trace jobEvents)"
            reasons.append(WaitReason(change.time, MIN_COUNT_CHANGED, note, reasons[-1].bound if reasons else 0))
        t.changes = len(run.min_count_changes)
        if run.restarts != t.restarts:  # the attempt ended early; the job waits again from the restart
            causes = run.restarts_by - t.by
            self._close(i, t, now, "+".join(sorted(causes)) or "restart")
            self.active[i] = t = _Track(QUEUED, now, run.restarts, Counter(run.restarts_by))
        if run.failed is not None:
            self._close(i, t, run.failed, FAILED)
            del self.active[i]
        elif run.end is not None:
            self._close(i, t, run.end, COMPLETED)
            del self.active[i]
        elif run.start is not None and run.start != t.start:
            self._close(i, t, run.start, STARTED)
            t.state, t.since, t.start = RUNNING, run.start, run.start

    def _close(self, i: int, t: _Track, end: float, ended_by: str) -> None:
        self.lines[i].spans.append(Span(t.state, t.since, max(end, t.since), ended_by))

    def _reason(self, i: int, now: float, sched: Scheduler, run: JobRun) -> None:
        bound, telling = 0, None
        for key in run.pods:
            if sched.bound_node(key) is not None:
                bound += 1
                continue
            verdict = self.verdicts.get(key)
            if verdict is not None and (telling is None or telling[1] in _ECHOES):
                telling = verdict
        reason, message = telling if telling is not None else ("Pending", "")
        reasons = self.lines[i].reasons
        if reasons and (reasons[-1].reason, reasons[-1].message, reasons[-1].bound) == (reason, message, bound):
            return
        reasons.append(WaitReason(now, sys.intern(reason), sys.intern(message), bound))

    def timelines(self, end: float | None = None) -> list[JobTimeline]:
        """Every job's timeline; spans still open are closed at ``end`` (default: the last instant seen)."""
        at = self.last_seen if end is None else end
        for i, t in sorted(self.active.items()):
            self._close(i, t, at, END_OF_RUN)
        self.active.clear()
        return self.lines
