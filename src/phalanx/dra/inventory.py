"""Every device of every ResourceSlice, indexed once per (slices, node table): the allocator's view of the cluster.

It implements GatherPools (spec dra.md §3.2-3.3): which slices a node can use, pool generations and completeness,
invalid pools, and the deterministic search order (pools by driver and name with binding-condition pools last,
slices by name, devices in slice order). Slices are immutable here, so per-node answers are computed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import msgspec
import numpy as np

from phalanx.api import dra
from phalanx.api.models import NodeSelector, Quantity
from phalanx.api.quantity import QuantityError, parse_quantity
from phalanx.arrays import BoolArray, IntArray
from phalanx.cluster.node_selector import terms_mask
from phalanx.cluster.nodes import NodeTable
from phalanx.dra.features import DEFAULT_FEATURES, Features

__all__ = ["DeviceInfo", "DeviceInventory", "NodePool", "PoolInfo"]

CounterSets = dict[str, dict[str, Fraction]]

_NOWHERE = -2  # node-local to a node that is not in the table
_SORTED_JSON = msgspec.json.Encoder(order="sorted")


@dataclass(slots=True)
class DeviceInfo:
    """One device with what the allocator needs precomputed. ``row`` is the node row of a node-local device (-1
    when not node-local); ``mask`` the nodes a shared device serves (None = every node)."""

    index: int
    driver: str
    pool: str
    pool_id: int
    generation: int
    slice_name: str
    device: dra.Device
    per_device_node_selection: bool
    node_name: str | None
    node_selector: NodeSelector | None
    row: int
    mask: BoolArray | None
    consumes: tuple[tuple[str, str, Fraction], ...]  # (counter set, counter, amount)
    allow_multiple: bool
    signature: int  # equal for devices CEL cannot tell apart (driver, attributes, capacity, multi-allocation)
    static_key: tuple[object, ...]  # equal for devices the allocator treats alike apart from selectors/attributes
    static_id: int  # equal for equal static_key

    @property
    def name(self) -> str:
        return self.device.name

    @property
    def binds_to_node(self) -> bool:
        return bool(self.device.binds_to_node)


@dataclass(slots=True)
class _Slice:
    obj: dra.ResourceSlice
    pool_id: int
    generation: int
    count: int  # resourceSliceCount
    row: int  # node-local slice: its node row (or _NOWHERE); -1 otherwise
    mask: BoolArray | None  # shared slice: nodes it targets; None = all (also counter-set slices)
    devices: list[int] = field(default_factory=list)


@dataclass(slots=True)
class PoolInfo:
    """One (driver, pool) over the whole cluster: its slices per generation, counters and validity."""

    driver: str
    name: str
    generations: dict[int, list[int]] = field(default_factory=dict)  # generation -> slice indices
    # generation -> number of slices of the pool in the cluster, including slices this allocator cannot use (a
    # counter-set slice with DRAPartitionableDevices off still counts towards resourceSliceCount)
    published: dict[int, int] = field(default_factory=dict)
    counter_sets: dict[int, CounterSets] = field(default_factory=dict)
    invalid: dict[int, str] = field(default_factory=dict)

    @property
    def max_generation(self) -> int:
        return max(self.generations)

    @property
    def newest_published(self) -> int:
        return max(self.published)


@dataclass(slots=True)
class NodePool:
    """A pool as one node sees it (GatherPools): the slices targeting the node and whether it can be used."""

    pool_id: int
    driver: str
    name: str
    generation: int
    slices: list[int]
    incomplete: bool
    invalid: str | None
    binding_conditions: bool

    @property
    def pool_id_text(self) -> str:
        return f"{self.driver}/{self.name}"


class DeviceInventory:
    """Devices of all slices in a stable order, plus per-node visibility (computed on first use per row)."""

    def __init__(
        self, slices: Sequence[dra.ResourceSlice], nodes: NodeTable, features: Features = DEFAULT_FEATURES
    ) -> None:
        self.nodes = nodes
        self.features = features
        self.devices: list[DeviceInfo] = []
        self.pool_list: list[PoolInfo] = []
        self._pool_ids: dict[tuple[str, str], int] = {}
        self._slices: list[_Slice] = []
        self._local: dict[int, list[int]] = {}  # row -> node-local slice indices
        self._shared: list[int] = []
        self._ids: dict[tuple[str, str, str], int] = {}
        self._signatures: dict[bytes, int] = {}
        self._static_ids: dict[tuple[object, ...], int] = {}
        self._node_pools: dict[int, list[NodePool]] = {}
        self._visible: dict[int, list[int]] = {}
        self._index(slices)
        self.device_node: IntArray = np.array([max(d.row, -1) for d in self.devices], dtype=np.int64)

    # --- building -------------------------------------------------------------------------------------------------

    def _usable(self, spec: dra.ResourceSliceSpec) -> bool:
        if not self.features.partitionable and (spec.per_device_node_selection or spec.shared_counters):
            return False
        # A slice without a known node-selection field comes from a newer API: ignore it, as upstream does.
        return bool(spec.node_name or spec.node_selector or spec.all_nodes or spec.per_device_node_selection) or bool(
            spec.shared_counters
        )

    def _index(self, slices: Sequence[dra.ResourceSlice]) -> None:
        usable = [s for s in slices if self._usable(s.spec)]
        for key in sorted({(s.spec.driver, s.spec.pool.name) for s in usable}):
            self._pool_ids[key] = len(self.pool_list)
            self.pool_list.append(PoolInfo(driver=key[0], name=key[1]))
        for sl in slices:
            pool_id = self._pool_ids.get((sl.spec.driver, sl.spec.pool.name))
            if pool_id is not None:
                published = self.pool_list[pool_id].published
                published[sl.spec.pool.generation] = published.get(sl.spec.pool.generation, 0) + 1
        ordered = sorted(usable, key=lambda s: (self._pool_ids[(s.spec.driver, s.spec.pool.name)], s.metadata.name))
        for obj in ordered:
            self._add_slice(obj)
        for pool in self.pool_list:
            for gen, members in pool.generations.items():
                pool.counter_sets[gen], problem = self._counter_sets(members)
                problem = problem or self._check_devices(members, pool.counter_sets[gen])
                if problem:
                    pool.invalid[gen] = problem
            for gen, members in pool.generations.items():
                for s in members:
                    for d in self._slices[s].devices:
                        dev_key = (pool.driver, pool.name, self.devices[d].name)
                        if dev_key not in self._ids or self.devices[self._ids[dev_key]].generation <= gen:
                            self._ids[dev_key] = d

    def _add_slice(self, obj: dra.ResourceSlice) -> None:
        spec = obj.spec
        pool_id = self._pool_ids[(spec.driver, spec.pool.name)]
        index = len(self._slices)
        row, mask = -1, None
        if spec.node_name:
            row = self.nodes.index.get(spec.node_name, _NOWHERE)
        elif spec.node_selector is not None:
            mask = terms_mask(spec.node_selector.node_selector_terms, self.nodes)
        sl = _Slice(obj, pool_id, spec.pool.generation, spec.pool.resource_slice_count, row, mask)
        self._slices.append(sl)
        self.pool_list[pool_id].generations.setdefault(spec.pool.generation, []).append(index)
        per_device = bool(spec.per_device_node_selection)
        for device in spec.devices:
            info = self._device(obj, pool_id, device, per_device)
            sl.devices.append(info.index)
        if per_device:
            sl.mask = np.zeros(len(self.nodes), dtype=bool)
            for d in sl.devices:
                info = self.devices[d]
                if info.row >= 0:
                    sl.mask[info.row] = True
                elif info.row == -1:
                    sl.mask |= True if info.mask is None else info.mask
        if row != -1:
            self._local.setdefault(row, []).append(index)
        else:
            self._shared.append(index)

    def _device(self, obj: dra.ResourceSlice, pool_id: int, device: dra.Device, per_device: bool) -> DeviceInfo:
        spec = obj.spec
        node_name, selector = (device.node_name, device.node_selector) if per_device else (spec.node_name, None)
        selector = selector if per_device else spec.node_selector
        row, mask = -1, None
        if node_name:
            row = self.nodes.index.get(node_name, _NOWHERE)
        elif selector is not None:
            mask = terms_mask(selector.node_selector_terms, self.nodes)
        elif per_device and not device.all_nodes:
            row = _NOWHERE  # perDeviceNodeSelection without any node field: usable nowhere
        multi = bool(device.allow_multiple_allocations) and self.features.consumable_capacity
        consumes = tuple(
            (c.counter_set, name, _quantity(counter.value))
            for c in device.consumes_counters
            for name, counter in sorted(c.counters.items())
        )
        sig_bytes = _SORTED_JSON.encode([spec.driver, device.attributes, device.capacity, multi])
        signature = self._signatures.setdefault(sig_bytes, len(self._signatures))
        scope: object = "local" if (node_name or device.binds_to_node) else _SORTED_JSON.encode(selector)
        index = len(self.devices)
        # Not the pool: counters are per pool, so callers that compare devices add it where it matters.
        static_key = (
            _SORTED_JSON.encode(device.capacity),
            consumes or None,
            tuple((t.key, t.value, t.effect) for t in device.taints),
            multi,
            scope,
            bool(device.binding_conditions),
        )
        static_id = self._static_ids.setdefault(static_key, len(self._static_ids))
        info = DeviceInfo(
            index=index,
            driver=spec.driver,
            pool=spec.pool.name,
            pool_id=pool_id,
            generation=spec.pool.generation,
            slice_name=obj.metadata.name,
            device=device,
            per_device_node_selection=per_device,
            node_name=node_name,
            node_selector=selector,
            row=row,
            mask=mask,
            consumes=consumes,
            allow_multiple=multi,
            signature=signature,
            static_key=static_key,
            static_id=static_id,
        )
        self.devices.append(info)
        return info

    def _counter_sets(self, members: list[int]) -> tuple[CounterSets, str | None]:
        sets: CounterSets = {}
        for s in members:
            for cs in self._slices[s].obj.spec.shared_counters:
                if cs.name in sets:
                    return sets, f"duplicate counter set name {cs.name}"
                sets[cs.name] = {name: _quantity(c.value) for name, c in cs.counters.items()}
        return sets, None

    def _check_devices(self, members: list[int], sets: CounterSets) -> str | None:
        seen: set[str] = set()
        for s in members:
            for d in self._slices[s].devices:
                info = self.devices[d]
                if info.name in seen:
                    return f"duplicate device name {info.name}"
                seen.add(info.name)
                if not self.features.partitionable:
                    continue  # counters are not used at all then
                for consumption in info.device.consumes_counters:
                    known = sets.get(consumption.counter_set)
                    if known is None:
                        return (
                            f"device {info.name} consumes counters from unknown counter set {consumption.counter_set}"
                        )
                    for counter in consumption.counters:
                        if counter not in known:
                            set_name = consumption.counter_set
                            return f"device {info.name} consumes unknown counter {counter} of counter set {set_name}"
        return None

    # --- queries --------------------------------------------------------------------------------------------------

    def lookup(self, driver: str, pool: str, name: str) -> int | None:
        """The device ``driver/pool/name`` (of the newest generation that has it), or None."""
        return self._ids.get((driver, pool, name))

    def scope_mask(self, device: int) -> BoolArray | None:
        """The nodes a device can be used from: one node for a node-local device, None for every node."""
        info = self.devices[device]
        if info.row != -1:
            mask = np.zeros(len(self.nodes), dtype=bool)
            if info.row >= 0:
                mask[info.row] = True
            return mask
        return info.mask

    def counter_sets(self, pool_id: int) -> CounterSets:
        """The shared counters of a pool's newest generation."""
        pool = self.pool_list[pool_id]
        return pool.counter_sets.get(pool.max_generation, {})

    def pool_positions(self, row: int) -> dict[int, int]:
        """Pool id -> its position in :meth:`node_pools` for node ``row``."""
        return {p.pool_id: i for i, p in enumerate(self.node_pools(row))}

    def node_pools(self, row: int) -> list[NodePool]:
        """GatherPools for node ``row``, in search order (binding-condition pools last)."""
        cached = self._node_pools.get(row)
        if cached is None:
            cached = self._node_pools[row] = self._gather(row)
        return cached

    def visible(self, row: int) -> Sequence[int]:
        """Devices node ``row`` may allocate, in search order: usable pools only, and for perDeviceNodeSelection
        only devices whose own node fields match the node."""
        cached = self._visible.get(row)
        if cached is None:
            cached = []
            for pool in self.node_pools(row):
                if pool.incomplete or pool.invalid:
                    continue
                for s in pool.slices:
                    cached.extend(d for d in self._slices[s].devices if self._serves(d, row))
            self._visible[row] = cached
        return cached

    def pool_slice_devices(self, pool: NodePool) -> list[int]:
        """All devices of a node pool's slices (for ``All`` requests, which check per-device nodes themselves)."""
        return [d for s in pool.slices for d in self._slices[s].devices]

    def serves(self, device: int, row: int) -> bool:
        return self._serves(device, row)

    def _serves(self, device: int, row: int) -> bool:
        info = self.devices[device]
        if not info.per_device_node_selection:
            return True
        if info.row != -1:
            return info.row == row
        return info.mask is None or bool(info.mask[row])

    def _relevant(self, row: int) -> list[int]:
        out = list(self._local.get(row, ()))
        for s in self._shared:
            sl = self._slices[s]
            if sl.mask is None or sl.obj.spec.shared_counters or bool(sl.mask[row]):
                out.append(s)
        return out

    def _gather(self, row: int) -> list[NodePool]:
        groups: dict[int, list[int]] = {}
        for s in self._relevant(row):
            groups.setdefault(self._slices[s].pool_id, []).append(s)
        pools: list[NodePool] = []
        for pool_id, members in groups.items():
            pool = self.pool_list[pool_id]
            gen = max(self._slices[s].generation for s in members)
            members = sorted((s for s in members if self._slices[s].generation == gen), key=self._slice_name)
            wanted = self._slices[members[0]].count
            incomplete = False
            if len(members) != wanted:
                if pool.newest_published > gen:
                    continue  # obsolete: a newer generation is being published elsewhere
                incomplete = pool.published[gen] != wanted
            has_conditions = any(
                self.devices[d].device.binding_conditions for s in members for d in self._slices[s].devices
            )
            invalid = pool.invalid.get(gen)
            pools.append(NodePool(pool_id, pool.driver, pool.name, gen, members, incomplete, invalid, has_conditions))
        pools.sort(key=lambda p: (p.binding_conditions, p.driver, p.name))
        return pools

    def _slice_name(self, s: int) -> str:
        return self._slices[s].obj.metadata.name


def _quantity(q: Quantity) -> Fraction:
    try:
        return parse_quantity(q)
    except QuantityError:
        return Fraction(0)
