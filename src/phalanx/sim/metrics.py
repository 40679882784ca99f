"""What a simulation run measured: per-job times, GPU allocation over time, stuck and partial gangs, and what
node failures, drains, pod failures and preemption cost (restarts, failed jobs, lost GPU-hours by cause). Also the
headline metrics a sweep compares over seeds (mean and sample SD), and the terminal tables, which fit 100
columns: the detail is in the report and in ``-o json``."""

from __future__ import annotations

import csv
import io
import statistics
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from phalanx.sim.simulator import CAUSES, SimulationResult

__all__ = [
    "COMPARISON_HEADER",
    "HEADLINES",
    "MIN_COUNT_HEADER",
    "Headline",
    "aggregate",
    "aggregate_tables",
    "comparison_rows",
    "comparison_tables",
    "min_count_changes",
    "min_count_rows",
    "summary",
    "timeseries_csv",
]


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 1) if values else 0.0


def summary(r: SimulationResult) -> dict[str, Any]:
    """The comparison row of one policy (all times in seconds)."""
    runs = r.runs
    started = [x for x in runs if x.start is not None]
    done = [x for x in runs if x.end is not None]
    queue = [x.start - x.job.submit for x in started if x.start is not None]
    top = max((x.job.priority for x in runs), default=0)
    queue_top = [x.start - x.job.submit for x in started if x.start is not None and x.job.priority == top]
    jct = [x.end - x.job.submit for x in done if x.end is not None]
    first = min((x.job.submit for x in runs), default=0.0)
    last = max((x.end for x in done if x.end is not None), default=first)
    makespan = last - first
    times = np.array([s.time for s in r.samples] + [last])
    weights = np.diff(times) if len(times) > 1 else np.zeros(0)
    alloc = np.array([s.allocated_gpus for s in r.samples], dtype=float)
    held = np.array([s.held_gpus for s in r.samples], dtype=float)
    frag = np.array([s.fragmented_gpus for s in r.samples], dtype=float)
    span = float(weights.sum()) or 1.0
    cap = r.capacity_gpus or 1
    return {
        "policy": r.policy,
        "jobs": len(runs),
        "completed": len(done),
        "neverStarted": sum(1 for x in runs if x.start is None and x.end is None and x.failed is None),
        "failedJobs": sum(1 for x in runs if x.failed is not None),
        "queueSeconds": {
            "mean": round(float(np.mean(queue)), 1) if queue else 0.0,
            "p50": _pct(queue, 50),
            "p99": _pct(queue, 99),
        },
        "queueSecondsTopPriority": {
            "mean": round(float(np.mean(queue_top)), 1) if queue_top else 0.0,
            "p99": _pct(queue_top, 99),
        },
        "jctSeconds": {
            "mean": round(float(np.mean(jct)), 1) if jct else 0.0,
            "p50": _pct(jct, 50),
            "p99": _pct(jct, 99),
        },
        "makespanSeconds": round(makespan, 1),
        "throughputJobsPerHour": round(len(done) / (makespan / 3600), 2) if makespan > 0 else 0.0,
        "gpuAllocationPercent": round(100 * float((alloc * weights).sum()) / span / cap, 2) if len(weights) else 0.0,
        "heldByPartialGangsGpuHours": round(float((held * weights).sum()) / 3600, 1) if len(weights) else 0.0,
        "fragmentedGpusMean": round(float((frag * weights).sum()) / span, 2) if len(weights) else 0.0,
        "restarts": sum(x.restarts for x in runs),
        "lostGpuHours": round(sum(x.lost_gpu_seconds for x in runs) / 3600, 1),
        "restartsByCause": {c: sum(x.restarts_by[c] for x in runs) for c in CAUSES},
        "lostGpuHoursByCause": {c: round(sum(x.lost_by[c] for x in runs) / 3600, 1) for c in CAUSES},
        "nodeFailures": sum(1 for _, action, _ in r.node_log if action == "fail"),
        "nodeDrains": sum(1 for _, action, _ in r.node_log if action == "drain"),
        "schedulingCycles": r.cycles,
        "minCountChanges": min_count_changes(r),
    }


def min_count_changes(r: SimulationResult) -> list[dict[str, Any]]:
    """The trace's minCount changes as applied, in time order, with what each did to queueing: how long the job
    had waited when it came and how long after it the job started (null: running already, not arrived, or never
    started afterwards)."""

    def seconds(v: float | None) -> float | None:
        return None if v is None else round(v, 1)

    rows = [
        {
            "job": x.job.name,
            "time": c.time,
            "from": c.old,
            "to": c.new,
            "waitedBeforeSeconds": seconds(c.waited_before),
            "waitedAfterSeconds": seconds(c.waited_after),
        }
        for x in r.runs
        for c in x.min_count_changes
    ]
    return sorted(rows, key=lambda row: (row["time"], row["job"]))


def timeseries_csv(results: Sequence[tuple[str, int, SimulationResult]]) -> str:
    """The samples of every run as CSV rows; ``results`` are (trace, seed, result)."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(
        [
            "policy",
            "time",
            "allocated_gpus",
            "running_jobs",
            "queued_jobs",
            "held_gpus",
            "fragmented_gpus",
            "trace",
            "seed",
        ]
    )
    for trace, seed, r in results:
        for s in r.samples:
            w.writerow(
                [
                    r.policy,
                    s.time,
                    s.allocated_gpus,
                    s.running_jobs,
                    s.queued_jobs,
                    s.held_gpus,
                    s.fragmented_gpus,
                    trace,
                    seed,
                ]
            )
    return out.getvalue()


@dataclass(frozen=True)
class Headline:
    """A metric sweeps compare: where it is in a summary, how to show it (``value / scale`` in ``unit``) and
    which way is better."""

    key: str  # dotted path into summary(): "queueSeconds.mean"
    label: str
    unit: str
    scale: float = 1.0
    better: str = "lower"

    def value(self, summary: dict[str, Any]) -> float:
        node: Any = summary
        for part in self.key.split("."):
            node = node[part]
        return float(node) / self.scale


HEADLINES = (
    Headline("completed", "Jobs completed", "jobs", better="higher"),
    Headline("queueSeconds.mean", "Queueing delay, mean", "min", 60.0),
    Headline("queueSeconds.p99", "Queueing delay, p99", "min", 60.0),
    Headline("jctSeconds.mean", "Job completion time, mean", "h", 3600.0),
    Headline("makespanSeconds", "Makespan", "h", 3600.0),
    Headline("gpuAllocationPercent", "GPU allocation", "%", better="higher"),
    Headline("heldByPartialGangsGpuHours", "GPUs held by partial gangs", "GPU-h"),
    Headline("restarts", "Restarts", "restarts"),
)


def aggregate(summaries: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Headline key -> {mean, sd} over the summaries of one policy on one trace (one per seed); sd is the sample
    SD (0 for one seed). Values in the summary's own units."""
    out: dict[str, dict[str, float]] = {}
    for h in HEADLINES:
        values = [h.value(s) * h.scale for s in summaries]
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        out[h.key] = {"mean": round(statistics.fmean(values), 3), "sd": round(sd, 3)}
    return out


COMPARISON_HEADER = (
    "policy",
    "completed",
    "never started",
    "failed",
    "queue mean / p99 (min)",
    "top-priority queue mean (min)",
    "JCT mean / p99 (h)",
    "makespan (h)",
    "GPU allocation",
    "GPU-h held by partial gangs",
    "fragmented GPUs",
    "restarts (GPU-h lost)",
    "node failures / drains",
)


def comparison_rows(summaries: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """One row of text per policy under COMPARISON_HEADER: the report's table (the terminal's, split in two)."""
    rows: list[tuple[str, ...]] = []
    for r in summaries:
        q, j = r["queueSeconds"], r["jctSeconds"]
        rows.append(
            (
                str(r["policy"]),
                f"{r['completed']}/{r['jobs']}",
                str(r["neverStarted"]),
                str(r["failedJobs"]),
                f"{q['mean'] / 60:.1f} / {q['p99'] / 60:.1f}",
                f"{r['queueSecondsTopPriority']['mean'] / 60:.1f}",
                f"{j['mean'] / 3600:.2f} / {j['p99'] / 3600:.2f}",
                f"{r['makespanSeconds'] / 3600:.1f}",
                f"{r['gpuAllocationPercent']:.1f} %",
                str(r["heldByPartialGangsGpuHours"]),
                str(r["fragmentedGpusMean"]),
                f"{r['restarts']} ({r['lostGpuHours']})",
                f"{r['nodeFailures']} / {r['nodeDrains']}",
            )
        )
    return rows


_WIDTH = 100  # the terminal tables fit this many columns
# The terminal's comparison: three narrow tables instead of the report's wide one, each under 100 columns with
# the policy names whole (header words no wider than the cells under them).
_Cell = Callable[[dict[str, Any]], str]
_TERMINAL: tuple[tuple[str, tuple[tuple[str, _Cell], ...]], ...] = (
    (
        "jobs",
        (
            ("done", lambda r: f"{r['completed']}/{r['jobs']}"),
            ("never started", lambda r: str(r["neverStarted"])),
            ("failed", lambda r: str(r["failedJobs"])),
            ("restarts", lambda r: str(r["restarts"])),
            ("GPU-h lost", lambda r: f"{r['lostGpuHours']:.1f}"),
        ),
    ),
    (
        "waiting and completion",
        (
            ("queue mean (min)", lambda r: f"{r['queueSeconds']['mean'] / 60:.1f}"),
            ("queue p99 (min)", lambda r: f"{r['queueSeconds']['p99'] / 60:.1f}"),
            ("high-prio queue (min)", lambda r: f"{r['queueSecondsTopPriority']['mean'] / 60:.1f}"),
            ("JCT mean (h)", lambda r: f"{r['jctSeconds']['mean'] / 3600:.2f}"),
            ("JCT p99 (h)", lambda r: f"{r['jctSeconds']['p99'] / 3600:.2f}"),
            ("makespan (h)", lambda r: f"{r['makespanSeconds'] / 3600:.1f}"),
        ),
    ),
    (
        "GPUs",
        (
            ("allocated", lambda r: f"{r['gpuAllocationPercent']:.1f} %"),
            ("held by partial gangs (GPU-h)", lambda r: f"{r['heldByPartialGangsGpuHours']:.1f}"),
            ("fragmented (mean)", lambda r: f"{r['fragmentedGpusMean']:.2f}"),
            ("node failures / drains", lambda r: f"{r['nodeFailures']} / {r['nodeDrains']}"),
        ),
    ),
)


def comparison_tables(summaries: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """The comparison for the terminal as (title, header, rows) tables: jobs, waiting and completion, GPUs."""
    tables = []
    for title, cells in _TERMINAL:
        rows = [(str(r["policy"]), *(f(r) for _, f in cells)) for r in summaries]
        tables.append((title, fit_header(("policy", *(h for h, _ in cells)), rows), rows))
    return tables


def fit_header(header: Sequence[str], rows: Sequence[Sequence[str]], width: int = _WIDTH) -> tuple[str, ...]:
    """Header cells wrapped onto lines, as wide as the table can afford within ``width`` terminal columns (rich
    draws a border and a space either side of every cell) but never narrower than the column's cells or its
    longest word: a table of short numbers fits a narrow terminal without wrapping a value."""
    floor = [max([len(r[k]) for r in rows] + [len(w) for w in text.split()] + [1]) for k, text in enumerate(header)]
    borders = 3 * len(header) + 1
    widths = floor
    for line in range(max(len(t) for t in header), 0, -1):
        widths = [max(f, min(line, len(t))) for f, t in zip(floor, header, strict=True)]
        if sum(widths) + borders <= width:
            break
    return tuple("\n".join(textwrap.wrap(t, w, break_long_words=False)) for t, w in zip(header, widths, strict=True))


def aggregate_tables(
    rows: Sequence[tuple[str, dict[str, dict[str, float]]]],
) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """The headline metrics over seeds as two (title, header, rows) tables, cells ``mean ±sd`` in display units;
    ``rows`` are (policy, aggregate())."""
    half = (len(HEADLINES) + 1) // 2
    tables = []
    for title, part in (("jobs and time", HEADLINES[:half]), ("GPUs and disruptions", HEADLINES[half:])):
        header = ("policy", *(f"{h.label} ({h.unit})" for h in part))
        body = []
        for policy, agg in rows:
            cells = [policy]
            for h in part:
                m, sd = agg[h.key]["mean"] / h.scale, agg[h.key]["sd"] / h.scale
                digits = 0 if h.unit in ("jobs", "restarts") else 1
                cells.append(f"{m:.{digits}f} ±{sd:.{digits}f}")
            body.append(tuple(cells))
        tables.append((f"{title} (mean ±SD over seeds)", fit_header(header, body), body))
    return tables


MIN_COUNT_HEADER = ("policy", "job", "at (h)", "minCount", "waited before (min)", "started after (min)")


def min_count_rows(summaries: Sequence[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The rows of the minCount changes table (terminal and report): one per change per policy."""
    return [
        (
            str(r["policy"]),
            str(c["job"]),
            f"{c['time'] / 3600:.2f}",
            f"{c['from']} -> {c['to']}",
            _minutes(c["waitedBeforeSeconds"], "running or not arrived"),
            _minutes(c["waitedAfterSeconds"], "did not start after it" if c["waitedBeforeSeconds"] is not None else ""),
        )
        for r in summaries
        for c in r.get("minCountChanges") or []
    ]


def _minutes(seconds: float | None, otherwise: str) -> str:
    return otherwise if seconds is None else f"{seconds / 60:.1f}"
