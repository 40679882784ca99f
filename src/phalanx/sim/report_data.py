"""The data the report's charts draw, as one JSON document embedded in the page: per trace (its first seed) the
time series, job completion times, rack allocation, every shown job's spans and wait reasons, and waiting time
by reason; and the headline metrics of every run for the small multiples. Plain lists of numbers, downsampled
where a chart cannot show more, so the page stays small and the browser test can compare values exactly."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.sim.metrics import HEADLINES
from phalanx.sim.runs import RunOutput
from phalanx.sim.timeline import QUEUED, JobTimeline
from phalanx.sim.workload import JobRecord

__all__ = ["MAX_GANTT_JOBS", "MAX_POINTS", "job_class", "payload", "reason_category"]

MAX_POINTS = 2000  # samples per time series
MAX_HEATMAP_COLUMNS = 400
MAX_GANTT_JOBS = 600  # the first jobs by arrival; a taller timeline is not read
MAX_REASONS = 60  # per job and policy: the first and last halves of a long wait
_COUNT = re.compile(r"^\d+ ")
_AVAILABLE = re.compile(r"^0/\d+ nodes are available: (.*)$")
CLASSES = ("1 GPU", "2-8 GPUs", "multi-node gang", "CPU only")


def job_class(job: JobRecord) -> str:
    if job.gpus == 0:
        return CLASSES[3]
    if job.pods > 1:
        return CLASSES[2]
    return CLASSES[0] if job.gpus == 1 else CLASSES[1]


def reason_category(reason: str, message: str) -> str:
    """What kept a job waiting, without the counts: ``0/8 nodes are available: 6 Insufficient nvidia.com/gpu, 2
    node(s) had untolerated taint`` -> ``Insufficient nvidia.com/gpu`` (the part with the most nodes)."""
    text = message.split(" preemption:", 1)[0].strip()
    found = _AVAILABLE.match(text)
    if found is None:
        return (text or reason).rstrip(".")
    parts = [p.strip().rstrip(".") for p in found.group(1).split(", ") if p.strip()]
    counted = [(int(p.split(" ", 1)[0]) if _COUNT.match(p) else 0, _COUNT.sub("", p)) for p in parts]
    return max(counted, key=lambda c: c[0])[1] if counted else reason


def payload(outputs: Sequence[RunOutput]) -> dict[str, Any]:
    """Everything the charts draw; traces and policies in the sweep's order."""
    traces: dict[str, list[RunOutput]] = {}
    for o in outputs:
        traces.setdefault(o.key.trace, []).append(o)
    return {
        "headlines": [{"key": h.key, "label": h.label, "unit": h.unit, "better": h.better} for h in HEADLINES],
        "runs": [
            {
                "trace": o.key.trace,
                "seed": o.key.seed,
                "policy": o.key.policy,
                "values": [round(h.value(o.summary), 4) for h in HEADLINES],
            }
            for o in outputs
        ],
        "traces": [_trace(name, runs) for name, runs in traces.items()],
    }


def _trace(name: str, runs: list[RunOutput]) -> dict[str, Any]:
    seed = runs[0].key.seed
    shown = [o for o in runs if o.key.seed == seed]
    jobs = [r.job for r in shown[0].result.runs]
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))[:MAX_GANTT_JOBS]
    strings: dict[str, int] = {}
    return {
        "name": name,
        "title": shown[0].title,
        "seed": seed,
        "policies": [o.key.policy for o in shown],
        "capacity": [o.result.capacity_gpus for o in shown],
        "series": [_series(o) for o in shown],
        "jct": [_jct(o) for o in shown],
        "queue": [_queue(o) for o in shown],
        "racks": [_racks(o) for o in shown],
        "jobCount": len(jobs),
        "jobs": {
            "name": [jobs[i].name for i in order],
            "submit": [round(jobs[i].submit / 3600, 4) for i in order],
            "gpus": [jobs[i].gpus for i in order],
            "pods": [jobs[i].pods for i in order],
            "class": [job_class(jobs[i]) for i in order],
            "queue": [jobs[i].queue for i in order],
        },
        "gantt": [_spans(o.timelines, order) for o in shown],
        "why": [_reasons(o.timelines, order, strings) for o in shown],
        "waiting": [_waiting(o.timelines) for o in shown],
        "strings": list(strings),
    }


def _hours(values: Sequence[float]) -> list[float]:
    return [round(v / 3600, 4) for v in values]


def _pick(n: int, most: int) -> np.ndarray:
    return np.linspace(0, n - 1, most).astype(int) if n > most else np.arange(n)


def _series(o: RunOutput) -> dict[str, list[float]]:
    samples = o.result.samples
    idx = _pick(len(samples), MAX_POINTS).tolist()
    return {
        "t": _hours([samples[i].time for i in idx]),
        "allocated": [samples[i].allocated_gpus for i in idx],
        "queued": [samples[i].queued_jobs for i in idx],
        "running": [samples[i].running_jobs for i in idx],
        "held": [samples[i].held_gpus for i in idx],
    }


def _jct(o: RunOutput) -> dict[str, list[float]]:
    """CDF of the completed jobs' completion times (h), as a share of all jobs (%)."""
    return _cdf([x.end - x.job.submit for x in o.result.runs if x.end is not None], 3600, len(o.result.runs))


def _queue(o: RunOutput) -> dict[str, list[float]]:
    """CDF of the started jobs' queueing delays (min), as a share of all jobs (%)."""
    return _cdf([x.start - x.job.submit for x in o.result.runs if x.start is not None], 60, len(o.result.runs))


def _cdf(values: list[float], unit: float, of: int) -> dict[str, list[float]]:
    ordered = sorted(values)
    idx = _pick(len(ordered), MAX_POINTS).tolist()
    return {"x": [round(ordered[i] / unit, 4) for i in idx], "y": [round(100 * (i + 1) / max(of, 1), 3) for i in idx]}


def _racks(o: RunOutput) -> dict[str, Any]:
    samples = o.result.samples
    idx = _pick(len(samples), MAX_HEATMAP_COLUMNS).tolist()
    z = [[round(100 * samples[i].rack_allocation[k], 1) for i in idx] for k in range(len(o.result.racks))]
    return {"names": o.result.racks, "t": _hours([samples[i].time for i in idx]), "z": z}


def _spans(timelines: list[JobTimeline], order: list[int]) -> list[list[Any]]:
    """[row, state, start h, end h, ended by] per span of the shown jobs (row = position in ``order``)."""
    return [
        [row, s.state, round(s.start / 3600, 4), round(s.end / 3600, 4), s.ended_by]
        for row, i in enumerate(order)
        for s in timelines[i].spans
    ]


def _reasons(timelines: list[JobTimeline], order: list[int], strings: dict[str, int]) -> dict[str, list[list[Any]]]:
    """Row -> [[time h, reason, message, pods bound], ...] for the shown jobs that waited; strings interned."""
    out: dict[str, list[list[Any]]] = {}
    for row, i in enumerate(order):
        reasons = timelines[i].reasons
        if len(reasons) > MAX_REASONS:
            reasons = reasons[: MAX_REASONS // 2] + reasons[-MAX_REASONS // 2 :]
        if reasons:
            out[str(row)] = [
                [round(w.time / 3600, 4), _intern(strings, w.reason), _intern(strings, w.message), w.bound]
                for w in reasons
            ]
    return out


def _intern(strings: dict[str, int], text: str) -> int:
    return strings.setdefault(text, len(strings))


def _waiting(timelines: list[JobTimeline]) -> dict[str, float]:
    """Job-hours spent waiting, by reason category, over every job of the run (not only the shown ones)."""
    hours: dict[str, float] = {}
    for line in timelines:
        for span in line.spans:
            if span.state != QUEUED:
                continue
            inside = [w for w in line.reasons if span.start <= w.time < span.end]
            if not inside:
                continue
            marks = [*(w.time for w in inside[1:]), span.end]
            for w, until in zip(inside, marks, strict=True):
                key = reason_category(w.reason, w.message)
                hours[key] = hours.get(key, 0.0) + (until - w.time) / 3600
    return {k: round(v, 3) for k, v in sorted(hours.items(), key=lambda kv: (-kv[1], kv[0])) if v > 0}
