"""What the public trace readers share: a trace's jobs with notes on what was skipped, the time window, and the
mapping of a job's GPUs and hosts to a gang of identical pods."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace

from phalanx.api.errors import InputError
from phalanx.sim.workload import RACK, JobRecord

__all__ = ["LoadedTrace", "Skipped", "TraceWindow", "gang_of", "job_record", "k8s_name"]

CPU_PER_GPU = 4  # the generator's per-GPU requests, when a trace gives none
MEMORY_GIB_PER_GPU = 16
_INVALID = re.compile(r"[^a-z0-9-]+")
_MAX_NAME = 40  # pods are <job>-<index>-<suffix>: keep well under the 63 of a label value


@dataclass(frozen=True)
class TraceWindow:
    """Hours from the trace's first submission: keep jobs submitted in [start, end); start becomes time 0."""

    start_hours: float = 0.0
    end_hours: float | None = None

    @classmethod
    def parse(cls, text: str) -> TraceWindow:
        """``START:END`` in hours, either side may be empty (``:24`` is the first day, ``24:`` the rest)."""
        start, sep, end = text.partition(":")
        try:
            window = cls(float(start or 0.0), float(end) if end else None)
        except ValueError:
            window = None
        if not sep or window is None or window.start_hours < 0 or (window.end_hours or math.inf) <= window.start_hours:
            raise InputError([f'--trace-window "{text}": want START:END in hours from the first job, START < END'])
        return window


class Skipped(Counter[str]):
    """Why rows were left out (reason -> count): reported to the user, never silent."""

    def notes(self) -> list[str]:
        return [f"skipped {n} job(s): {why}" for why, n in sorted(self.items())]


@dataclass
class LoadedTrace:
    jobs: list[JobRecord]
    notes: list[str] = field(default_factory=list)

    def within(self, window: TraceWindow) -> LoadedTrace:
        start = window.start_hours * 3600
        end = math.inf if window.end_hours is None else window.end_hours * 3600
        kept = [replace(j, submit=round(j.submit - start, 3)) for j in self.jobs if start <= j.submit < end]
        note = f"window {window.start_hours:g}h..{'' if window.end_hours is None else f'{window.end_hours:g}h'}"
        return LoadedTrace(kept, [*self.notes, f"{note}: {len(kept)} of {len(self.jobs)} jobs"])


def gang_of(gpus_per_host: list[int]) -> tuple[int, int]:
    """(pods, GPUs per pod) for a job that held these GPUs on its hosts: one pod per host when every host held
    the same number (the job's real gang); one 1-GPU pod per GPU when they differ, so the total is kept."""
    hosts = max(len(gpus_per_host), 1)
    if len(set(gpus_per_host)) <= 1:
        return hosts, gpus_per_host[0] if gpus_per_host else 0
    return sum(gpus_per_host), 1


def job_record(
    name: str, submit: float, duration: float, pods: int, gpus: int, cpu: int = 0, queue: str = ""
) -> JobRecord:
    """A trace job as the simulator takes it: a gang of ``pods`` identical pods, all needed at once, preferring
    one rack when it spans hosts; CPU and memory from the GPUs when the trace has no CPU count."""
    cpu = cpu or (CPU_PER_GPU * gpus if gpus else 1)
    memory = f"{MEMORY_GIB_PER_GPU * gpus}Gi" if gpus else "4Gi"
    topology = f"preferred:{RACK}" if pods > 1 else ""
    return JobRecord(name, round(submit, 3), round(max(duration, 1.0), 3), pods, str(cpu), memory, gpus,
                     topology=topology, queue=queue)  # fmt: skip


def k8s_name(raw: str, taken: set[str]) -> str:
    """A DNS-1123 label from a trace's job id (``application_1506_14199`` -> ``application-1506-14199``), unique
    among ``taken`` (which it joins)."""
    base = _INVALID.sub("-", raw.lower()).strip("-")[:_MAX_NAME].strip("-") or "job"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base[: _MAX_NAME - len(str(n)) - 1]}-{n}"
    taken.add(name)
    return name
