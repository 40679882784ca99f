"""Simulation inputs: a cluster from a compact generator spec, and a workload trace (CSV or YAML rows, or a
generator preset). Formats are documented in docs/simulate.md."""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from phalanx.api.errors import InputError
from phalanx.api.models import Node, NodeStatus, ObjectMeta
from phalanx.sim.device_claims import CLAIM_FIELDS, GpuClaim, parse_claim
from phalanx.sim.devices import (
    NUMA_NODE,
    ClusterDevices,
    PoolDevices,
    device_classes,
    parse_pool_devices,
    resource_slices,
)
from phalanx.sim.faults import NodeEvent, NodeFailures, parse_failures, parse_node_events

__all__ = [
    "BLOCK",
    "GPU",
    "HOSTNAME",
    "RACK",
    "ClusterSpec",
    "JobRecord",
    "Pool",
    "devices_of",
    "generate_jobs",
    "load_trace",
    "load_workload",
    "nodes_of",
]

BLOCK = "phalanx.dev/block"
RACK = "phalanx.dev/rack"
HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


@dataclass
class Pool:
    """``count`` identical nodes, grouped ``nodes_per_rack`` to a rack and ``racks_per_block`` to a block."""

    name: str
    count: int
    allocatable: dict[str, str | int]
    nodes_per_rack: int = 0
    racks_per_block: int = 0
    devices: PoolDevices | None = None  # publish the GPUs as DRA devices instead of the extended resource

    def gpus_per_node(self) -> int:
        if self.devices is not None and self.devices.count:
            return self.devices.count
        return int(self.allocatable.get(GPU, 0))


@dataclass
class ClusterSpec:
    pools: list[Pool] = field(default_factory=list)
    node_events: list[NodeEvent] = field(default_factory=list)
    failures: NodeFailures | None = None

    @classmethod
    def parse(cls, raw: Any, where: str) -> ClusterSpec:
        if not isinstance(raw, dict) or not isinstance(raw.get("pools"), list):
            raise InputError([f"{where}: a cluster spec needs a list `pools`"])
        pools = []
        for i, p in enumerate(raw["pools"]):
            try:
                pool = Pool(
                    str(p["name"]),
                    int(p["count"]),
                    dict(p["allocatable"]),
                    int(p.get("nodesPerRack", 0)),
                    int(p.get("racksPerBlock", 0)),
                )
                pool.gpus_per_node()  # a GPU count that is not a whole number is an allocatable error
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError([f"{where}: pools[{i}]: needs name, count, allocatable ({exc})"]) from exc
            try:
                pool.devices = parse_pool_devices(p, f"pools[{i}]")
                if pool.devices is not None and not pool.gpus_per_node():
                    raise ValueError(f"pools[{i}].devices: no GPUs to publish (set count or allocatable {GPU})")
            except (TypeError, ValueError) as exc:
                raise InputError([f"{where}: {exc}"]) from exc
            pools.append(pool)
        return cls(pools, parse_node_events(raw.get("nodeEvents"), where), parse_failures(raw.get("failures"), where))


def nodes_of(spec: ClusterSpec) -> list[Node]:
    nodes = []
    for pool in spec.pools:
        for i in range(pool.count):
            name = f"{pool.name}-{i:04d}"
            labels = {HOSTNAME: name, "phalanx.dev/pool": pool.name}
            if pool.nodes_per_rack:
                rack = i // pool.nodes_per_rack
                labels[RACK] = f"{pool.name}-rack-{rack:03d}"
                if pool.racks_per_block:
                    labels[BLOCK] = f"{pool.name}-block-{rack // pool.racks_per_block:03d}"
            alloc: dict[str, str | int | float] = {"pods": 110, **pool.allocatable}  # kubelet's default max pods
            if pool.devices is not None:
                alloc.pop(GPU, None)  # the DRA driver publishes the GPUs; no device plugin advertises them
            nodes.append(Node(metadata=ObjectMeta(name=name, labels=labels), status=NodeStatus(allocatable=alloc)))
    return nodes


def devices_of(spec: ClusterSpec, nodes: list[Node]) -> ClusterDevices | None:
    """The DeviceClasses and ResourceSlices the pools with ``devices`` publish for ``nodes`` (``nodes_of``)."""
    pools = {p.name: p for p in spec.pools if p.devices is not None}
    if not pools:
        return None
    try:
        classes = device_classes(p.devices for p in pools.values() if p.devices is not None)
    except ValueError as exc:
        raise InputError([f"cluster spec: {exc}"]) from exc
    slices = []
    for node in nodes:
        pool = pools.get(node.metadata.labels.get("phalanx.dev/pool", ""))
        if pool is not None and pool.devices is not None and pool.gpus_per_node():
            slices.append(resource_slices(node, pool.devices, pool.gpus_per_node()))
    drivers = frozenset(p.devices.driver for p in pools.values() if p.devices is not None)
    return ClusterDevices(classes, slices, drivers)


@dataclass(frozen=True)
class JobRecord:
    """One job of a trace: ``pods`` identical pods, all needed at once when ``min_count`` equals ``pods``."""

    name: str
    submit: float  # seconds from the start
    duration: float  # seconds of running once all pods run
    pods: int
    cpu: str = "1"
    memory: str = "4Gi"
    gpus: int = 0
    min_count: int = 0  # 0: all pods
    priority: int = 0
    topology: str = ""  # "" or "required:<label>" or "preferred:<label>"
    failure_probability: float = 0.0  # chance that an attempt fails (one pod fails) before it completes
    backoff_limit: int = 6  # the Job's spec.backoffLimit: pod failures tolerated before the job fails
    claim: GpuClaim | None = None  # the pod's ``gpus`` come from a ResourceClaimTemplate instead of nvidia.com/gpu
    queue: str = ""  # the trace's queue or virtual cluster (public traces); shown in the report, not scheduled on

    @property
    def gang(self) -> int:
        return self.min_count or self.pods


_COLUMNS = {
    "name",
    "submit",
    "duration",
    "pods",
    "cpu",
    "memory",
    "gpus",
    "minCount",
    "priority",
    "topology",
    "failureProbability",
    "backoffLimit",
    *CLAIM_FIELDS,
}


def load_trace(path: str) -> list[JobRecord]:
    """Read a CSV (header row with the columns of docs/simulate.md) or a YAML list of the same fields."""
    return load_workload(path)[0]


def load_workload(path: str) -> tuple[list[JobRecord], list[NodeEvent]]:
    """The jobs of a trace file, and its ``nodeEvents`` (YAML ``{jobs: [...], nodeEvents: [...]}`` only)."""
    text = Path(path).read_text(encoding="utf-8")
    rows: list[dict[str, Any]]
    events: list[NodeEvent] = []
    if path.endswith(".csv"):
        rows = list(csv.DictReader(text.splitlines()))
    else:
        raw = yaml.safe_load(text)
        rows = raw.get("jobs", []) if isinstance(raw, dict) else raw
        if isinstance(raw, dict):
            events = parse_node_events(raw.get("nodeEvents"), path)
    return _jobs(path, rows), events


def _jobs(path: str, rows: list[dict[str, Any]] | None) -> list[JobRecord]:
    jobs, problems = [], []
    for i, row in enumerate(rows or []):
        try:
            unknown = set(row) - _COLUMNS
            if unknown:
                raise ValueError(f"unknown column(s) {sorted(unknown)}")
            jobs.append(
                JobRecord(
                    name=str(row.get("name") or f"job-{i}"),
                    submit=float(row["submit"]),
                    duration=float(row["duration"]),
                    pods=int(row["pods"]),
                    cpu=str(row.get("cpu") or "1"),
                    memory=str(row.get("memory") or "4Gi"),
                    gpus=int(row.get("gpus") or 0),
                    min_count=int(row.get("minCount") or 0),
                    priority=int(row.get("priority") or 0),
                    topology=str(row.get("topology") or ""),
                    failure_probability=_probability(row.get("failureProbability")),
                    backoff_limit=_backoff_limit(row.get("backoffLimit")),
                    claim=_claim(row),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"{path}: row {i + 1}: {exc}")
    if problems:
        raise InputError(problems)
    return jobs


def _claim(row: dict[str, Any]) -> GpuClaim | None:
    claim = parse_claim(row)
    if claim is not None and not int(row.get("gpus") or 0):
        raise ValueError("a DRA claim (dra, deviceClass, gpuProduct, ...) needs gpus > 0")
    return claim


def _backoff_limit(raw: Any) -> int:
    limit = 6 if raw is None or raw == "" else int(raw)  # the Job API's default
    if limit < 0:
        raise ValueError(f"backoffLimit {limit} is negative")
    return limit


def _probability(raw: Any) -> float:
    p = float(raw or 0.0)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"failureProbability {p} is not between 0 and 1")
    return p


def generate_jobs(
    preset: str,
    count: int,
    seed: int,
    gpus_per_node: int = 8,
    mean_gap: float = 60.0,
    failure_probability: float = 0.0,
    dra: bool = False,
) -> list[JobRecord]:
    """A seeded synthetic trace. ``philly`` follows the shape of the public Philly/Helios mixes: most jobs use one
    GPU, a long tail are gangs of 8 to 512 GPUs, durations heavy-tailed (minutes to hours). Every job gets
    ``failure_probability`` (the chance that an attempt fails) and the default backoffLimit 6. With ``dra`` the
    GPUs are claimed through ResourceClaimTemplates, and pods of 2 to 4 GPUs want them on one NUMA node."""
    if not 0.0 <= failure_probability <= 1.0:
        raise InputError([f"pod failure probability {failure_probability} is not between 0 and 1"])
    if preset != "philly":
        raise InputError([f'unknown workload preset "{preset}" (known: philly)'])
    rnd = random.Random(seed)
    sizes = [1] * 60 + [2] * 10 + [4] * 8 + [8] * 12 + [16] * 5 + [32] * 3 + [64] * 1 + [128] * 1
    jobs, t = [], 0.0
    for i in range(count):
        t += rnd.expovariate(1.0 / mean_gap)
        g = rnd.choice(sizes)
        pods = max(1, g // gpus_per_node)
        per_pod = g if g < gpus_per_node else gpus_per_node
        duration = min(rnd.lognormvariate(7.0, 1.2), 12 * 3600.0)
        topo = "preferred:" + RACK if pods > 1 else ""
        jobs.append(
            JobRecord(
                f"job-{i:05d}",
                round(t, 3),
                round(duration, 3),
                pods,
                cpu=str(4 * per_pod),
                memory=f"{16 * per_pod}Gi",
                gpus=per_pod,
                priority=rnd.choice([0, 0, 0, 100]),
                topology=topo,
                failure_probability=failure_probability,
                claim=_generated_claim(per_pod) if dra else None,
            )
        )
    return jobs


def _generated_claim(per_pod: int) -> GpuClaim:
    # Small multi-GPU pods care about the PCIe/NUMA path between their GPUs; whole-node pods get a node's all.
    return GpuClaim(match_attribute=NUMA_NODE if 2 <= per_pod <= 4 else "")
