"""SenseTime Helios's job log (``cluster_log.csv`` per cluster in S-Lab-System-Group/HeliosData): one Slurm job a
row with its virtual cluster, GPUs, CPUs and nodes, submission time and run time in seconds."""

from __future__ import annotations

import csv
import math
from datetime import datetime

from phalanx.api.errors import InputError
from phalanx.sim.traces.common import LoadedTrace, Skipped, gang_of, job_record, k8s_name
from phalanx.sim.workload import JobRecord

__all__ = ["HELIOS_COLUMNS", "load_helios"]

# The columns the mapping needs; the file has more (user, state, start_time, end_time, queue), which it ignores.
HELIOS_COLUMNS = frozenset({"job_id", "gpu_num", "node_num", "submit_time", "duration"})


def load_helios(path: str) -> LoadedTrace:
    """The jobs of a Helios cluster log that ran, submit times relative to the first of them."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            missing = HELIOS_COLUMNS - set(reader.fieldnames or ())
            if missing:
                raise InputError([f"{path}: not a Helios cluster log: missing column(s) {sorted(missing)}"])
            rows = list(reader)
    except OSError as exc:
        raise InputError([f"{path}: cannot read workload: {exc.strerror or exc}"]) from exc
    skipped, problems = Skipped(), []
    parsed: list[tuple[datetime, float, dict[str, str], int, int, int]] = []
    for line, row in enumerate(rows, start=2):  # line 1 is the header
        try:
            item = _parse(row)
            shape = _shape(row)
        except (ValueError, TypeError) as exc:
            problems.append(f"{path}:{line}: job_id {row.get('job_id')}: {exc}")
            continue
        if item is None:
            skipped["duration 0 (never ran)"] += 1
            continue
        parsed.append((*item, row, *shape))
    if problems:
        raise InputError(problems)
    return LoadedTrace(_records(parsed), skipped.notes())


def _parse(row: dict[str, str]) -> tuple[datetime, float] | None:
    try:
        submitted = datetime.fromisoformat(row["submit_time"])
    except ValueError:
        raise ValueError(f'submit_time: "{row["submit_time"]}" is not a time like 2020-06-09 18:41:01') from None
    duration = _number(row, "duration")
    return None if duration <= 0 else (submitted, duration)


def _shape(row: dict[str, str]) -> tuple[int, int, int]:
    """(pods, GPUs per pod, CPUs per pod): the job's GPUs spread evenly over its nodes."""
    gpus, nodes = int(_number(row, "gpu_num")), max(int(_number(row, "node_num")), 1)
    per_host = [gpus // nodes + (1 if k < gpus % nodes else 0) for k in range(nodes)]
    pods, per_pod = gang_of(per_host)
    cpus = int(_number(row, "cpu_num")) if row.get("cpu_num") else 0
    return pods, per_pod, math.ceil(cpus / pods) if cpus else 0


def _number(row: dict[str, str], field: str) -> float:
    value = row.get(field)
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        number = math.nan
    if math.isnan(number) or number < 0:
        raise ValueError(f'{field}: "{value}" is not a non-negative number')
    return number


def _records(parsed: list[tuple[datetime, float, dict[str, str], int, int, int]]) -> list[JobRecord]:
    if not parsed:
        return []
    first = min(p[0] for p in parsed)
    taken: set[str] = set()
    jobs = []
    for submitted, duration, row, pods, gpus, cpu in sorted(parsed, key=lambda p: (p[0], p[2]["job_id"])):
        name = k8s_name(f"job-{row['job_id']}", taken)
        submit = (submitted - first).total_seconds()
        jobs.append(job_record(name, submit, duration, pods, gpus, cpu, queue=row.get("vc", "")))
    return jobs
