"""The openb GPU-fragmentation experiment (spec/fgd-experiment.md): each policy over several seeds on one trace,
the unallocated GPU % at each arrival step per seed and as the mean over seeds.

A runner places one seed's pods and is passed in: ``engine.run_engine`` through the scheduler (the product's
placement path), or ``reference.run_reference``, the reference model of the FGD artifact's simulator.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phalanx.api.errors import InputError
from phalanx.arrays import BoolArray, FloatArray, IntArray
from phalanx.scheduling.plugins.gpu_share.policy import POLICIES, TargetDistribution, typical_pods
from phalanx.sim.fragmentation.openb import OpenbNodes, OpenbPods

__all__ = [
    "FIRST_SEED",
    "PUBLISHED",
    "ExperimentResult",
    "RunResult",
    "Runner",
    "experiment",
    "shape_of",
    "target_of",
    "trace_name",
    "unallocated_curve",
]

FIRST_SEED = 42  # the artifact's seeds are 42..51
# Unallocated GPU % at 100 % arrival, mean of 10 seeds, from the FGD artifact (data/openb/README.md).
PUBLISHED: dict[str, dict[str, float]] = {
    "default": {"random": 13.70, "dotprod": 9.38, "gpuclustering": 8.35, "gpupacking": 8.22, "bestfit": 7.14,
                "fgd": 4.77},
    "multigpu50": {"random": 18.72, "dotprod": 5.27, "gpuclustering": 4.31, "gpupacking": 3.94, "bestfit": 4.38,
                   "fgd": 2.91},
    "gpushare100": {"random": 21.10, "dotprod": 18.02, "gpuclustering": 17.78, "gpupacking": 17.87,
                    "bestfit": 15.38, "fgd": 13.36},
    "gpuspec25": {"random": 14.58, "dotprod": 14.56, "gpuclustering": 13.59, "gpupacking": 13.23, "bestfit": 14.33,
                  "fgd": 6.09},
    "cpu250": {"random": 20.00, "dotprod": 16.43, "gpuclustering": 12.25, "gpupacking": 11.95, "bestfit": 8.79,
               "fgd": 6.80},
}  # fmt: skip


@dataclass
class RunResult:
    """One policy, one seed: the cumulative arrived and allocated GPU milli and the cluster fragmentation after
    every pod attempt (failed attempts included), and whether each attempt placed its pod."""

    policy: str
    seed: int
    capacity: int
    arrived: IntArray
    used: IntArray
    frag: FloatArray
    node: IntArray  # the node row each attempt went to, -1 when it failed

    @property
    def placed(self) -> BoolArray:
        return self.node >= 0

    def curve(self) -> dict[int, float]:
        return unallocated_curve(self.arrived, self.used, self.capacity)

    @property
    def at100(self) -> float:
        return self.curve()[100]


@dataclass(frozen=True)
class Runner:
    """A way to place one seed's pods with one policy: ``name`` is what the result's ``runner`` field says."""

    name: str
    run: Callable[[OpenbNodes, OpenbPods, str, int], RunResult]


def unallocated_curve(arrived: IntArray, used: IntArray, capacity: int) -> dict[int, float]:
    """Unallocated GPU % of capacity per arrival column X: 100 - mean allocation over the events whose arrival
    rounds (half-even) to X; a column with no event uses X-1..X+1, as merge_alloc_discrete.py does (spec §3.3), and
    failing that (a small cluster) the last event before X."""
    arrive = np.round(100.0 * arrived / capacity).astype(np.int64)
    alloc = np.round(100.0 * used / capacity, 2)
    curve: dict[int, float] = {}
    for x in range(int(arrive.max(initial=0)) + 1):
        window = arrive == x
        if not window.any():
            window = np.abs(arrive - x) <= 1
        if not window.any() and (arrive < x).any():
            # small clusters move more than 1 % per pod: take the state after the last pod that arrived before X
            window = np.arange(len(arrive)) == np.flatnonzero(arrive < x)[-1]
        if window.any():
            curve[x] = round(100.0 - round(float(alloc[window].mean()), 2), 2)
    return curve


def target_of(pods: OpenbPods, nodes: OpenbNodes) -> TargetDistribution:
    """FGD's fixed target: the top shapes of the original trace, CPU-only pods included (spec §4.6)."""
    return typical_pods([shape_of(pods, nodes, i) for i in range(len(pods.names))], len(nodes.models))


def _models(pods: OpenbPods, nodes: OpenbNodes, i: int) -> frozenset[int] | None:
    spec = pods.spec[i]
    # a model no node has can never match; an all-unknown spec leaves the pod nowhere to go, as in the artifact
    return None if spec is None else frozenset(nodes.models.index(m) for m in spec if m in nodes.models)


def shape_of(pods: OpenbPods, nodes: OpenbNodes, i: int) -> tuple[int, int, int, frozenset[int] | None]:
    return int(pods.cpu[i]), int(pods.gpu_milli[i]), int(pods.num_gpu[i]), _models(pods, nodes, i)


@dataclass
class ExperimentResult:
    """Runs of several policies over several seeds on one trace."""

    trace: str
    seeds: list[int]
    runs: dict[str, list[RunResult]] = field(default_factory=dict)
    runner: str = "array"

    def per_seed(self, policy: str) -> list[float]:
        return [r.at100 for r in self.runs[policy]]

    def mean_at100(self) -> dict[str, float]:
        return {p: round(statistics.fmean(self.per_seed(p)), 2) for p in self.runs}

    def mean_curve(self, policy: str) -> dict[int, float]:
        curves = [r.curve() for r in self.runs[policy]]
        columns = sorted(set.intersection(*(set(c) for c in curves)))
        return {x: round(statistics.fmean(c[x] for c in curves), 2) for x in columns}

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "FragmentationExperiment",
            "trace": self.trace,
            "seeds": self.seeds,
            "runner": self.runner,
            "unallocatedGpuPercentAt100": self.mean_at100(),
            "perSeed": {p: self.per_seed(p) for p in self.runs},
            "curve": {p: {str(x): v for x, v in self.mean_curve(p).items()} for p in self.runs},
            "published": PUBLISHED.get(self.trace, {}),
        }

    def table(self) -> list[list[str]]:
        """Rows of: policy, mean, sample SD, min-max over seeds, and the artifact's published mean if known."""
        rows = [["policy", "unallocated % at 100", "sd", "min-max", "published"]]
        published = PUBLISHED.get(self.trace, {})
        for policy in self.runs:
            values = self.per_seed(policy)
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            known = published.get(policy)
            rows.append([policy, f"{statistics.fmean(values):.2f}", f"{sd:.2f}",
                         f"{min(values):.2f}-{max(values):.2f}", "" if known is None else f"{known:.2f}"])  # fmt: skip
        return rows


def trace_name(path: str) -> str:
    """`.../openb_pod_list_gpuspec25.csv` -> `gpuspec25` (the key of the published figures)."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".csv")
    return stem.removeprefix("openb_pod_list_")


def experiment(
    nodes: OpenbNodes,
    pods: OpenbPods,
    trace: str,
    policies: Sequence[str],
    seeds: int,
    runner: Runner,
    progress: Callable[[str, int], None] | None = None,
) -> ExperimentResult:
    """Run every policy on seeds 42, 43, ... (`seeds` of them), as the artifact does, with ``runner``."""
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise InputError([f'unknown policy "{p}" (known: {", ".join(POLICIES)})' for p in unknown])
    if seeds < 1:
        raise InputError([f"--seeds must be at least 1, got {seeds}"])
    result = ExperimentResult(trace, list(range(FIRST_SEED, FIRST_SEED + seeds)), runner=runner.name)
    for policy in policies:
        result.runs[policy] = []
        for seed in result.seeds:
            result.runs[policy].append(runner.run(nodes, pods, policy, seed))
            if progress:
                progress(policy, 1)
    return result
