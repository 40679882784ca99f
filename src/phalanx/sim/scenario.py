"""Scenarios: the embedded default one (`phalanx simulate` with no arguments) and loading user inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.api.errors import InputError
from phalanx.api.loader import load
from phalanx.api.models import Node
from phalanx.sim.metrics import summary
from phalanx.sim.simulator import POLICIES, SimulationResult, simulate
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, generate_jobs, load_trace, nodes_of

__all__ = ["DEFAULT_CLUSTER", "Scenario", "load_cluster", "run"]

# 32 nodes x 8 GPUs (256 GPUs), racks of 8 nodes, blocks of 2 racks.
DEFAULT_CLUSTER = ClusterSpec(
    [Pool("gpu", 32, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8, "pods": 110}, 8, 2)]
)


@dataclass
class Scenario:
    title: str
    nodes: list[Node]
    jobs: list[JobRecord]


def default_scenario(seed: int = 1, jobs: int = 400) -> Scenario:
    """A Philly-shaped job mix (mostly 1-GPU jobs, a tail of 8-128-GPU gangs) on 256 GPUs, busy enough to queue."""
    return Scenario(
        f"Default scenario: {jobs} Philly-shaped jobs on 32 nodes x 8 GPUs (seed {seed})",
        nodes_of(DEFAULT_CLUSTER),
        generate_jobs("philly", jobs, seed, mean_gap=15.0),
    )


def load_cluster(path: str) -> list[Node]:
    """A cluster as Kubernetes Node objects, or as a compact spec with `pools` (docs/simulate.md)."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError([f"{path}: cannot read cluster: {exc}"]) from exc
    if isinstance(raw, dict) and "pools" in raw:
        return nodes_of(ClusterSpec.parse(raw, path))
    nodes = load([path]).nodes
    if not nodes:
        raise InputError([f"{path}: no Nodes and no `pools`: nothing to simulate on"])
    return nodes


def scenario_from(cluster: str | None, workload: str | None, preset: str, jobs: int, seed: int) -> Scenario:
    if cluster is None and workload is None and preset == "philly":
        return default_scenario(seed, jobs)
    nodes = load_cluster(cluster) if cluster else nodes_of(DEFAULT_CLUSTER)
    records = load_trace(workload) if workload else generate_jobs(preset, jobs, seed, mean_gap=30.0)
    return Scenario(f"{len(records)} jobs on {len(nodes)} nodes", nodes, records)


def run(
    scenario: Scenario, policies: Sequence[str], progress: Callable[[str, int], None] | None = None
) -> tuple[list[SimulationResult], list[dict[str, Any]]]:
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise InputError([f'unknown policy "{p}" (known: {", ".join(POLICIES)})' for p in unknown])
    results = []
    for name in policies:
        step = (lambda n, name=name: progress(name, n)) if progress else None
        results.append(simulate(scenario.nodes, scenario.jobs, POLICIES[name], step))
    return results, [summary(r) for r in results]
