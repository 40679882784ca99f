"""Scoring nodes for pods that ask for whole or fractional GPUs (GPU sharing), as pure functions over node arrays.

The policies (random, bestfit, fgd, phalanx) are the ones the openb fragmentation experiment compares; the DRA
Score plugin wraps `POLICIES["phalanx"]` and `choose_gpus`. Rows are nodes; higher scores are better.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple, Protocol

import numpy as np

from phalanx.arrays import BoolArray, FloatArray, IntArray

__all__ = [
    "CHOOSERS",
    "GPU_MILLI",
    "POLICIES",
    "GpuPod",
    "GpuSums",
    "GpuView",
    "TargetDistribution",
    "choose_gpus",
    "feasible",
    "fgd_gpus",
    "fgd_score",
    "fragmentation",
    "gpu_sums",
    "placement_sums",
    "scarcity",
    "stranding",
    "typical_pods",
]


GPU_MILLI = 1000  # one whole GPU, as the device's consumable capacity `milli`
STRANDING_RESOLUTION = 80.0  # milli-GPU: smaller differences in stranding are ties, left to the node order
PRIMARY = 1e6  # a step of the primary score outweighs any secondary difference (|secondary| <= 8000/80)
SCARCITY_POINTS = 2  # gradient points a GPU pod gives up on the model constrained pods need most
MAX_SPEC_CPU = 128_000.0  # FGD artifact normalisers (spec §4.0)
MAX_SPEC_GPU = 8_000.0


@dataclass
class GpuView:
    """The cluster as the scorer sees it; rows are nodes, columns of `gpu_free` are GPU slots (-1: no such GPU)."""

    cpu_free: IntArray  # (n,) milli-CPU
    mem_free: IntArray  # (n,) MiB
    gpu_free: IntArray  # (n, G) free milli per GPU slot
    model: IntArray  # (n,) GPU model code


@dataclass(frozen=True)
class GpuPod:
    """What a pod asks for: `gpu_milli` is the per-GPU share (1000 for whole GPUs), `models` the acceptable models."""

    cpu: int
    mem: int
    num_gpu: int
    gpu_milli: int
    models: frozenset[int] | None = None

    @property
    def sharing(self) -> bool:
        return self.num_gpu == 1 and 0 < self.gpu_milli < GPU_MILLI

    @property
    def total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


@dataclass(frozen=True)
class TargetDistribution:
    """The pod shapes a scorer expects to come (FGD's "typical pods"): one row per shape, probabilities sum to 1."""

    cpu: IntArray  # (M,)
    gpu_milli: IntArray  # (M,) per-GPU milli; 0 for CPU-only shapes
    num_gpu: IntArray  # (M,)
    allowed: BoolArray  # (M, models) which GPU models each shape accepts
    prob: FloatArray  # (M,)

    @cached_property
    def levels(self) -> tuple[IntArray, IntArray]:
        """The distinct per-GPU milli of the shapes and each shape's index into them (GPU sums run per level)."""
        levels, index = np.unique(self.gpu_milli, return_inverse=True)
        return levels, index.reshape(-1)

    @cached_property
    def per_free(self) -> FloatArray:
        """For one GPU with v free milli (row v, 0..1000) and each level t: usable milli (v if v >= t), whether
        it fits t, and the copies of t it holds (v // t); GpuSums add these rows up, one lookup per GPU."""
        levels, _ = self.levels
        v = np.arange(GPU_MILLI + 1)[:, None]
        fits = (v >= levels) & (levels > 0)
        copies = np.where(levels > 0, v // np.maximum(levels, 1), 0)
        table: FloatArray = np.concatenate([v * fits, fits, copies], axis=1).astype(np.float64)
        return table

    @cached_property
    def stranding_weight(self) -> FloatArray:
        """Per model and shape: p_m * k_m * g_m where the model accepts the shape, else 0 (see `stranding`)."""
        weight = self.prob * np.maximum(self.num_gpu, 1) * self.gpu_milli
        table: FloatArray = self.allowed.T * weight
        return table

    @cached_property
    def whole_placement(self) -> GpuSums:
        """How a node's GpuSums change per whole GPU a pod takes (the sums of 0 free minus those of 1000)."""
        whole = np.array([[GPU_MILLI]], dtype=np.int64)
        return gpu_sums(whole * 0, self).plus(gpu_sums(whole, self), -1.0)

    @cached_property
    def constrained(self) -> BoolArray:
        """Per shape: a GPU shape that accepts only some models."""
        constrained: BoolArray = ~self.allowed.all(axis=1) & (self.gpu_milli > 0)
        return constrained

    @cached_property
    def reserved(self) -> BoolArray:
        """Per model: does some model-constrained GPU shape accept it (those GPUs are not interchangeable)."""
        reserved: BoolArray = np.asarray(self.allowed[self.constrained].any(axis=0), dtype=np.bool_)
        return reserved

    @cached_property
    def constrained_demand(self) -> FloatArray:
        """Per model: the GPU milli per arriving pod that model-constrained shapes expect of it, each shape's
        p_m * k_m * g_m spread evenly over the models it accepts."""
        weight = self.prob * np.maximum(self.num_gpu, 1) * self.gpu_milli
        spread = self.allowed / np.maximum(self.allowed.sum(axis=1, keepdims=True), 1)
        demand: FloatArray = (weight[self.constrained, None] * spread[self.constrained]).sum(axis=0)
        return demand

    @cached_property
    def stranding_resolution(self) -> float:
        """The step (milli-GPU) below which stranding differences are ties: 80, or 160 when every GPU shape of the
        target shares a GPU (measured on the openb traces: docs/simulate.md, the GPU-fragmentation experiment)."""
        gpu = self.gpu_milli > 0
        shares_only = bool(gpu.any()) and bool((self.gpu_milli[gpu] < GPU_MILLI).all())
        return 2 * STRANDING_RESOLUTION if shares_only else STRANDING_RESOLUTION


def typical_pods(
    shapes: Sequence[tuple[int, int, int, frozenset[int] | None]], model_count: int, coverage: float = 0.95
) -> TargetDistribution:
    """FGD's target: the most frequent (cpu, gpu_milli, num_gpu, models) shapes covering `coverage` of the pods.

    Ties in frequency go to the larger shape (spec §4.6); the kept counts are renormalised to probabilities.
    """
    if not shapes:
        raise ValueError("a target distribution needs at least one pod")
    counts = Counter(shapes)

    def order(item: tuple[tuple[int, int, int, frozenset[int] | None], int]) -> tuple[object, ...]:
        (cpu, milli, num, models), count = item
        return (-count, -cpu, -milli, -num, tuple(sorted(models or ())))

    kept: list[tuple[tuple[int, int, int, frozenset[int] | None], int]] = []
    total = 0
    for item in sorted(counts.items(), key=order):
        kept.append(item)
        total += item[1]
        if total >= coverage * len(shapes):
            break
    allowed = np.ones((len(kept), model_count), dtype=np.bool_)
    for i, ((_, _, _, models), _) in enumerate(kept):
        if models is not None:
            allowed[i] = False
            allowed[i, [m for m in models if 0 <= m < model_count]] = True
    return TargetDistribution(
        cpu=np.array([s[0] for s, _ in kept], dtype=np.int64),
        gpu_milli=np.array([s[1] for s, _ in kept], dtype=np.int64),
        num_gpu=np.array([s[2] for s, _ in kept], dtype=np.int64),
        allowed=allowed,
        prob=np.array([c for _, c in kept], dtype=np.float64) / total,
    )


def _model_ok(view: GpuView, pod: GpuPod, rows: IntArray) -> BoolArray:
    if pod.models is None or pod.num_gpu == 0:
        return np.ones(len(rows), dtype=np.bool_)
    return np.isin(view.model[rows], np.fromiter(pod.models, dtype=np.int64, count=len(pod.models)))


def feasible(view: GpuView, pod: GpuPod, rows: IntArray | None = None) -> BoolArray:
    """Which nodes (of `rows`, default all) can host the pod: CPU, memory, model and enough GPU (Filter)."""
    if rows is None:
        rows = np.arange(len(view.cpu_free))
    ok = (view.cpu_free[rows] >= pod.cpu) & (view.mem_free[rows] >= pod.mem) & _model_ok(view, pod, rows)
    if pod.num_gpu > 0:
        ok &= (view.gpu_free[rows] >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
    return ok


def choose_gpus(view: GpuView, pod: GpuPod, row: int) -> list[int]:
    """The GPU slots the pod takes on node `row`: phalanx's (and best-fit's) rule.

    A sharing pod takes the GPU with the least free milli that still fits it (ties: lowest index), so partly used
    GPUs fill up before whole ones are broken; a whole-GPU pod takes the lowest-indexed completely free GPUs.
    """
    free = view.gpu_free[row]
    if pod.num_gpu == 0:
        return []
    if not pod.sharing:
        slots = np.flatnonzero(free >= GPU_MILLI)[: pod.num_gpu]
    else:
        fits = np.flatnonzero(free >= pod.gpu_milli)
        slots = fits[np.argsort(free[fits], kind="stable")][:1]
    if len(slots) < pod.num_gpu:
        raise ValueError(f"node row {row} cannot host the pod's {pod.num_gpu} GPU(s) of {pod.gpu_milli} milli")
    return [int(s) for s in slots]


class GpuSums(NamedTuple):
    """What the fragmentation measures need of a node's GPUs, per distinct share size t of the target (levels):
    idle milli, completely free GPUs, and per level the free milli on GPUs >= t, how many fit t and the copies of t
    they hold. Sums are additive, so a placement's effect is the sums of the changed GPUs, not a new pass."""

    idle: FloatArray  # (...,)
    fulls: FloatArray  # (...,)
    usable: FloatArray  # (..., T)
    fitting: FloatArray  # (..., T) GPUs with free >= t
    copies: FloatArray  # (..., T)

    def plus(self, other: GpuSums, times: float = 1.0) -> GpuSums:
        return GpuSums(*(a + times * b for a, b in zip(self, other, strict=True)))


def gpu_sums(gpu_free: IntArray, target: TargetDistribution) -> GpuSums:
    """GpuSums of `gpu_free` (..., G); slots of -1 (no such GPU) count nowhere."""
    levels, _ = target.levels
    free = np.clip(gpu_free, 0, GPU_MILLI)
    table = target.per_free
    if free.ndim == 2:  # the common case: one gather per GPU slot beats one big (nodes, G, 3T) gather
        per_level = table[free[:, 0]].copy()
        for slot in range(1, free.shape[1]):
            per_level += table[free[:, slot]]
    else:
        per_level = table[free].sum(axis=-2)
    t = len(levels)
    return GpuSums(
        free.sum(axis=-1).astype(np.float64),
        (gpu_free >= GPU_MILLI).sum(axis=-1).astype(np.float64),
        per_level[..., :t],
        per_level[..., t : 2 * t],
        per_level[..., 2 * t :],
    )


def fragmentation(cpu_free: IntArray, gpu_free: IntArray, model: IntArray, target: TargetDistribution) -> FloatArray:
    """FGD's expected node fragmentation F_n (milli-GPU): idle GPU milli the target shapes cannot use (spec §4.6).

    Shapes: `cpu_free` (...,), `gpu_free` (..., G), `model` (...,); the result has shape (...,).
    """
    return fragmentation_of(gpu_sums(gpu_free, target), cpu_free, model, target)


def fragmentation_of(sums: GpuSums, cpu_free: IntArray, model: IntArray, target: TargetDistribution) -> FloatArray:
    _, index = target.levels
    hostable = (
        (sums.fitting[..., index] >= target.num_gpu)
        & (cpu_free[..., None] >= target.cpu)
        & target.allowed.T[model]
        & (target.gpu_milli > 0)
    )
    used: FloatArray = (hostable * sums.usable[..., index]) @ target.prob
    return sums.idle - used


class Score(Protocol):
    """A policy's node score for `pod` on nodes `rows` (which passed `feasible`); higher is better."""

    def __call__(
        self,
        view: GpuView,
        pod: GpuPod,
        rows: IntArray,
        target: TargetDistribution,
        rng: np.random.Generator | None = None,
    ) -> FloatArray: ...


class Choose(Protocol):
    """A policy's choice of GPU slots on the chosen node."""

    def __call__(
        self,
        view: GpuView,
        pod: GpuPod,
        row: int,
        target: TargetDistribution,
        rng: np.random.Generator | None = None,
    ) -> list[int]: ...


def _need(rng: np.random.Generator | None) -> np.random.Generator:
    if rng is None:
        raise ValueError("the random policy needs a seeded numpy Generator (rng)")
    return rng


def random_score(
    view: GpuView, pod: GpuPod, rows: IntArray, target: TargetDistribution, rng: np.random.Generator | None = None
) -> FloatArray:
    """Random (spec §4.1): one uniformly drawn feasible node scores 100, the others 0."""
    scores = np.zeros(len(rows))
    if len(rows):
        scores[_need(rng).integers(len(rows))] = 100.0
    return scores


def random_gpus(
    view: GpuView, pod: GpuPod, row: int, target: TargetDistribution, rng: np.random.Generator | None = None
) -> list[int]:
    """A sharing pod takes a uniformly drawn GPU among those that fit it; whole GPUs: lowest-indexed free ones."""
    if not pod.sharing:
        return choose_gpus(view, pod, row)
    fits = np.flatnonzero(view.gpu_free[row] >= pod.gpu_milli)
    return [int(fits[_need(rng).integers(len(fits))])]


def bestfit_score(
    view: GpuView, pod: GpuPod, rows: IntArray, target: TargetDistribution, rng: np.random.Generator | None = None
) -> FloatArray:
    """BestFit (spec §4.5): least CPU and GPU left after placement, truncated to an integer as the artifact does."""
    cpu_left = view.cpu_free[rows] - max(pod.cpu, 100)
    gpu_left = np.clip(view.gpu_free[rows], 0, None).sum(axis=1) - pod.total_milli
    raw: FloatArray = np.floor(100.0 * (1.0 - (0.5 * cpu_left / MAX_SPEC_CPU + 0.5 * gpu_left / MAX_SPEC_GPU)))
    return raw


def bestfit_gpus(
    view: GpuView, pod: GpuPod, row: int, target: TargetDistribution, rng: np.random.Generator | None = None
) -> list[int]:
    return choose_gpus(view, pod, row)


def _after_sharing(view: GpuView, pod: GpuPod, rows: IntArray) -> tuple[IntArray, BoolArray]:
    """Every node's GPU vector after placing a sharing pod on each slot in turn: (r, G slot tried, G)."""
    free = view.gpu_free[rows]
    g = free.shape[1]
    after = np.repeat(free[:, None, :], g, axis=1) - pod.gpu_milli * np.eye(g, dtype=np.int64)[None]
    return after, free >= pod.gpu_milli


def fgd_delta(view: GpuView, pod: GpuPod, rows: IntArray, target: TargetDistribution) -> tuple[FloatArray, IntArray]:
    """Fragmentation growth avoided by placing the pod (F before - F after, milli) and the GPU slot FGD picks.

    For a sharing pod every fitting slot is tried and the lowest-indexed best one kept (spec §4.6, integer score).
    """
    cpu, model, free = view.cpu_free[rows], view.model[rows], view.gpu_free[rows]
    before = fragmentation(cpu, free, model, target)
    cpu_after = cpu - pod.cpu
    slot = np.full(len(rows), -1, dtype=np.int64)
    if pod.sharing:
        after, fits = _after_sharing(view, pod, rows)
        per_slot = before[:, None] - fragmentation(cpu_after[:, None], after, model[:, None], target)
        per_score = np.where(fits, np.floor(100.0 / (1.0 + np.exp(-per_slot / 1000.0))), -np.inf)
        slot = np.argmax(per_score, axis=1)
        return per_slot[np.arange(len(rows)), slot], slot
    if pod.num_gpu > 0:
        whole = free >= GPU_MILLI
        take = whole & (np.cumsum(whole, axis=1) <= pod.num_gpu)
        free = free - GPU_MILLI * take
    return before - fragmentation(cpu_after, free, model, target), slot


def fgd_score(
    view: GpuView, pod: GpuPod, rows: IntArray, target: TargetDistribution, rng: np.random.Generator | None = None
) -> FloatArray:
    """FGD (spec §4.6): ⌊100·sigmoid(ΔF/1000)⌋, least expected fragmentation growth first."""
    delta, _ = fgd_delta(view, pod, rows, target)
    return np.floor(100.0 / (1.0 + np.exp(-delta / 1000.0)))


def fgd_gpus(
    view: GpuView, pod: GpuPod, row: int, target: TargetDistribution, rng: np.random.Generator | None = None
) -> list[int]:
    """The lowest-indexed GPU with FGD's best integer score for a sharing pod; whole GPUs as `choose_gpus`."""
    if not pod.sharing:
        return choose_gpus(view, pod, row)
    _, slot = fgd_delta(view, pod, np.array([row]), target)
    return [int(slot[0])]


def stranding(cpu_free: IntArray, gpu_free: IntArray, model: IntArray, target: TargetDistribution) -> FloatArray:
    """Expected GPU milli on a node that the target shapes could use by GPU but not by CPU ("stranded" by CPU).

    For shape m: copies that fit by GPU (sharing: sum of floor(free/g_m) over GPUs; whole: floor(free GPUs/k_m))
    minus copies that fit by CPU (floor(cpu_free/c_m)), when positive, times one copy's GPU milli; weighted by p_m.
    """
    return stranding_of(gpu_sums(gpu_free, target), cpu_free, model, target)


def stranding_of(sums: GpuSums, cpu_free: IntArray, model: IntArray, target: TargetDistribution) -> FloatArray:
    _, index = target.levels
    whole_copies = np.floor(sums.fulls[..., None] * (1.0 / np.maximum(target.num_gpu, 1)) + 1e-9)
    by_gpu = np.where(target.gpu_milli >= GPU_MILLI, whole_copies, sums.copies[..., index])
    by_cpu = np.floor(cpu_free[..., None] * (1.0 / np.maximum(target.cpu, 1)) + 1e-9)
    stranded: FloatArray = (np.maximum(by_gpu - by_cpu, 0.0) * target.stranding_weight[model]).sum(axis=-1)
    return stranded


def placement_sums(gpu_free: IntArray, pod: GpuPod, target: TargetDistribution) -> GpuSums:
    """How each node's GpuSums change when `choose_gpus` places the pod there (only the taken GPUs change)."""
    if pod.sharing:
        # tightest fit, lowest index on ties (argmin returns the first minimum)
        slot = np.argmin(np.where(gpu_free >= pod.gpu_milli, gpu_free, np.iinfo(np.int64).max), axis=1)
        old = gpu_free[np.arange(len(gpu_free)), slot][:, None]
        return gpu_sums(old - pod.gpu_milli, target).plus(gpu_sums(old, target), -1.0)
    return target.whole_placement  # a whole-GPU pod empties completely free GPUs


def phalanx_score(
    view: GpuView, pod: GpuPod, rows: IntArray, target: TargetDistribution, rng: np.random.Generator | None = None
) -> FloatArray:
    """phalanx's default GPU scoring: FGD's integer fragmentation gradient, refined by CPU stranding.

    GPU pods: primary = floor(100*sigmoid(dF/1000)) (spec §4.6, evaluated at the slot `choose_gpus` takes), then
    fewer GPU milli stranded by CPU (in steps of `stranding_resolution`) except on models constrained shapes need.
    CPU-only pods: primary = least stranding growth, then the FGD gradient. A GPU pod's gradient loses up to
    SCARCITY_POINTS on the models that model-constrained pods need most (`scarcity`), so pods that may go
    elsewhere do. Remaining ties: the node order.
    """
    cpu, model, free = view.cpu_free[rows], view.model[rows], view.gpu_free[rows]
    before = gpu_sums(free, target)
    after = before if pod.num_gpu == 0 else before.plus(placement_sums(free, pod, target), pod.num_gpu)
    cpu_after = cpu - pod.cpu
    delta = fragmentation_of(before, cpu, model, target) - fragmentation_of(after, cpu_after, model, target)
    gradient = np.floor(100.0 / (1.0 + np.exp(-delta / 1000.0)))
    growth = stranding_of(after, cpu_after, model, target) - stranding_of(before, cpu, model, target)
    less_stranding = np.floor(-growth / target.stranding_resolution)
    if pod.num_gpu == 0:
        return less_stranding * PRIMARY + gradient
    if target.reserved.any():
        gradient = gradient - scarcity(view, target)[model]
    # moving flexible GPU pods to CPU-rich nodes would take GPUs that model-constrained pods cannot replace
    return gradient * PRIMARY + less_stranding * ~target.reserved[model]  # type: ignore[no-any-return]


def scarcity(view: GpuView, target: TargetDistribution) -> FloatArray:
    """Per model: the gradient points (0..SCARCITY_POINTS) a GPU pod gives up there (a pod confined to one
    model loses the same on every node it may take, so only pods with a choice of models are moved).

    A model's pressure is the GPU milli per pod that model-constrained shapes expect of it over the GPU milli the
    cluster has of it; the points are SCARCITY_POINTS * pressure / the highest pressure, rounded. Pods that can
    go anywhere then leave the scarce models to the pods that cannot (on openb's gpuspec25: T4 loses 2 points,
    P100 and V100 1, G2 and G3 none).
    """
    demand = target.constrained_demand
    slots = (view.gpu_free >= 0).sum(axis=1)
    supply = np.bincount(view.model, weights=slots, minlength=len(demand))[: len(demand)] * GPU_MILLI
    pressure = demand / np.maximum(supply, 1.0)
    points: FloatArray = np.zeros(max(len(demand), int(view.model.max(initial=0)) + 1))
    if pressure.max(initial=0.0) > 0:
        points[: len(demand)] = np.floor(SCARCITY_POINTS * pressure / pressure.max() + 0.5)
    return points


def phalanx_gpus(
    view: GpuView, pod: GpuPod, row: int, target: TargetDistribution, rng: np.random.Generator | None = None
) -> list[int]:
    """phalanx places GPUs with `choose_gpus` (tightest fit; whole GPUs: the lowest-indexed free ones)."""
    return choose_gpus(view, pod, row)


POLICIES: dict[str, Score] = {
    "phalanx": phalanx_score,
    "random": random_score,
    "bestfit": bestfit_score,
    "fgd": fgd_score,
}
CHOOSERS: dict[str, Choose] = {
    "phalanx": phalanx_gpus,
    "random": random_gpus,
    "bestfit": bestfit_gpus,
    "fgd": fgd_gpus,
}
