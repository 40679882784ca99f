"""Scenarios: the embedded default one (`phalanx simulate` with no arguments) and loading user inputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from phalanx.api.errors import InputError
from phalanx.api.loader import load
from phalanx.api.models import Node
from phalanx.sim.devices import ClusterDevices
from phalanx.sim.faults import NodeEvent, NodeFailures
from phalanx.sim.metrics import summary
from phalanx.sim.simulator import SimulationResult, policy_of, simulate
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, devices_of, generate_jobs, load_workload, nodes_of

__all__ = [
    "DEFAULT_CLUSTER",
    "Faults",
    "KubeCluster",
    "Scenario",
    "load_cluster",
    "node_failures",
    "run",
    "scenario_from",
]

# 32 nodes x 8 GPUs (256 GPUs), racks of 8 nodes, blocks of 2 racks.
DEFAULT_CLUSTER = ClusterSpec(
    [Pool("gpu", 32, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8, "pods": 110}, 8, 2)]
)


@dataclass
class Faults:
    """What goes wrong during a run: node events, generated node failures, and the seed they draw from."""

    node_events: list[NodeEvent] = field(default_factory=list)
    failures: NodeFailures | None = None
    seed: int = 0


@dataclass
class Scenario:
    title: str
    nodes: list[Node]
    jobs: list[JobRecord]
    faults: Faults = field(default_factory=Faults)
    devices: ClusterDevices | None = None  # DeviceClasses and ResourceSlices (DRA clusters)


@dataclass
class KubeCluster:
    """A cluster given as Kubernetes objects: Nodes, and the DeviceClasses and ResourceSlices of its drivers."""

    nodes: list[Node]
    devices: ClusterDevices | None = None


def default_scenario(seed: int = 1, jobs: int = 400) -> Scenario:
    """A Philly-shaped job mix (mostly 1-GPU jobs, a tail of 8-128-GPU gangs) on 256 GPUs, busy enough to queue."""
    return Scenario(
        f"Default scenario: {jobs} Philly-shaped jobs on 32 nodes x 8 GPUs (seed {seed})",
        nodes_of(DEFAULT_CLUSTER),
        generate_jobs("philly", jobs, seed, mean_gap=15.0),
    )


def load_cluster(path: str) -> ClusterSpec | KubeCluster:
    """A cluster as a compact spec with `pools` (and optional `nodeEvents`, `failures`; docs/simulate.md), or as
    Kubernetes Node objects with any DeviceClass and ResourceSlice objects (a file or a directory)."""
    raw = None
    if not Path(path).is_dir():  # a directory holds Kubernetes objects, as `phalanx schedule -f` reads them
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise InputError([f"{path}: cannot read cluster: {exc}"]) from exc
    if isinstance(raw, dict) and "pools" in raw:
        return ClusterSpec.parse(raw, path)
    inv = load([path])
    if not inv.nodes:
        raise InputError([f"{path}: no Nodes and no `pools`: nothing to simulate on"])
    if not inv.resource_slices:
        return KubeCluster(inv.nodes)
    return KubeCluster(inv.nodes, ClusterDevices(inv.device_classes, inv.resource_slices))


def node_failures(mtbf_hours: float | None, repair_hours: float) -> NodeFailures | None:
    """The generator options as a failure model (None: no generated failures)."""
    if mtbf_hours is None:
        return None
    if mtbf_hours <= 0 or repair_hours <= 0:
        raise InputError(["--node-mtbf-hours and --node-repair-hours must be positive"])
    return NodeFailures(mtbf_hours, repair_hours)


def scenario_from(
    cluster: str | None,
    workload: str | None,
    preset: str,
    jobs: int,
    seed: int,
    failures: NodeFailures | None = None,
    pod_failure_probability: float = 0.0,
) -> Scenario:
    """The scenario the CLI's options describe; ``failures`` and ``pod_failure_probability`` (generator
    options) override the cluster spec's ``failures`` and apply to generated jobs."""
    if cluster is None and workload is None and preset == "philly" and failures is None and not pod_failure_probability:
        return default_scenario(seed, jobs)
    spec = load_cluster(cluster) if cluster else DEFAULT_CLUSTER
    faults = Faults(seed=seed)
    if isinstance(spec, ClusterSpec):
        nodes = nodes_of(spec)
        devices = devices_of(spec, nodes)
        faults.node_events, faults.failures = list(spec.node_events), spec.failures
    else:
        nodes, devices = spec.nodes, spec.devices
    if workload:
        records, events = load_workload(workload)
        faults.node_events = sorted([*faults.node_events, *events], key=lambda e: e.time)
    else:
        gap = 15.0 if cluster is None else 30.0
        # On a cluster whose GPUs are DRA devices, generated jobs claim them through ResourceClaimTemplates.
        dra = devices is not None
        records = generate_jobs(preset, jobs, seed, mean_gap=gap, failure_probability=pod_failure_probability, dra=dra)
    faults.failures = failures or faults.failures
    return Scenario(f"{len(records)} jobs on {len(nodes)} nodes", nodes, records, faults, devices)


def run(
    scenario: Scenario,
    policies: Sequence[str],
    progress: Callable[[str, int], None] | None = None,
    compat: str | None = None,
    gates: Mapping[str, bool] | None = None,
) -> tuple[list[SimulationResult], list[dict[str, Any]]]:
    """Simulate the scenario under each policy; ``compat`` and ``gates`` set the engine's mode for all of them."""
    named = tuple(sorted((gates or {}).items()))
    chosen = [replace(policy_of(p), compat=compat, gates=named) for p in policies]
    for policy in chosen:
        policy.config()  # a bad mode is an input error before anything runs
    names = [p.name for p in chosen]
    if len(set(names)) != len(names):
        raise InputError([f"two policies are named alike: {', '.join(names)}"])
    results = []
    for spec, policy in zip(policies, chosen, strict=True):
        step = (lambda n, spec=spec: progress(spec, n)) if progress else None
        f = scenario.faults
        results.append(
            simulate(
                scenario.nodes,
                scenario.jobs,
                policy,
                step,
                f.node_events,
                f.failures,
                f.seed,
                devices=scenario.devices,
            )
        )
    return results, [summary(r) for r in results]
