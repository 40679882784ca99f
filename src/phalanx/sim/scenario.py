"""Scenarios: the embedded default one (`phalanx simulate` with no arguments) and loading user inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from phalanx.api.device_taint_rules import apply_device_taint_rules
from phalanx.api.errors import InputError
from phalanx.api.files import read_text
from phalanx.api.loader import Inventory, check_aliasing, load
from phalanx.api.models import Node
from phalanx.api.validation import validate
from phalanx.sim.devices import ClusterDevices
from phalanx.sim.elastic import MinCountEvent
from phalanx.sim.faults import MAX_HOURS, NodeEvent, NodeFailures, failure_budget_problem
from phalanx.sim.inputs import yaml_lines
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, devices_of, generate_jobs, load_workload, nodes_of

__all__ = [
    "DEFAULT_CLUSTER",
    "Faults",
    "KubeCluster",
    "Scenario",
    "load_cluster",
    "node_failures",
    "scenario_from",
]

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
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
    warnings: list[str] = field(default_factory=list)  # objects of the inputs that are skipped or ignored
    job_events: list[MinCountEvent] = field(default_factory=list)  # the trace's minCount changes (elastic gangs)


@dataclass
class KubeCluster:
    """A cluster given as Kubernetes objects: Nodes, and the DeviceClasses and ResourceSlices of its drivers."""

    nodes: list[Node]
    devices: ClusterDevices | None = None
    warnings: list[str] = field(default_factory=list)


def default_scenario(seed: int = 1, jobs: int = 400) -> Scenario:
    """A Philly-shaped job mix (mostly 1-GPU jobs, a tail of 8-128-GPU gangs) on 256 GPUs, busy enough to queue."""
    return Scenario(
        f"Default scenario: {jobs} Philly-shaped jobs on 32 nodes x 8 GPUs (seed {seed})",
        nodes_of(DEFAULT_CLUSTER),
        generate_jobs("philly", jobs, seed, mean_gap=15.0),
    )


def load_cluster(path: str) -> ClusterSpec | KubeCluster:
    """A cluster as a compact spec with `pools` (and optional `nodeEvents`, `failures`; docs/simulate.md), or as
    Kubernetes Node objects with any DeviceClass and ResourceSlice objects (a file or a directory, one or many
    documents), validated as `phalanx schedule` validates them."""
    if not Path(path).is_dir():  # a directory holds Kubernetes objects, as `phalanx schedule -f` reads them
        spec = _compact_spec(path, read_text(path, "cluster"))
        if spec is not None:
            return spec
    inv = load([path])
    problems = validate(inv)
    if problems:
        raise InputError(problems)
    if not inv.nodes:
        raise InputError([f"{path}: no Nodes and no `pools`: nothing to simulate on"])
    warnings = [*inv.warnings, *_unused(inv, path)]
    slices = apply_device_taint_rules(inv.resource_slices, inv.device_taint_rules)  # as kube-scheduler's tracker
    devices = ClusterDevices(inv.device_classes, slices) if slices else None
    return KubeCluster(inv.nodes, devices, warnings)


def _compact_spec(path: str, text: str) -> ClusterSpec | None:
    """The compact spec in ``text``, or None when the file holds Kubernetes objects (or does not parse: the
    loader then reports where)."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
        for doc in docs:
            check_aliasing(doc)
    except (yaml.YAMLError, ValueError):
        return None
    if len(docs) == 1 and isinstance(docs[0], dict) and "pools" in docs[0] and "kind" not in docs[0]:
        return ClusterSpec.parse(docs[0], path, yaml_lines(path, text))
    return None


def _unused(inv: Inventory, path: str) -> list[str]:
    """A warning for the objects a cluster file holds that simulate does not use (the trace brings the work)."""
    counts = {
        kind: len(objects)
        for kind, objects in (
            ("Pods", inv.pods),
            ("Jobs", inv.jobs),
            ("PodGroups", inv.pod_groups),
            ("Workloads", inv.workloads),
            ("ResourceClaims", inv.resource_claims),
            ("ResourceClaimTemplates", inv.resource_claim_templates),
            ("PriorityClasses", inv.priority_classes),
            ("PodDisruptionBudgets", inv.pdbs),
            ("RuntimeClasses", inv.runtime_classes),
        )
        if objects
    }
    if not counts:
        return []
    listed = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    return [f"{path}: simulate takes Nodes, DeviceClasses and ResourceSlices from --cluster; ignored: {listed}"]


def node_failures(mtbf_hours: float | None, repair_hours: float) -> NodeFailures | None:
    """The generator options as a failure model (None: no generated failures)."""
    if mtbf_hours is None:
        return None
    for flag, hours in (("--node-mtbf-hours", mtbf_hours), ("--node-repair-hours", repair_hours)):
        if not (math.isfinite(hours) and 0 < hours <= MAX_HOURS):
            raise InputError([f"{flag}: Invalid value: {hours}: must be a finite number of hours, above 0"])
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
    warnings: list[str] = []
    if isinstance(spec, ClusterSpec):
        nodes = nodes_of(spec)
        devices = devices_of(spec, nodes)
        faults.node_events, faults.failures = list(spec.node_events), spec.failures
    else:
        nodes, devices, warnings = spec.nodes, spec.devices, spec.warnings
    job_events: list[MinCountEvent] = []
    if workload:
        records, events, job_events = load_workload(workload, nodes)
        faults.node_events = sorted([*faults.node_events, *events], key=lambda e: e.time)
    else:
        gap = 15.0 if cluster is None else 30.0
        # On a cluster whose GPUs are DRA devices, generated jobs claim them through ResourceClaimTemplates.
        dra = devices is not None
        records = generate_jobs(preset, jobs, seed, mean_gap=gap, failure_probability=pod_failure_probability, dra=dra)
    if failures is not None or faults.failures is not None:
        source = "--node-mtbf-hours" if failures is not None else f"{cluster}: failures.mtbfHours"
        faults.failures = failures or faults.failures
        _check_failure_budget(faults.failures, nodes, records, source)
    title = f"{len(records)} jobs on {len(nodes)} nodes"
    return Scenario(title, nodes, records, faults, devices, warnings, job_events)


def _check_failure_budget(failures: NodeFailures | None, nodes: list[Node], jobs: list[JobRecord], at: str) -> None:
    """Refuse a failure rate that would make the run effectively endless (see ``failure_budget_problem``)."""
    if failures is None:
        return
    horizon = max((job.submit + job.duration for job in jobs), default=0.0)
    problem = failure_budget_problem(failures, len(nodes), horizon)
    if problem:
        raise InputError([f"{at}: Invalid value: {failures.mtbf_hours}: {problem}"])
