"""The sweep driver: hands runs to a backend, retries a failed or lost run once, and puts results back in the
order the runs were given. Backends only execute; every decision (retry, give up, order) is made here, so all
three behave alike."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from phalanx.api.errors import InputError

__all__ = [
    "MAX_ATTEMPTS",
    "Backend",
    "Done",
    "Failure",
    "InProcess",
    "LocalProcesses",
    "RayCluster",
    "Session",
    "SweepOutcome",
    "Task",
    "available_cpus",
    "backend_for",
    "describe",
    "execute",
    "run_sweep",
]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

MAX_ATTEMPTS = 2  # a failed or lost run is retried once, then reported


class Task(Protocol[R_co]):
    """One run of a sweep. It must be picklable and deterministic from its fields (its seed among them): any
    backend, in any order, gives the same result."""

    @property
    def label(self) -> str:
        """Names the run in progress and failure reports, e.g. ``default/seed=2/gang``."""
        ...

    @property
    def weight(self) -> int:
        """Progress units the run reports (jobs, for a simulation); at least 1."""
        ...

    def run(self, progress: Callable[[int], None]) -> R_co:
        """Do the run, calling ``progress(n)`` as n more units are done."""
        ...


@dataclass(frozen=True)
class Failure:
    """A run that failed on every attempt: its position in the sweep, label, attempts and last error."""

    index: int
    label: str
    attempts: int
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"run": self.label, "attempts": self.attempts, "error": self.error}


@dataclass
class SweepOutcome(Generic[R]):
    """``results[i]`` is the result of ``tasks[i]``, or None when it failed (then it is in ``failures``)."""

    results: list[R | None]
    failures: list[Failure] = field(default_factory=list)


@dataclass(frozen=True)
class InProcess:
    """Run one after another in this process (``--workers 1``)."""


@dataclass(frozen=True)
class LocalProcesses:
    """Run in ``workers`` local worker processes (``--workers N``)."""

    workers: int


@dataclass(frozen=True)
class RayCluster:
    """Run each as a task on a Ray cluster: ``auto`` (the one this machine belongs to), ``ray://head:10001``
    (Ray Client), ``HOST:PORT`` (the head's GCS), or ``local`` (start a throwaway Ray in this process)."""

    address: str


Backend = InProcess | LocalProcesses | RayCluster


@dataclass(frozen=True)
class Done:
    """How one attempt ended: ``ok`` with the result, ``failed`` with an error line, or ``input`` with the lines
    of an InputError (bad input is not retried: it would fail again)."""

    index: int
    kind: Literal["ok", "failed", "input"]
    value: Any


class Session(Protocol):
    """A backend at work: takes attempts and reports how they ended."""

    def submit(self, index: int, task: Task[Any]) -> None: ...

    def wait(self, progress: Callable[[int, int], None]) -> list[Done]:
        """Block until at least one attempt ended; ``progress(index, n)`` hears of units done meanwhile."""
        ...

    def close(self) -> None: ...


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, so a container's or taskset's limit counts)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def backend_for(workers: int | None, ray: str | None) -> Backend:
    """The backend the CLI's ``--workers`` / ``--ray`` ask for; ``workers`` None means the CPUs available."""
    if ray is not None:
        if workers is not None:
            raise InputError(["--workers and --ray exclude each other: Ray decides where runs go"])
        return RayCluster(ray)
    count = available_cpus() if workers is None else workers
    if count < 1:
        raise InputError([f"--workers must be at least 1, got {count}"])
    return InProcess() if count == 1 else LocalProcesses(count)


def execute(task: Task[Any], index: int, progress: Callable[[int], None]) -> Done:
    """Run one attempt and say how it ended; what a worker of any backend does with a task."""
    try:
        return Done(index, "ok", task.run(progress))
    except InputError as exc:
        return Done(index, "input", exc.lines)
    except Exception as exc:  # a failed run is reported, never fatal to the sweep
        return Done(index, "failed", describe(exc))


def describe(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def run_sweep(
    tasks: Sequence[Task[R]], backend: Backend, progress: Callable[[int, int], None] | None = None
) -> SweepOutcome[R]:
    """Run every task on ``backend``; ``progress(done, total)`` follows the units of the whole sweep. Raises
    InputError at once if a run finds its input bad."""
    outcome: SweepOutcome[R] = SweepOutcome([None] * len(tasks))
    if not tasks:
        return outcome
    total = sum(max(t.weight, 1) for t in tasks)
    done = [0] * len(tasks)

    def advance(index: int, units: int) -> None:
        done[index] += units
        if progress is not None:
            progress(min(sum(done), total), total)

    attempts = [1] * len(tasks)
    session = _open(backend, len(tasks))
    try:
        # Heaviest first, so a long run does not start last and keep one worker busy alone at the end.
        for i in sorted(range(len(tasks)), key=lambda k: -tasks[k].weight):
            session.submit(i, tasks[i])
        left = len(tasks)
        while left:
            for end in session.wait(advance):
                i = end.index
                done[i] = 0
                if end.kind == "input":
                    raise InputError(list(end.value))
                if end.kind == "failed" and attempts[i] < MAX_ATTEMPTS:
                    attempts[i] += 1
                    session.submit(i, tasks[i])
                    advance(i, 0)
                    continue
                left -= 1
                if end.kind == "ok":
                    outcome.results[i] = end.value
                else:
                    outcome.failures.append(Failure(i, tasks[i].label, attempts[i], str(end.value)))
                advance(i, max(tasks[i].weight, 1))
    finally:
        session.close()
    outcome.failures.sort(key=lambda f: f.index)
    return outcome


def _open(backend: Backend, runs: int) -> Session:
    if isinstance(backend, LocalProcesses) and min(backend.workers, runs) > 1:
        from phalanx.sim.sweep.processes import ProcessSession

        return ProcessSession(min(backend.workers, runs))
    if isinstance(backend, RayCluster):
        from phalanx.sim.sweep.ray_tasks import RaySession

        return RaySession(backend.address)
    return _InProcessSession()


class _InProcessSession:
    """Runs each attempt when asked to wait for it; a crash here is this process's, so only exceptions retry."""

    def __init__(self) -> None:
        self.queue: list[tuple[int, Task[Any]]] = []

    def submit(self, index: int, task: Task[Any]) -> None:
        self.queue.append((index, task))

    def wait(self, progress: Callable[[int, int], None]) -> list[Done]:
        index, task = self.queue.pop(0)
        return [execute(task, index, lambda n: progress(index, n))]

    def close(self) -> None:
        self.queue.clear()
