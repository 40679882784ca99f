"""What a simulation run measured: per-job times, GPU allocation over time, stuck and partial gangs, and what
node failures, drains, pod failures and preemption cost (restarts, failed jobs, lost GPU-hours by cause)."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np

from phalanx.sim.simulator import CAUSES, SimulationResult

__all__ = ["COMPARISON_HEADER", "comparison_rows", "summary", "timeseries_csv"]


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
    }


def timeseries_csv(results: list[SimulationResult]) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["policy", "time", "allocated_gpus", "running_jobs", "queued_jobs", "held_gpus", "fragmented_gpus"])
    for r in results:
        for s in r.samples:
            w.writerow(
                [r.policy, s.time, s.allocated_gpus, s.running_jobs, s.queued_jobs, s.held_gpus, s.fragmented_gpus]
            )
    return out.getvalue()


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
    """One row of text per policy under COMPARISON_HEADER: the table the terminal and the report both show."""
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
