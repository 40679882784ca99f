"""Sweeps: a list of independent, seeded runs executed in this process, in N local worker processes, or as tasks
on a Ray cluster. Results come back in the order the runs were given, whatever order they finished in, so a
sweep's output is the same byte for byte whichever backend ran it. A run whose worker fails or is lost is retried
once, then reported as failed; it is never dropped.

    outcome = run_sweep(tasks, backend_for(workers=4, ray=None), progress)
"""

from phalanx.sim.sweep.driver import (
    MAX_ATTEMPTS,
    Backend,
    Failure,
    InProcess,
    LocalProcesses,
    RayCluster,
    SweepOutcome,
    Task,
    available_cpus,
    backend_for,
    run_sweep,
)

__all__ = [
    "MAX_ATTEMPTS",
    "Backend",
    "Failure",
    "InProcess",
    "LocalProcesses",
    "RayCluster",
    "SweepOutcome",
    "Task",
    "available_cpus",
    "backend_for",
    "run_sweep",
]
