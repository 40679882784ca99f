"""The compact cluster spec of ``phalanx simulate --cluster``: pools of identical nodes, racks and blocks, DRA
devices, node events and generated failures (docs/simulate.md), and the Nodes, DeviceClasses and ResourceSlices it
stands for.

What a pool becomes is Kubernetes objects, so a pool is checked by generating them and running the validation
``phalanx validate`` runs (node names, labels and allocatable; the devices' slice and class), with each problem
reported at the pool field it comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.errors import FieldError
from phalanx.api.loader import json_type
from phalanx.api.models import Node, NodeStatus, ObjectMeta
from phalanx.api.quantity import QuantityError, parse_quantity, value
from phalanx.api.validation import validate_device_class, validate_node, validate_resource_slice
from phalanx.sim.devices import (
    MAX_DEVICES,
    ClusterDevices,
    PoolDevices,
    device_classes,
    parse_pool_devices,
    resource_slices,
)
from phalanx.sim.faults import NodeEvent, NodeFailures, parse_failures, parse_node_events
from phalanx.sim.inputs import REQUIRED, Fields

__all__ = [
    "BLOCK",
    "GPU",
    "HOSTNAME",
    "MAX_NODES",
    "POOL",
    "RACK",
    "ClusterSpec",
    "Pool",
    "devices_of",
    "nodes_of",
]

BLOCK = "phalanx.dev/block"
RACK = "phalanx.dev/rack"
POOL = "phalanx.dev/pool"
HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
MAX_NODES = 100_000  # in one spec: beyond what the simulator is built to replay in reasonable time
_SPEC_FIELDS = ("pools", "nodeEvents", "failures")
_POOL_FIELDS = ("name", "count", "allocatable", "nodesPerRack", "racksPerBlock", "dra", "devices")


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
        return value(parse_quantity(self.allocatable.get(GPU, 0)))


@dataclass
class ClusterSpec:
    pools: list[Pool] = field(default_factory=list)
    node_events: list[NodeEvent] = field(default_factory=list)
    failures: NodeFailures | None = None

    @classmethod
    def parse(cls, raw: Any, where: str, line_of: Callable[[str], int] | None = None) -> ClusterSpec:
        """The spec ``raw`` (parsed YAML) from file ``where``; ``line_of`` maps a field path to its line. Raises
        InputError listing every problem."""
        fields = Fields(where, line_of or (lambda _: 0))
        spec = fields.mapping(raw, "", _SPEC_FIELDS)
        if spec and "pools" not in spec:
            fields.add(FieldError.required("pools"))
        pools = [_pool(p, fields, f"pools[{i}]") for i, p in enumerate(fields.items(spec.get("pools"), "pools"))]
        _check_pools(pools, fields)
        names = {f"{p.name}-{i:04d}" for p in pools for i in range(p.count)}
        events = parse_node_events(spec.get("nodeEvents"), fields, targets=(names, {p.name for p in pools}))
        failures = parse_failures(spec.get("failures"), fields)
        fields.check()
        return cls(pools, events, failures)


def _pool(raw: Any, fields: Fields, at: str) -> Pool:
    before = len(fields.problems)
    p = fields.mapping(raw, at, _POOL_FIELDS)
    pool = Pool(
        fields.text(p.get("name"), f"{at}.name", REQUIRED),
        fields.integer(p.get("count"), f"{at}.count", REQUIRED, high=MAX_NODES),
        _allocatable(p.get("allocatable"), fields, f"{at}.allocatable"),
        fields.integer(p.get("nodesPerRack"), f"{at}.nodesPerRack", 0, high=MAX_NODES),
        fields.integer(p.get("racksPerBlock"), f"{at}.racksPerBlock", 0, high=MAX_NODES),
    )
    pool.devices = parse_pool_devices(p, fields, at)
    if len(fields.problems) == before:  # the objects of a pool with bad fields would only repeat the problems
        _check_objects(pool, fields, at)
    return pool


def _allocatable(raw: Any, fields: Fields, at: str) -> dict[str, str | int]:
    """Resource name -> quantity; the values are checked as a Node's allocatable (``_check_objects``)."""
    if raw is None:
        fields.add(FieldError.required(at))
        return {}
    if not isinstance(raw, dict):
        fields.mapping(raw, at, ())  # the error
        return {}
    out: dict[str, str | int] = {}
    for name, q in raw.items():
        if isinstance(q, bool) or not isinstance(q, str | int | float) or not isinstance(name, str):
            fields.invalid(f"{at}[{name}]", q if isinstance(q, bool) else json_type(q), "must be a quantity")
            continue
        out[name] = q if isinstance(q, str | int) else repr(q)  # 0.5 as written, exactly
    return out


def _check_pools(pools: list[Pool], fields: Fields) -> None:
    seen: set[str] = set()
    for i, pool in enumerate(pools):
        if pool.name in seen:
            fields.add(FieldError.duplicate(f"pools[{i}].name", pool.name))  # their nodes would share names
        seen.add(pool.name)
    total = sum(p.count for p in pools)
    if total > MAX_NODES:
        fields.add(FieldError.invalid("pools", total, f"must have at most {MAX_NODES} nodes in all"))
    if not pools and not fields.problems:
        fields.add(FieldError.required("pools", "at least one pool"))
    for i, (device_class, problem) in _disagreeing_classes(pools).items():
        fields.add(FieldError.invalid(f"pools[{i}].devices.class", device_class, problem))


# --- the objects a pool stands for ---------------------------------------------------------------------------------


def _node(pool: Pool, i: int) -> Node:
    """Node ``i`` of ``pool``: named ``<pool>-<i>``, labelled with its hostname, pool, rack and block."""
    name = f"{pool.name}-{i:04d}"
    labels = {HOSTNAME: name, POOL: pool.name}
    if pool.nodes_per_rack:
        rack = i // pool.nodes_per_rack
        labels[RACK] = f"{pool.name}-rack-{rack:03d}"
        if pool.racks_per_block:
            labels[BLOCK] = f"{pool.name}-block-{rack // pool.racks_per_block:03d}"
    alloc: dict[str, str | int | float] = {"pods": 110, **pool.allocatable}  # kubelet's default max pods
    if pool.devices is not None:
        alloc.pop(GPU, None)  # the DRA driver publishes the GPUs; no device plugin advertises them
    return Node(metadata=ObjectMeta(name=name, labels=labels), status=NodeStatus(allocatable=alloc))


def nodes_of(spec: ClusterSpec) -> list[Node]:
    return [_node(pool, i) for pool in spec.pools for i in range(pool.count)]


def devices_of(spec: ClusterSpec, nodes: list[Node]) -> ClusterDevices | None:
    """The DeviceClasses and ResourceSlices the pools with ``devices`` publish for ``nodes`` (``nodes_of``)."""
    pools = {p.name: p for p in spec.pools if p.devices is not None}
    if not pools:
        return None
    classes = device_classes(p.devices for p in pools.values() if p.devices is not None)
    slices = []
    for node in nodes:
        pool = pools.get(node.metadata.labels.get(POOL, ""))
        if pool is not None and pool.devices is not None and pool.gpus_per_node():
            slices.append(resource_slices(node, pool.devices, pool.gpus_per_node()))
    drivers = frozenset(p.devices.driver for p in pools.values() if p.devices is not None)
    return ClusterDevices(classes, slices, drivers)


def _check_objects(pool: Pool, fields: Fields, at: str) -> None:
    """Validate the first and last node of the pool (names and labels grow with the index), its GPUs' slice
    and DeviceClass, as kube-apiserver would, reporting each problem at the pool field it comes from."""
    found: dict[tuple[str, str], None] = {}  # ordered and without repeats (both nodes share most problems)
    for i in sorted({0, max(pool.count - 1, 0)}):
        node = _node(pool, i)
        for err in validate_node(node):
            found[(_node_field(err.path, at), err.message)] = None
        if pool.devices is None:
            continue
        gpus = _gpus(pool)
        count_at = f"{at}.devices.count" if pool.devices.count else f"{at}.allocatable[{GPU}]"
        if not gpus:
            fields.add(FieldError.required(f"{at}.devices.count", f"no GPUs to publish (or set allocatable {GPU})"))
            return
        if gpus > MAX_DEVICES:  # the slice's limit; checked before building a slice that large
            fields.add(FieldError.too_many(count_at, gpus, MAX_DEVICES))
            return
        errs = validate_resource_slice(resource_slices(node, pool.devices, gpus))
        bad_driver = any(err.path == "spec.driver" for err in errs)  # the slice is named after it, too
        for err in errs:
            if err.path == "metadata.name" and bad_driver:
                continue
            path = count_at if err.path == "spec.devices" else _slice_field(err.path, at, pool.devices)
            found[(path, err.message)] = None
    if pool.devices is not None:
        for cls in device_classes([pool.devices]):
            for err in validate_device_class(cls):
                found[(_class_field(err.path, at), err.message)] = None
    for path, message in found:
        fields.add(FieldError(path, message))


def _gpus(pool: Pool) -> int:
    try:
        return pool.gpus_per_node()
    except QuantityError:
        return 0  # reported on the allocatable already


def _node_field(path: str, at: str) -> str:
    if path.startswith(("status.allocatable.", "status.capacity.")):
        return f"{at}.allocatable[{path.split('.', 2)[2]}]"
    return f"{at}.name"  # the node's name and every label derive from the pool's name


def _slice_field(path: str, at: str, devices: PoolDevices) -> str:
    if path.startswith("spec.driver"):
        return f"{at}.devices.driver"
    if path.startswith("spec.devices["):
        rest = path.split("]", 1)[1]
        if rest.startswith(".capacity"):
            return f"{at}.devices.memory"
        for name in devices.attributes:
            if rest.startswith(f".attributes[{name}]"):
                return f"{at}.devices.attributes[{name}]"
        if rest.startswith(".attributes[productName]"):
            return f"{at}.devices.productName"
    if path.startswith(("metadata.name", "spec.pool", "spec.nodeName", "spec.devices")):
        return f"{at}.name"
    return f"{at}.devices"


def _class_field(path: str, at: str) -> str:
    if path.startswith("metadata.name"):
        return f"{at}.devices.class"
    if path.startswith("spec.extendedResourceName"):
        return f"{at}.devices.extendedResourceName"
    return f"{at}.devices.driver"  # the selector is made from the driver


def _disagreeing_classes(pools: Iterable[Pool]) -> Mapping[int, tuple[str, str]]:
    """Pool index -> (class, problem), for pools naming a DeviceClass another pool defines differently."""
    by_name: dict[str, PoolDevices] = {}
    out: dict[int, tuple[str, str]] = {}
    for i, pool in enumerate(pools):
        if pool.devices is None:
            continue
        seen = by_name.setdefault(pool.devices.device_class, pool.devices)
        if (seen.driver, seen.extended_resource_name) != (pool.devices.driver, pool.devices.extended_resource_name):
            detail = "another pool gives this DeviceClass a different driver or extendedResourceName"
            out[i] = (pool.devices.device_class, detail)
    return out
