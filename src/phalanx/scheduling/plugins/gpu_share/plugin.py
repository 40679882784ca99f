"""GpuShare: scores nodes for pods on clusters whose GPUs are shared DRA devices (consumable capacity), so that
whole GPUs and GPU shares leave as little capacity stranded as possible (phalanx's scoring by default; FGD,
BestFit and Random for comparison, from :mod:`.policy`).

The GPUs are the node-local devices with ``allowMultipleAllocations`` and the configured capacity (``milli`` by
default, 1000 per GPU); a pod's need is its claim's request (count, and the capacity it asks per device; none
means the whole device). The free capacity per GPU is kept from the claims' allocations and updated only on the
nodes whose usage changed. Pods on clusters without such devices are skipped. The target distribution (the pod
shapes expected to come) is given in the plugin args, or estimated from the pods scored so far.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from phalanx.api.errors import FieldError
from phalanx.api.quantity import parse_quantity
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.framework import MAX_NODE_SCORE, CycleState, IntArray
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import ArgsError, PluginSpec, check_fields, mapping, string
from phalanx.scheduling.plugins.gpu_share import policy as gs
from phalanx.scheduling.resource_claims import ClaimBinding

__all__ = ["NAME", "PLUGIN", "GpuShare", "GpuShareArgs", "parse_args"]

NAME = "GpuShare"
_RETARGET_EVERY = 64  # re-estimate the target distribution after this many new pod shapes are seen


@dataclass
class GpuShareArgs:
    """``policy``: phalanx, fgd, bestfit or random. ``capacity``: the device capacity that measures a GPU share.
    ``modelAttribute``: the device attribute naming the GPU model. ``models``/``target``: a fixed target
    distribution (model codes index ``models``). ``exactRanking``: rank scores without folding them into 0..100
    (for a profile whose only score plugin this is, as the FGD experiment runs)."""

    policy: str = "phalanx"
    capacity: str = "milli"
    model_attribute: str = "model"
    models: list[str] = field(default_factory=list)
    target: gs.TargetDistribution | None = None
    exact_ranking: bool = False
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def parse_args(raw: Any) -> GpuShareArgs:
    """GpuShareArgs from a KubeSchedulerConfiguration pluginConfig entry (policy, capacity, modelAttribute)."""
    args = mapping(raw)
    check_fields(args, {"policy", "capacity", "modelAttribute"})
    policy = string(args.get("policy"), "policy", "phalanx")
    if policy not in gs.POLICIES:
        raise ArgsError([FieldError.unsupported("policy", policy, list(gs.POLICIES))])
    return GpuShareArgs(
        policy=policy,
        capacity=string(args.get("capacity"), "capacity", "milli"),
        model_attribute=string(args.get("modelAttribute"), "modelAttribute", "model"),
    )


@dataclass
class _Devices:
    """The shared GPUs per node: device indices (n, G) with -1 where a node has fewer, and their capacity."""

    index: IntArray
    capacity: IntArray
    model: IntArray
    models: list[str]


class GpuShare:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = False
    incremental: ClassVar[bool] = False  # its cache is keyed by the pod's GPU need, which PodInfo.shape lacks

    def __init__(self, args: GpuShareArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args or GpuShareArgs()
        if self.args.policy not in gs.POLICIES:
            raise ValueError(f'GpuShare: unknown policy "{self.args.policy}" (known: {", ".join(gs.POLICIES)})')
        self.handle = handle
        self._devices: _Devices | None = None
        self._inventory: object = None
        self._rows = -1
        self._view: gs.GpuView | None = None
        self._pos = (-1, 0)  # (changes_base, position in the change log) the view reflects
        self._shapes: Counter[tuple[int, int, int, frozenset[int] | None]] = Counter()
        self._target = self.args.target
        self._target_at = 0
        self._rng = np.random.default_rng([self.args.seed, 1])
        # Scores per pod need (below), each row stamped with the row's version when it was scored; a row's version
        # goes up when its usage changes, so a stale score is one whose stamp differs (no pass over the entries).
        self._cache: dict[gs.GpuPod, tuple[npt.NDArray[np.float64], IntArray]] = {}
        self._version: IntArray = np.zeros(0, dtype=np.int64)

    @property
    def binding(self) -> ClaimBinding | None:
        """The engine's claims through the handle (a new binding brings a new inventory, so the device index
        below is rebuilt by its identity check)."""
        return self.handle.claims if self.handle is not None else None

    # --- the cluster as the policy sees it ----------------------------------------------------------------------

    def _devices_of(self, nodes: NodeTable) -> _Devices | None:
        assert self.binding is not None
        inventory = self.binding.tracker.inventory
        if self._inventory is inventory and self._rows == len(nodes):
            return self._devices  # None too: a cluster without shared GPUs is looked at once per device index
        self._inventory, self._view, self._rows = inventory, None, len(nodes)
        per_node: dict[int, list[int]] = {}
        capacity: dict[int, int] = {}
        names: dict[int, str] = {}
        for info in inventory.devices:
            value = info.device.capacity.get(self.args.capacity)
            if info.row < 0 or not info.allow_multiple or value is None:
                continue
            per_node.setdefault(info.row, []).append(info.index)
            capacity[info.index] = int(parse_quantity(value.value))
            attr = info.device.attributes.get(self.args.model_attribute)
            if attr is not None and attr.string is not None:
                names.setdefault(info.row, attr.string)
        if not per_node:
            self._devices = None
            return None
        slots = max(len(v) for v in per_node.values())
        index = np.full((len(nodes), slots), -1, dtype=np.int64)
        caps = np.zeros((len(nodes), slots), dtype=np.int64)
        for row, devices in per_node.items():
            index[row, : len(devices)] = devices
            caps[row, : len(devices)] = [capacity[d] for d in devices]
        models = list(self.args.models) or sorted(set(names.values()))
        code = {m: i for i, m in enumerate(models)}
        model = np.array([code.get(names.get(row, ""), 0) for row in range(len(nodes))], dtype=np.int64)
        self._devices = _Devices(index, caps, model, models)
        return self._devices

    def _current(self, nodes: NodeTable, devices: _Devices) -> gs.GpuView:
        """The view, brought up to date on the rows whose usage changed since it was last read."""
        log = nodes.changes
        if self._view is None or self._pos[0] != nodes.changes_base or len(self._view.cpu_free) != len(nodes):
            self._cache.clear()
            self._view = gs.GpuView(
                np.zeros(len(nodes), dtype=np.int64),
                np.zeros(len(nodes), dtype=np.int64),
                np.full(devices.index.shape, -1, dtype=np.int64),
                devices.model,
            )
            self._version = np.zeros(len(nodes), dtype=np.int64)
            self._refresh(nodes, devices, np.arange(len(nodes)))
        elif self._pos[1] < len(log):
            dirty = np.unique(np.asarray(log[self._pos[1] :], dtype=np.intp))
            self._refresh(nodes, devices, dirty)
            self._version[dirty] += 1
        self._pos = (nodes.changes_base, len(log))
        return self._view

    def _refresh(self, nodes: NodeTable, devices: _Devices, rows: npt.NDArray[np.intp]) -> None:
        assert self._view is not None and self.binding is not None
        cpu, mem = nodes.resources.column["cpu"], nodes.resources.column["memory"]
        free = nodes.allocatable[rows] - nodes.requested[rows]
        self._view.cpu_free[rows] = free[:, cpu]
        self._view.mem_free[rows] = free[:, mem] // 2**20
        state = self.binding.tracker.allocated
        key = self.args.capacity
        for row in rows.tolist():
            for slot, device in enumerate(devices.index[row].tolist()):
                if device >= 0:
                    used = state.consumed(device).get(key, 0)
                    self._view.gpu_free[row, slot] = int(devices.capacity[row, slot]) - int(used)

    # --- the pod as the policy sees it -------------------------------------------------------------------------

    def _need(self, pod: PodInfo, devices: _Devices) -> gs.GpuPod:
        """The pod's CPU (milli), memory (MiB) and GPUs: the first request of its claims that asks for the shared
        devices' capacity (or, without a capacity request, whole devices)."""
        assert self.binding is not None
        num, milli = 0, 0
        resolved = self.binding.claims(pod)
        for claim in self.binding.tracker.unallocated(resolved.claims) if not resolved.waiting else []:
            for request in claim.spec.devices.requests:
                exact = request.exactly
                if exact is None:
                    continue
                asked = exact.capacity.requests.get(self.args.capacity) if exact.capacity else None
                num = exact.count or 1
                milli = int(parse_quantity(asked)) if asked is not None else int(devices.capacity.max())
                break
            if num:
                break
        return gs.GpuPod(pod.requests.get("cpu", 0), pod.requests.get("memory", 0) // 2**20, num, milli)

    def _target_for(self, pod: gs.GpuPod, devices: _Devices) -> gs.TargetDistribution:
        if self.args.target is not None:
            return self.args.target
        self._shapes[(pod.cpu, pod.gpu_milli, pod.num_gpu, None)] += 1
        if self._target is None or len(self._shapes) - self._target_at >= _RETARGET_EVERY or self._target_at == 0:
            shapes = [s for s, n in self._shapes.items() for _ in range(n)]
            self._target = gs.typical_pods(shapes, len(devices.models) or 1)
            self._target_at = len(self._shapes)
        return self._target

    # --- Score --------------------------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        if self.binding is None:
            return None
        devices = self._devices_of(nodes)
        if devices is None:
            return None  # no shared GPUs: nothing to say
        view = self._current(nodes, devices)
        need = self._need(pod, devices)
        target = self._target_for(need, devices)
        scores = self._scores(view, need, feasible, target)
        # Dense ranks keep the order of the policy's (lexicographic, possibly float) scores exactly.
        ranks = np.unique(np.asarray(scores, dtype=np.float64), return_inverse=True)[1]
        return ranks.reshape(-1).astype(np.int64)

    def _scores(
        self, view: gs.GpuView, need: gs.GpuPod, rows: IntArray, target: gs.TargetDistribution
    ) -> npt.NDArray[np.float64]:
        """The policy's scores on ``rows``. A node's score depends on that node alone, so scores are kept per pod
        need and recomputed only on nodes whose usage changed since (Random draws anew every time). The policies
        read the pod's CPU and GPUs only (memory and models are Filter's), so pods that differ in those alone
        share their scores."""
        policy = gs.POLICIES[self.args.policy]
        if self.args.policy == "random" or self.args.target is None:
            return np.asarray(policy(view, need, rows, target, self._rng), dtype=np.float64)
        key = gs.GpuPod(need.cpu, 0, need.num_gpu, need.gpu_milli)
        if key not in self._cache:
            n = len(view.cpu_free)
            self._cache[key] = (np.zeros(n, dtype=np.float64), np.full(n, -1, dtype=np.int64))
        values, stamp = self._cache[key]
        todo = rows[stamp[rows] != self._version[rows]]
        if len(todo):
            values[todo] = policy(view, key, todo, target, self._rng)
            stamp[todo] = self._version[todo]
        return values[rows]

    def normalize(self, scores: IntArray) -> IntArray:
        if self.args.exact_ranking or not len(scores):
            return scores
        top = int(scores.max())
        return scores * MAX_NODE_SCORE // top if top else np.zeros(len(scores), dtype=np.int64)


def _new(args: GpuShareArgs | None, handle: Handle) -> GpuShare:
    return GpuShare(args, handle)


# phalanx: fragmentation-aware scoring for shared GPUs (DRA consumable capacity); skips clusters without them.
PLUGIN: PluginSpec[GpuShareArgs] = PluginSpec(NAME, _new, frozenset({"score"}), parse_args=parse_args, default_weight=1)
