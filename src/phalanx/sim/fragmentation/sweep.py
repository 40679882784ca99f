"""The openb fragmentation experiment as a sweep: each (policy, seed) is one run, on any sweep backend
(``--workers N``, ``--ray``), assembled into the same ExperimentResult the sequential ``experiment`` gives. Only
calls into the experiment's modules: the procedure stays theirs, and the runner (engine or reference model) is
passed in as it is to ``experiment``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from phalanx.api.errors import InputError
from phalanx.scheduling.plugins.gpu_share.policy import POLICIES
from phalanx.sim.fragmentation.experiment import FIRST_SEED, ExperimentResult, Runner, RunResult
from phalanx.sim.fragmentation.openb import OpenbNodes, OpenbPods
from phalanx.sim.sweep import Backend, Failure, run_sweep

__all__ = ["FragmentationRun", "sweep_experiment"]


@dataclass(frozen=True)
class FragmentationRun:
    """One policy on one seed's arrivals, with one runner."""

    nodes: OpenbNodes
    pods: OpenbPods
    policy: str
    seed: int
    runner: Runner

    @property
    def label(self) -> str:
        return f"{self.policy}/seed={self.seed}"

    @property
    def weight(self) -> int:
        return 1

    def run(self, progress: Callable[[int], None]) -> RunResult:
        result = self.runner.run(self.nodes, self.pods, self.policy, self.seed)
        progress(1)
        return result


def sweep_experiment(
    nodes: OpenbNodes,
    pods: OpenbPods,
    trace: str,
    policies: Sequence[str],
    seeds: int,
    runner: Runner,
    backend: Backend,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[ExperimentResult | None, list[Failure]]:
    """Every policy on seeds 42, 43, ... as ``experiment`` runs them; None and the failures if a run failed
    twice (a partial experiment would compare policies over different seeds)."""
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise InputError([f'unknown policy "{p}" (known: {", ".join(POLICIES)})' for p in unknown])
    if seeds < 1:
        raise InputError([f"--seeds must be at least 1, got {seeds}"])
    result = ExperimentResult(trace, list(range(FIRST_SEED, FIRST_SEED + seeds)), runner=runner.name)
    tasks = [FragmentationRun(nodes, pods, p, s, runner) for p in policies for s in result.seeds]
    outcome = run_sweep(tasks, backend, progress)
    if outcome.failures:
        return None, outcome.failures
    for task, done in zip(tasks, outcome.results, strict=True):
        assert done is not None
        result.runs.setdefault(task.policy, []).append(done)
    return result, []
