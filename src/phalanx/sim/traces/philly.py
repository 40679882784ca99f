"""Microsoft Philly's job log (``cluster_job_log`` in ``trace-data.tar.gz`` of msr-fiddle/philly-traces): a
JSON list of jobs, each with its virtual cluster, submission time and scheduling attempts, every attempt with the
hosts and GPUs it held. The gang is the hosts of the job's last attempt, its duration that attempt's run time."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import msgspec

from phalanx.api.errors import InputError
from phalanx.sim.traces.common import LoadedTrace, Skipped, gang_of, job_record, k8s_name
from phalanx.sim.workload import JobRecord

__all__ = ["load_philly"]


class _Host(msgspec.Struct, forbid_unknown_fields=False):
    ip: str = ""
    gpus: list[str] = msgspec.field(default_factory=list)


class _Attempt(msgspec.Struct, forbid_unknown_fields=False):
    start_time: str | None = None
    end_time: str | None = None
    detail: list[_Host] = msgspec.field(default_factory=list)


class _Job(msgspec.Struct, forbid_unknown_fields=False):
    jobid: str
    submitted_time: str | None = None
    attempts: list[_Attempt] = msgspec.field(default_factory=list)
    status: str = ""
    vc: str = ""
    user: str = ""


def load_philly(path: str) -> LoadedTrace:
    """The jobs of a Philly job log that ran and ended, submit times relative to the first of them."""
    try:
        raw = msgspec.json.decode(Path(path).read_bytes(), type=list[_Job])
    except OSError as exc:
        raise InputError([f"{path}: cannot read workload: {exc.strerror or exc}"]) from exc
    except msgspec.ValidationError as exc:
        raise InputError([f"{path}: not a Philly job log: {exc}"]) from exc
    except msgspec.DecodeError as exc:
        raise InputError([f"{path}: not JSON: {exc}"]) from exc
    skipped, problems = Skipped(), []
    parsed: list[tuple[datetime, float, _Job, list[int]]] = []
    for i, job in enumerate(raw):
        try:
            row = _parse(job, skipped)
        except ValueError as exc:
            problems.append(f"{path}: $[{i}] (jobid {job.jobid}): {exc}")
            continue
        if row is not None:
            parsed.append((*row, job, [len(h.gpus) for h in _hosts(job)]))
    if problems:
        raise InputError(problems)
    return LoadedTrace(_records(parsed), skipped.notes())


def _parse(job: _Job, skipped: Skipped) -> tuple[datetime, float] | None:
    """(submitted, duration in seconds), or None with the reason counted."""
    submitted = _time(job.submitted_time, "submitted_time")
    if submitted is None:
        skipped["no submitted_time"] += 1
        return None
    if not job.attempts:
        skipped["no recorded attempt (never scheduled)"] += 1
        return None
    last = job.attempts[-1]
    start, end = _time(last.start_time, "start_time"), _time(last.end_time, "end_time")
    if start is not None and end is None:
        skipped["still running when the trace was taken"] += 1
        return None
    if start is None or end is None or not _hosts(job):
        skipped["an attempt without start_time, end_time or hosts"] += 1
        return None
    return submitted, (end - start).total_seconds()


def _hosts(job: _Job) -> list[_Host]:
    """The hosts of the last attempt that records any (a logging gap can leave the last one empty)."""
    return next((a.detail for a in reversed(job.attempts) if a.detail), [])


def _time(value: str | None, field: str) -> datetime | None:
    if value is None or value in ("", "None"):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f'{field}: "{value}" is not a time like 2017-10-07 01:12:09') from None


def _records(parsed: list[tuple[datetime, float, _Job, list[int]]]) -> list[JobRecord]:
    if not parsed:
        return []
    first = min(p[0] for p in parsed)
    taken: set[str] = set()
    jobs = []
    for submitted, duration, job, per_host in sorted(parsed, key=lambda p: (p[0], p[2].jobid)):
        pods, gpus = gang_of(per_host)
        name = k8s_name(job.jobid, taken)
        jobs.append(job_record(name, (submitted - first).total_seconds(), duration, pods, gpus, queue=job.vc))
    return jobs
