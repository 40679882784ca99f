"""The reference model of the FGD artifact's simulator (spec/fgd-experiment.md §3.2): each arriving pod placed on
arrays with one GPU-sharing policy, no queue, retry, preemption or departure, every event logged.

It is what the engine runner is checked against and what reproduces the published figures quickly; it is not
the product's placement path (``phalanx schedule``/``simulate``/``serve`` place pods through the engine).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from phalanx.api.errors import InputError
from phalanx.arrays import FloatArray, IntArray
from phalanx.scheduling.plugins.gpu_share.policy import (
    CHOOSERS,
    POLICIES,
    GpuPod,
    GpuView,
    TargetDistribution,
    feasible,
    fragmentation,
)
from phalanx.sim.fragmentation.experiment import Runner, RunResult, shape_of, target_of
from phalanx.sim.fragmentation.openb import OpenbNodes, OpenbPods, arrival

__all__ = ["REFERENCE", "initial_view", "run_reference"]


def initial_view(nodes: OpenbNodes) -> GpuView:
    slots = int(nodes.gpus.max(initial=0))
    gpu_free = np.where(np.arange(slots)[None, :] < nodes.gpus[:, None], 1000, -1).astype(np.int64)
    return GpuView(nodes.cpu.copy(), nodes.mem.copy(), gpu_free, nodes.model.copy())


@dataclass
class _Cache:
    """Scores of one pod shape per node, valid while the node's version is unchanged: a placement changes one
    node, so a shape seen again only rescores the nodes changed since (same result as scoring every node)."""

    scores: FloatArray
    seen: IntArray


def run_reference(nodes: OpenbNodes, pods: OpenbPods, policy: str, seed: int, tune: float = 1.3) -> RunResult:
    """Place the seed's arrivals one by one with `policy` (no queue, retry, preemption or departure; spec §3.2)."""
    if policy not in POLICIES:
        raise InputError([f'unknown policy "{policy}" (known: {", ".join(POLICIES)})'])
    order = arrival(pods, nodes, seed, tune)
    view, target = initial_view(nodes), target_of(pods, nodes)
    score, choose = POLICIES[policy], CHOOSERS[policy]
    rng = np.random.default_rng([seed, 1])  # only the random policy draws
    shapes: dict[tuple[int, int, int, int, frozenset[int] | None], GpuPod] = {}
    caches: dict[GpuPod, _Cache] = {}
    version = np.zeros(len(nodes.names), dtype=np.int64)
    frag = fragmentation(view.cpu_free, view.gpu_free, view.model, target)
    events = len(order.order)
    arrived, used = np.zeros(events, dtype=np.int64), np.zeros(events, dtype=np.int64)
    frag_log, node = np.zeros(events), np.full(events, -1, dtype=np.int64)
    total_arrived = total_used = 0
    for e, i in enumerate(order.order):
        cpu, milli, num, models = shape_of(pods, nodes, int(i))
        pod = shapes.setdefault(
            (cpu, int(pods.mem[i]), num, milli, models), GpuPod(cpu, int(pods.mem[i]), num, milli, models)
        )
        total_arrived += pod.total_milli
        if policy == "random":
            rows = np.flatnonzero(feasible(view, pod))
            scores = np.full(len(nodes.names), -np.inf)
            scores[rows] = score(view, pod, rows, target, rng)
        else:
            scores = _cached_scores(caches, version, view, pod, target, score)
        best = scores.max(initial=-np.inf)
        if best > -np.inf:
            tied = np.flatnonzero(scores == best)
            row = int(tied[np.argmin(order.node_rank[tied])])
            slots = choose(view, pod, row, target, rng)
            view.cpu_free[row] -= pod.cpu
            view.mem_free[row] -= pod.mem
            view.gpu_free[row, slots] -= pod.gpu_milli
            version[row] += 1
            frag[row] = fragmentation(view.cpu_free[row], view.gpu_free[row], view.model[row], target)
            total_used += pod.total_milli
            node[e] = row
        arrived[e], used[e], frag_log[e] = total_arrived, total_used, frag.sum()
    return RunResult(policy, seed, nodes.gpu_capacity, arrived, used, frag_log, node)


def _cached_scores(
    caches: dict[GpuPod, _Cache], version: IntArray, view: GpuView, pod: GpuPod, target: TargetDistribution,
    score: Callable[..., FloatArray],
) -> FloatArray:  # fmt: skip
    cache = caches.get(pod)
    if cache is None:
        cache = caches[pod] = _Cache(np.full(len(version), -np.inf), np.full(len(version), -1, dtype=np.int64))
    dirty = np.flatnonzero(cache.seen != version)
    if len(dirty):
        ok = feasible(view, pod, dirty)
        fresh = np.full(len(dirty), -np.inf)
        if ok.any():
            fresh[ok] = score(view, pod, dirty[ok], target)
        cache.scores[dirty] = fresh
        cache.seen[dirty] = version[dirty]
    return cache.scores


REFERENCE = Runner("array", run_reference)
