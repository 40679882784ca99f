"""The openb GPU-sharing trace (Alibaba 2023): node and pod CSV loaders and the FGD artifact's arrival procedure.

The procedure follows spec/fgd-experiment.md §3: name-sorted pods, a seeded shuffle, tuning up (clones appended) or
down (random deletions) to 1.3x the cluster's GPU capacity, and a random static node priority for tie-breaking.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phalanx.api.errors import InputError
from phalanx.arrays import IntArray
from phalanx.scheduling.plugins.gpu_share.policy import GPU_MILLI

__all__ = ["Arrival", "OpenbNodes", "OpenbPods", "arrival", "load_nodes", "load_pods"]

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")  # gpu_spec optional (multigpu* lack it)
MAX_PROBLEMS = 20  # a broken file should not print thousands of lines


@dataclass(frozen=True)
class OpenbNodes:
    """The cluster: one row per node, `model` indexes `models` (the sorted GPU model names)."""

    names: list[str]
    cpu: IntArray
    mem: IntArray
    gpus: IntArray
    model: IntArray
    models: tuple[str, ...]

    @property
    def gpu_capacity(self) -> int:
        return int(self.gpus.sum()) * GPU_MILLI


@dataclass(frozen=True)
class OpenbPods:
    """The trace in file order; `spec` holds each pod's acceptable GPU model names (None: any)."""

    names: list[str]
    cpu: IntArray
    mem: IntArray
    num_gpu: IntArray
    gpu_milli: IntArray
    spec: list[frozenset[str] | None]

    @property
    def total_milli(self) -> IntArray:
        return self.num_gpu * self.gpu_milli


def _rows(path: str | Path, required: tuple[str, ...], what: str) -> list[tuple[int, dict[str, str]]]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(
                    [f"{path}:1: {what} CSV header lacks column(s) {', '.join(missing)} (need {','.join(required)})"]
                )
            return [(reader.line_num, row) for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError([f"{path}: cannot read {what} CSV: {exc}"]) from exc


_MAX = 2**53  # the largest count a float holds exactly; far beyond any real node or pod, and within int64


def _int(row: dict[str, str], column: str, minimum: int) -> int:
    """A whole number in ``[minimum, 2^53]``; the trace writes some as floats (``12288.0``)."""
    text = (row.get(column) or "").strip()
    try:
        number = float(text) if text else None
    except ValueError:
        number = None
    if number is None or not number.is_integer() or not minimum <= number <= _MAX:
        raise ValueError(f"{column}: must be an integer from {minimum} to 2^53, got {text!r}")
    return int(number)


def load_nodes(path: str | Path) -> OpenbNodes:
    """Read `sn,cpu_milli,memory_mib,gpu,model`; every problem is reported as FILE:LINE."""
    names: list[str] = []
    values: list[tuple[int, int, int]] = []
    model_names: list[str] = []
    problems: list[str] = []
    for line, row in _rows(path, NODE_COLUMNS, "node"):
        try:
            name = (row["sn"] or "").strip()
            if not name:
                raise ValueError("sn: must not be empty")
            cpu, mem, gpus = _int(row, "cpu_milli", 0), _int(row, "memory_mib", 0), _int(row, "gpu", 0)
            model = (row["model"] or "").strip()
            if gpus > 0 and not model:
                raise ValueError("model: a node with GPUs needs a GPU model")
        except ValueError as exc:
            problems.append(f"{path}:{line}: node: {exc}")
            continue
        names.append(name)
        values.append((cpu, mem, gpus))
        model_names.append(model)
    if not names and not problems:
        problems.append(f"{path}: no nodes")
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    models = tuple(sorted(set(model_names)))
    table = np.array(values, dtype=np.int64)
    return OpenbNodes(
        names, table[:, 0], table[:, 1], table[:, 2], np.array([models.index(m) for m in model_names]), models
    )


def load_pods(path: str | Path) -> OpenbPods:
    """Read the pod list; `gpu_milli` is clamped to [0, 1000] as the artifact's converter does (spec §2)."""
    names: list[str] = []
    values: list[tuple[int, int, int, int]] = []
    specs: list[frozenset[str] | None] = []
    problems: list[str] = []
    for line, row in _rows(path, POD_COLUMNS, "pod"):
        try:
            name = (row["name"] or "").strip()
            if not name:
                raise ValueError("name: must not be empty")
            cpu, mem, num = _int(row, "cpu_milli", 0), _int(row, "memory_mib", 0), _int(row, "num_gpu", 0)
            milli = min(_int(row, "gpu_milli", 0), GPU_MILLI) if num else 0
            if num > 0 and milli == 0:
                raise ValueError("gpu_milli: a pod with num_gpu > 0 needs gpu_milli > 0")
            if num > 1 and milli < GPU_MILLI:
                raise ValueError(f"gpu_milli: a pod with {num} GPUs must take whole GPUs (1000), got {milli}")
        except ValueError as exc:
            problems.append(f"{path}:{line}: pod: {exc}")
            continue
        tokens = frozenset(t.strip() for t in (row.get("gpu_spec") or "").split("|") if t.strip())
        names.append(name)
        values.append((cpu, mem, num, milli))
        specs.append(tokens if tokens and num > 0 else None)
    if not names and not problems:
        problems.append(f"{path}: no pods")
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    table = np.array(values, dtype=np.int64)
    return OpenbPods(names, table[:, 0], table[:, 1], table[:, 2], table[:, 3], specs)


@dataclass(frozen=True)
class Arrival:
    """One seed's run order: `order` indexes the pods (clones repeat an original), `node_rank` is the static
    tie-break priority of each node (lower wins), `clones` counts appended clones (negative: pods deleted)."""

    order: IntArray
    node_rank: IntArray
    clones: int


def arrival(pods: OpenbPods, nodes: OpenbNodes, seed: int, tune: float = 1.3) -> Arrival:
    """Shuffle the name-sorted pods, tune them to `tune` x GPU capacity, and draw the node priority (spec §3.2).

    numpy's Generator replaces Go's math/rand, so orders differ from the artifact's per seed but not in law.
    """
    rng = np.random.default_rng(seed)
    by_name = np.array(sorted(range(len(pods.names)), key=pods.names.__getitem__), dtype=np.int64)
    order = list(by_name[rng.permutation(len(by_name))])
    total_milli = pods.total_milli
    total = int(total_milli.sum())
    target = tune * nodes.gpu_capacity
    before = len(order)
    if total < target and bool((pods.gpu_milli > 0).any()):  # CPU-only clones never stop the loop
        while True:
            pick = int(by_name[rng.integers(len(by_name))])
            # the artifact's stop test compares the per-GPU share, not the pod's total (spec §3.2 step 4)
            if total + int(pods.gpu_milli[pick]) > target:
                break
            order.append(pick)
            total += int(total_milli[pick])
    else:
        while total > target and order:
            total -= int(total_milli[order.pop(int(rng.integers(len(order))))])
    node_by_name = sorted(range(len(nodes.names)), key=nodes.names.__getitem__)
    rank = np.empty(len(node_by_name), dtype=np.int64)
    rank[node_by_name] = rng.permutation(len(node_by_name))
    return Arrival(np.array(order, dtype=np.int64), rank, len(order) - before)
