"""DRA allocator benchmark: ms per ``Allocator.allocate`` call (p50/p99/max) and search steps, per shape.

Shapes follow spec/dra.md 3.13-3.14: scheduler_perf's partitionable backtracking (8 devices, count 7, 70Gi counter,
device-1 costs 20Gi), infeasible counts, matchAttribute without a large enough group, a 1,000-node x 8-GPU cluster
with selector- and matchAttribute-heavy claims (one call per node), and the list-attributes stress shape. Targets
to compare with: < 20 ms per pod on backtracking shapes, nothing > 100 ms. Prints a table; never fails on time.

    python benchmarks/dra_allocator_perf.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from phalanx.api import dra
from phalanx.api.models import Node
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.resources import ResourceIndex

DRIVER = "gpu.example.com"


@dataclass
class Shape:
    name: str
    nodes: list[Node]
    slices: list[dra.ResourceSlice]
    claims: list[dra.ResourceClaim]
    allocated: list[dra.AllocationResult]
    features: dict[str, bool]
    rows: list[str] | None = None  # nodes to allocate on (default: the first)
    expect_solution: bool | None = None


def _node(name: str) -> Node:
    return msgspec.convert({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}, Node)


def _slice(name: str, node: str, devices: list[dict[str, Any]], **extra: Any) -> dra.ResourceSlice:
    pool = extra.pop("pool", {"name": node, "generation": 1, "resourceSliceCount": 1})
    spec = {"driver": DRIVER, "nodeName": node, "pool": pool, "devices": devices, **extra}
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, dra.ResourceSlice)


def _claim(
    name: str, requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None
) -> dra.ResourceClaim:
    devices = {"requests": requests, "constraints": constraints or []}
    meta = {"name": name, "namespace": "bench", "uid": f"uid-{name}"}
    return msgspec.convert({"metadata": meta, "spec": {"devices": devices}}, dra.ResourceClaim)


def _request(name: str, count: int, *selectors: str) -> dict[str, Any]:
    sel = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": {"deviceClassName": "gpu", "count": count, "selectors": sel}}


def _taken(node: str, names: list[str]) -> list[dra.AllocationResult]:
    results = [{"request": "r", "driver": DRIVER, "pool": node, "device": n} for n in names]
    return [msgspec.convert({"devices": {"results": results}}, dra.AllocationResult)]


def partitionable_backtracking() -> Shape:
    pool = {"name": "node-0", "generation": 1, "resourceSliceCount": 2}
    devices = [
        {
            "name": f"device-{i}",
            "consumesCounters": [
                {"counterSet": "mem", "counters": {"memory": {"value": "20Gi" if i == 1 else "10Gi"}}}
            ],
        }
        for i in range(8)
    ]
    counters = [{"name": "mem", "counters": {"memory": {"value": "70Gi"}}}]
    slices = [
        _slice("node-0-devices", "node-0", devices, pool=pool),
        _slice("node-0-counters", "node-0", [], pool=pool, sharedCounters=counters),
    ]
    claim = _claim("claim", [_request("gpus", 7)])
    return Shape(
        "partitionable-backtracking (template count 7)",
        [_node("node-0")],
        slices,
        [claim],
        [],
        {},
        expect_solution=True,
    )


def infeasible_count(count: int, free: int) -> Shape:
    devices = [{"name": f"device-{i}"} for i in range(64)]
    taken = [f"device-{i}" for i in range(64 - free)]
    claim = _claim("claim", [_request("gpus", count)])
    name = f"infeasible count={count}, {free} free of 64"
    return Shape(
        name,
        [_node("node-0")],
        [_slice("s", "node-0", devices)],
        [claim],
        _taken("node-0", taken),
        {},
        expect_solution=False,
    )


def match_attribute_no_group() -> Shape:
    # 64 devices in NUMA groups of 7: a request for 8 with matchAttribute numa has no group large enough.
    devices = [{"name": f"device-{i}", "attributes": {"numa": {"int": i // 7}}} for i in range(64)]
    claim = _claim("claim", [_request("gpus", 8)], [{"matchAttribute": f"{DRIVER}/numa"}])
    return Shape(
        "matchAttribute, no group of 8 (64 devices)",
        [_node("node-0")],
        [_slice("s", "node-0", devices)],
        [claim],
        [],
        {},
        expect_solution=False,
    )


def big_cluster(nodes: int = 1000) -> Shape:
    node_objs, slices = [], []
    for n in range(nodes):
        name = f"node-{n:04d}"
        node_objs.append(_node(name))
        devices = [
            {
                "name": f"gpu-{g}",
                "attributes": {
                    "productName": {"string": "H100" if g != 3 else "A100"},
                    "pcieRoot": {"string": f"pci{g // 4}"},
                    "numa": {"int": g // 4},
                    "driverVersion": {"version": "550.1.0"},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            }
            for g in range(8)
        ]
        slices.append(_slice(f"{name}-gpus", name, devices))
    sel = [
        f'device.attributes["{DRIVER}"].productName == "H100"',
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    ]
    claims = [
        _claim("train", [_request("gpus", 4, *sel)], [{"matchAttribute": f"{DRIVER}/pcieRoot"}]),
        _claim("aux", [_request("a", 1, *sel), _request("b", 1, *sel)], [{"matchAttribute": f"{DRIVER}/numa"}]),
    ]
    rows = [node.metadata.name for node in node_objs]
    return Shape(f"{nodes} nodes x 8 GPUs, selector + matchAttribute", node_objs, slices, claims, [], {}, rows, True)


def list_attributes_stress() -> Shape:
    devices = []
    for i in range(64):
        kind = "other" if i < 32 else "gpu"
        values = [*range(i, i + 46), 1000]  # 47 values, 1000 shared by every device
        devices.append({"name": f"device-{i}", "attributes": {"kind": {"string": kind}, "links": {"ints": values}}})
    requests = [_request(f"req-{r}", 1, f'device.attributes["{DRIVER}"].kind == "gpu"') for r in range(32)]
    claim = _claim("claim", requests, [{"matchAttribute": f"{DRIVER}/links"}])
    return Shape(
        "list attributes: 64 devices, 32 non-matching first, 32 requests",
        [_node("node-0")],
        [_slice("s", "node-0", devices)],
        [claim],
        [],
        {"list_type_attributes": True},
        expect_solution=True,
    )


def run(shape: Shape, repeat: int, mods: dict[str, Any]) -> str:
    features = mods["features"].Features(**shape.features)
    table = NodeTable.build(shape.nodes, ResourceIndex())
    inventory = mods["inventory"].DeviceInventory(shape.slices, table, features)
    state = mods["state"].AllocatedState(inventory)
    for allocation in shape.allocated:
        state.add(allocation)
    classes = {
        "gpu": msgspec.convert(
            {
                "metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            },
            dra.DeviceClass,
        )
    }
    allocator = mods["allocator"].Allocator(inventory, state, classes, features)
    rows = [table.index[n] for n in (shape.rows or [shape.nodes[0].metadata.name])]
    times: list[float] = []
    outcome = "?"
    for _ in range(repeat):
        for row in rows:
            start = time.perf_counter()
            result = allocator.allocate(row, shape.claims)
            times.append((time.perf_counter() - start) * 1000)
            outcome = "solution" if result is not None else "none"
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    stats = getattr(allocator, "stats", None)
    steps = getattr(stats, "steps", getattr(stats, "search_steps", "-"))
    calls = getattr(stats, "calls", "-")
    check = "" if shape.expect_solution is None or (outcome == "solution") == shape.expect_solution else "  UNEXPECTED"
    cells = f"{len(times):>6} {statistics.median(times):>8.2f} {p99:>8.2f} {times[-1]:>8.2f}"
    return f"{shape.name:<62} {cells} {calls!s:>8} {steps!s:>10}  {outcome}{check}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="allocate calls per node and shape")
    parser.add_argument("--nodes", type=int, default=1000, help="nodes in the large-cluster shape")
    args = parser.parse_args(argv)
    try:
        from phalanx.dra import allocator, features, inventory, state
    except ImportError as err:
        print(f"phalanx.dra allocator not available: {err}", file=sys.stderr)
        return 0
    mods = {"allocator": allocator, "features": features, "inventory": inventory, "state": state}
    shapes: list[Callable[[], Shape]] = [
        partitionable_backtracking,
        lambda: infeasible_count(8, 7),
        lambda: infeasible_count(32, 31),  # 32 is the most one claim may ask for
        match_attribute_no_group,
        list_attributes_stress,
        lambda: big_cluster(args.nodes),
    ]
    print(f"{'shape':<62} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'allocs':>8} {'steps':>10}  outcome")
    for make in shapes:
        shape = make()
        repeat = 1 if shape.rows else args.repeat
        print(run(shape, repeat, mods), flush=True)
    print("targets: < 20 ms per pod on backtracking shapes, nothing > 100 ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
