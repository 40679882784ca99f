"""Elastic gangs in a simulation: the ``jobEvents`` of a YAML trace, each changing one job's gang ``minCount`` at a
time (v1.37 made ``gang.minCount`` mutable on a live PodGroup), and what the change did to the job's wait.

A job a ``minCount`` event names is elastic: it starts once its current ``minCount`` pods run (the rest join as they
are bound), where any other job starts only with all its pods. Formats are in docs/simulate.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from phalanx.api.errors import FieldError
from phalanx.sim.inputs import REQUIRED, Fields

__all__ = ["MinCountChange", "MinCountEvent", "parse_job_events"]

_FIELDS = ("time", "job", "minCount")


@dataclass(frozen=True)
class MinCountEvent:
    """At ``time`` seconds, job ``job``'s gang minCount becomes ``min_count`` (1..the job's pods)."""

    time: float
    job: str
    min_count: int


@dataclass
class MinCountChange:
    """One applied change and what it did to queueing: how long the job had waited when it came (None: it was
    running, or had not arrived), and how long after it the job started (None: it did not start afterwards)."""

    time: float
    old: int
    new: int
    waited_before: float | None
    waited_after: float | None = None


def parse_job_events(raw: Any, fields: Fields, pods: dict[str, int], prefix: str = "jobEvents") -> list[MinCountEvent]:
    """The ``jobEvents`` list of a trace, sorted by time (stable: events at one time apply in file order); every
    problem goes to ``fields``. ``pods`` is each job's pod count by name: an event names one of them, and its
    minCount is at most that."""
    events = []
    for i, item in enumerate(fields.items(raw, prefix)):
        at = f"{prefix}[{i}]"
        values = fields.mapping(item, at, _FIELDS)
        if not values and not isinstance(item, dict):
            continue
        time = fields.number(values.get("time"), f"{at}.time", REQUIRED)
        job = fields.text(values.get("job"), f"{at}.job", REQUIRED)
        if job and job not in pods:
            fields.add(FieldError(f"{at}.job", f'Not found: "{job}": no job of the trace has this name'))
            continue
        high = pods.get(job, 1)
        min_count = fields.integer(values.get("minCount"), f"{at}.minCount", REQUIRED, low=1, high=high)
        events.append(MinCountEvent(time, job, min_count))
    return sorted(events, key=lambda e: e.time)
