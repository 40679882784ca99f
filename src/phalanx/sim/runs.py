"""The runs of a ``phalanx simulate`` sweep: every (trace, seed, policy) as one sweep task carrying all it needs
(scenario and parsed policy, no file paths, so a Ray worker elsewhere can run it), and the sweep's JSON. A run is
deterministic from its inputs, and runs are listed trace by trace, seed by seed, policy by policy, so the output
is the same whichever backend ran them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from phalanx.api.errors import InputError
from phalanx.sim import scenario as sc
from phalanx.sim.faults import NodeFailures
from phalanx.sim.metrics import (
    MIN_COUNT_HEADER,
    aggregate,
    aggregate_tables,
    comparison_tables,
    min_count_rows,
    summary,
)
from phalanx.sim.simulator import Policy, SimulationResult, policy_of, simulate
from phalanx.sim.sweep import Failure
from phalanx.sim.timeline import JobTimeline, TimelineRecorder
from phalanx.sim.traces import TraceWindow, load_jobs
from phalanx.sim.workload import JobRecord

__all__ = ["RunKey", "RunOutput", "SimulationRun", "SweepPlan", "plan", "summary_tables", "sweep_json", "sweep_title"]

Table = tuple[str, tuple[str, ...], list[tuple[str, ...]]]


@dataclass(frozen=True)
class RunKey:
    trace: str  # the trace's file name, or the generator preset
    seed: int
    policy: str

    @property
    def label(self) -> str:
        return f"{self.trace}/seed={self.seed}/{self.policy}"


@dataclass
class RunOutput:
    """What one run gives back: its summary (the JSON row), the samples and per-job timelines (the report)."""

    key: RunKey
    title: str
    result: SimulationResult
    summary: dict[str, Any]
    timelines: list[JobTimeline]


@dataclass(frozen=True)
class SimulationRun:
    """A sweep task: one policy on one scenario (a trace and a seed)."""

    key: RunKey
    scenario: sc.Scenario
    policy: Policy

    @property
    def label(self) -> str:
        return self.key.label

    @property
    def weight(self) -> int:
        return max(len(self.scenario.jobs), 1)

    def run(self, progress: Callable[[int], None]) -> RunOutput:
        s, f = self.scenario, self.scenario.faults
        recorder = TimelineRecorder(s.jobs)
        result = simulate(
            s.nodes,
            s.jobs,
            self.policy,
            progress,
            f.node_events,
            f.failures,
            f.seed,
            None,
            s.devices,
            recorder,
            s.job_events,
        )
        end = result.samples[-1].time if result.samples else 0.0
        return RunOutput(self.key, s.title, result, summary(result), recorder.timelines(end))


@dataclass(frozen=True)
class SweepPlan:
    """The CLI's description of a sweep; ``workloads`` empty means one generated trace (``preset``)."""

    cluster: str | None = None
    workloads: tuple[str, ...] = ()
    workload_format: str = "auto"
    window: TraceWindow | None = None
    preset: str = "philly"
    jobs: int = 400
    seed: int = 1
    seeds: int = 1
    failures: NodeFailures | None = None
    pod_failure_probability: float = 0.0
    policies: tuple[str, ...] = ()
    # The engine's mode for every policy (``--compat``, ``--feature-gates``).
    compat: str | None = None
    gates: tuple[tuple[str, bool], ...] = ()


def plan(p: SweepPlan, default_policies: Sequence[str]) -> tuple[list[SimulationRun], list[str], list[str]]:
    """The runs of the sweep, in output order, notes for the user (trace rows a reader skipped) and warnings
    (input objects skipped or ignored, once per trace). Every input is read and checked here, before any run
    starts: a bad one is an InputError."""
    if p.seeds < 1:
        raise InputError([f"--seeds must be at least 1, got {p.seeds}"])
    if p.window is not None and not p.workloads:
        raise InputError(["--trace-window applies to --workload traces in a public format (philly, helios)"])
    specs = list(p.policies) or list(default_policies)
    policies = [replace(_policy(spec), compat=p.compat, gates=p.gates) for spec in specs]
    for policy in policies:
        policy.config()  # a bad mode is an input error before anything runs
    names = [x.name for x in policies]
    if len(set(names)) != len(names):
        raise InputError([f"two policies are named alike: {', '.join(names)}"])
    runs: list[SimulationRun] = []
    notes: list[str] = []
    warnings: list[str] = []
    for trace, path in _traces(p.workloads, p.preset):
        loaded = load_jobs(path, p.workload_format, p.window) if path is not None else None
        if loaded is not None:
            notes.extend(f"{path}: {n}" for n in loaded.notes)
        for seed in range(p.seed, p.seed + p.seeds):
            scenario = _scenario(p, path, seed, loaded.jobs if loaded is not None else None)
            if scenario.job_events and p.compat == "v1.36":
                # v1.36's PodGroup spec is immutable: the API server would refuse every one of these changes.
                detail = "jobEvents change a PodGroup's minCount, which v1.36 does not allow (it is mutable from v1.37)"
                raise InputError([f"{path}: {detail}: drop --compat v1.36 or the trace's jobEvents"])
            if seed == p.seed:
                warnings.extend(w for w in scenario.warnings if w not in warnings)
            runs.extend(SimulationRun(RunKey(trace, seed, x.name), scenario, x) for x in policies)
    return runs, notes, warnings


def _policy(spec: str) -> Policy:
    """``policy_of``, with its problems attributed to the flag they come from."""
    try:
        return policy_of(spec)
    except InputError as exc:
        raise InputError([f"--policy: {line}" for line in exc.lines]) from exc


def _traces(workloads: Sequence[str], preset: str) -> list[tuple[str, str | None]]:
    """(name, path) per trace; names are file names, made unique when two files share one."""
    if not workloads:
        return [(preset, None)]
    out: list[tuple[str, str | None]] = []
    for path in workloads:
        name = Path(path).name
        taken = {n for n, _ in out}
        out.append((name if name not in taken else f"{name}#{len(out) + 1}", path))
    return out


def _scenario(p: SweepPlan, path: str | None, seed: int, jobs: list[JobRecord] | None) -> sc.Scenario:
    """One trace under one seed. Jobs a public-format reader gave replace the generated ones; the cluster,
    node events and failure model come from the cluster spec as for any trace."""
    if jobs is None:
        return sc.scenario_from(p.cluster, path, p.preset, p.jobs, seed, p.failures, p.pod_failure_probability)
    base = sc.scenario_from(p.cluster, None, p.preset, 0, seed, p.failures, 0.0)
    title = f"{len(jobs)} jobs of {Path(path or '').name} on {len(base.nodes)} nodes"
    return dataclasses.replace(base, jobs=jobs, title=title)


def sweep_json(outputs: Sequence[RunOutput], failures: Sequence[Failure]) -> dict[str, Any]:
    """The sweep's JSON (``-o json``, ``--metrics``): a row per run (its summary with ``trace`` and ``seed``),
    the headline metrics over seeds per trace and policy when there are several seeds, and the failed runs."""
    rows = [{"policy": o.key.policy, "trace": o.key.trace, "seed": o.key.seed, **o.summary} for o in outputs]
    doc: dict[str, Any] = {"title": sweep_title(outputs), "policies": rows}
    groups: dict[tuple[str, str], list[RunOutput]] = {}
    for o in outputs:
        groups.setdefault((o.key.trace, o.key.policy), []).append(o)
    if any(len(g) > 1 for g in groups.values()):
        doc["aggregate"] = [
            {"trace": t, "policy": p, "seeds": [o.key.seed for o in g], **aggregate([o.summary for o in g])}
            for (t, p), g in groups.items()
        ]
    doc["failedRuns"] = [f.to_json() for f in failures]
    return doc


def sweep_title(outputs: Sequence[RunOutput]) -> str:
    """The scenario's own title for one trace and one seed; else what the sweep covered."""
    if not outputs:
        return "no run finished"
    traces = list(dict.fromkeys(o.key.trace for o in outputs))
    seeds = list(dict.fromkeys(o.key.seed for o in outputs))
    if len(traces) == 1 and len(seeds) == 1:
        return outputs[0].title
    policies = list(dict.fromkeys(o.key.policy for o in outputs))
    return (
        f"{len(outputs)} runs: {len(traces)} trace(s) ({', '.join(traces)}) x {len(seeds)} seed(s) "
        f"({seeds[0]}..{seeds[-1]}) x {len(policies)} policies"
    )


def summary_tables(outputs: Sequence[RunOutput]) -> list[Table]:
    """The terminal's tables, per trace: the comparison (one seed) or the headline metrics over seeds."""
    traces: dict[str, list[RunOutput]] = {}
    for o in outputs:
        traces.setdefault(o.key.trace, []).append(o)
    tables: list[Table] = []
    for name, runs in traces.items():
        seeds = list(dict.fromkeys(o.key.seed for o in runs))
        if len(seeds) == 1:
            heading = runs[0].title if len(traces) == 1 else f"{name} (seed {seeds[0]})"
            parts = comparison_tables([o.summary for o in runs])
            if changes := min_count_rows([o.summary for o in runs]):
                parts.append(("minCount changes (trace jobEvents)", MIN_COUNT_HEADER, changes))
        else:
            by_policy: dict[str, list[dict[str, Any]]] = {}
            for o in runs:
                by_policy.setdefault(o.key.policy, []).append(o.summary)
            heading = f"{name}, seeds {seeds[0]}..{seeds[-1]}"
            parts = aggregate_tables([(p, aggregate(s)) for p, s in by_policy.items()])
        tables.extend((f"{heading}: {title}", header, rows) for title, header, rows in parts)
    return tables
