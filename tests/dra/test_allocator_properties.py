"""Property tests for the DRA allocator on small random instances, checked against a brute-force oracle.

Instances: one node, up to 8 devices in one pool (attributes, NoSchedule taints, shared counters, some already
allocated), one claim with up to 2 ExactCount requests (count <= 3, selectors, tolerations) and an optional
matchAttribute or distinctAttribute constraint. The oracle enumerates device subsets directly from the instance.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import pytest
from dra_casefile import build_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.quantity import parse_quantity
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.resources import ResourceIndex

MODEL_SELECTOR = 'device.attributes["driver-a"].model == "a"'


@st.composite
def instances(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 8))
    counter = draw(st.integers(2, 8))
    devices = []
    for i in range(n):
        devices.append(
            {
                "name": f"device-{i}",
                "numa": draw(st.integers(0, 2)),
                "model": draw(st.sampled_from(["a", "b"])),
                "tainted": draw(st.booleans()),
                "memory": draw(st.integers(0, 3)),
                "allocated": draw(st.integers(0, 4)) == 0,
            }
        )
    requests = []
    for r in range(draw(st.integers(1, 2))):
        requests.append(
            {
                "name": f"req-{r}",
                "count": draw(st.integers(1, 3)),
                "selector": draw(st.booleans()),
                "tolerates": draw(st.booleans()),
            }
        )
    constraint = draw(st.sampled_from([None, "match", "distinct"]))
    return {"devices": devices, "requests": requests, "constraint": constraint, "counter": counter}


def _raw_case(inst: dict[str, Any]) -> dict[str, Any]:
    devices = []
    for d in inst["devices"]:
        dev: dict[str, Any] = {
            "name": d["name"],
            "attributes": {"numa": {"int": d["numa"]}, "model": {"string": d["model"]}},
            "consumesCounters": [{"counterSet": "cs", "counters": {"memory": {"value": d["memory"]}}}],
        }
        if d["tainted"]:
            dev["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
        devices.append(dev)
    pool = {"name": "pool-1", "resourceSliceCount": 2}
    requests = []
    for r in inst["requests"]:
        exactly: dict[str, Any] = {"deviceClassName": "class-a", "count": r["count"]}
        if r["selector"]:
            exactly["selectors"] = [MODEL_SELECTOR]
        if r["tolerates"]:
            exactly["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
        requests.append({"name": r["name"], "exactly": exactly})
    constraints = []
    if inst["constraint"] == "match":
        constraints = [{"matchAttribute": "driver-a/numa"}]
    elif inst["constraint"] == "distinct":
        constraints = [{"distinctAttribute": "driver-a/numa"}]
    return {
        "name": "property",
        "classes": [{"name": "class-a", "driver": "driver-a"}],
        "slices": [
            {"name": "slice-1", "nodeName": "node-1", "pool": pool, "driver": "driver-a", "devices": devices},
            {
                "name": "slice-2",
                "nodeName": "node-1",
                "pool": pool,
                "driver": "driver-a",
                "sharedCounters": [{"name": "cs", "counters": {"memory": {"value": inst["counter"]}}}],
            },
        ],
        "allocated": [
            {"driver": "driver-a", "pool": "pool-1", "device": d["name"]} for d in inst["devices"] if d["allocated"]
        ],
        "claims": [{"name": "claim-0", "requests": requests, "constraints": constraints}],
        "expect": {"unsatisfiable": True},
    }


def _allocate(inst: dict[str, Any]) -> Any:
    allocator_mod = pytest.importorskip("phalanx.dra.allocator")
    features_mod = pytest.importorskip("phalanx.dra.features")
    inventory_mod = pytest.importorskip("phalanx.dra.inventory")
    state_mod = pytest.importorskip("phalanx.dra.state")
    case = build_case("property", _raw_case(inst))
    features = features_mod.Features()
    table = NodeTable.build(case.nodes, ResourceIndex())
    inventory = inventory_mod.DeviceInventory(case.slices, table, features)
    state = state_mod.AllocatedState(inventory)
    for allocation in case.allocated:
        state.add(allocation)
    allocator = allocator_mod.Allocator(inventory, state, case.classes, features)
    return allocator.allocate(table.index["node-1"], case.claims)


# --- the oracle ---------------------------------------------------------------------------------------------------


def _eligible(inst: dict[str, Any], request: dict[str, Any], device: dict[str, Any]) -> bool:
    if device["allocated"]:
        return False
    if request["selector"] and device["model"] != "a":
        return False
    return not (device["tainted"] and not request["tolerates"])


def _valid(inst: dict[str, Any], chosen: list[tuple[dict[str, Any], dict[str, Any]]]) -> bool:
    """Whether (request, device) pairs form a correct allocation: distinct devices, counters, constraint."""
    names = [d["name"] for _, d in chosen]
    if len(set(names)) != len(names):
        return False
    if not all(_eligible(inst, r, d) for r, d in chosen):
        return False
    used = sum(d["memory"] for d in inst["devices"] if d["allocated"]) + sum(d["memory"] for _, d in chosen)
    if used > inst["counter"]:
        return False
    numas = [d["numa"] for _, d in chosen]
    if inst["constraint"] == "match" and len(set(numas)) > 1:
        return False
    return not (inst["constraint"] == "distinct" and len(set(numas)) != len(numas))


def oracle_has_solution(inst: dict[str, Any]) -> bool:
    per_request = [
        [
            [(r, d) for d in combo]
            for combo in itertools.combinations(
                [d for d in inst["devices"] if _eligible(inst, r, d)],
                r["count"],
            )
        ]
        for r in inst["requests"]
    ]
    return any(_valid(inst, [p for part in parts for p in part]) for parts in itertools.product(*per_request))


def _pairs(inst: dict[str, Any], result: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    requests = {r["name"]: r for r in inst["requests"]}
    devices = {d["name"]: d for d in inst["devices"]}
    return [(requests[r.request], devices[r.device]) for r in result[0].devices.results]


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(instances())
def test_allocation_is_valid_and_complete_iff_oracle_finds_one(inst: dict[str, Any]) -> None:
    """No device twice, selectors and taints respected, counters not exceeded, constraints hold, every request
    gets its count; and the allocator finds a solution exactly when brute force over subsets does."""
    result = _allocate(inst)
    assert (result is not None) == oracle_has_solution(inst)
    if result is None:
        return
    assert len(result) == 1
    pairs = _pairs(inst, result)
    assert _valid(inst, pairs)
    for request in inst["requests"]:
        assert sum(1 for r, _ in pairs if r is request) == request["count"]
    for r in result[0].devices.results:
        assert (r.driver, r.pool) == ("driver-a", "pool-1")
        assert not r.admin_access and r.share_id is None


@PROPERTY
@given(instances())
def test_identical_input_gives_identical_allocation(inst: dict[str, Any]) -> None:
    first, second = _allocate(inst), _allocate(inst)
    assert msgspec.json.encode(first) == msgspec.json.encode(second)


@st.composite
def shared_instances(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 4))
    caps = [draw(st.integers(1, 4)) for _ in range(n)]
    claims = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 3)))]
    used = [draw(st.integers(0, c)) for c in caps]
    return {"caps": caps, "claims": claims, "used": used}


@PROPERTY
@given(shared_instances())
def test_shared_devices_never_exceed_capacity(inst: dict[str, Any]) -> None:
    """allowMultipleAllocations devices: the claims of one attempt plus what the cluster holds never exceed a
    device's capacity; every share has a shareID; a solution exists iff a first-fit-free assignment exists."""
    devices = [
        {"name": f"device-{i}", "allowMultipleAllocations": True, "capacity": {"cap": {"value": c}}}
        for i, c in enumerate(inst["caps"])
    ]
    allocated = [
        {
            "results": [
                {
                    "driver": "driver-a",
                    "pool": "pool-1",
                    "device": f"device-{i}",
                    "shareID": f"00000000-0000-0000-0000-{i:012d}",
                    "consumedCapacity": {"cap": u},
                }
            ]
        }
        for i, u in enumerate(inst["used"])
        if u
    ]
    raw = {
        "name": "shared",
        "classes": [{"name": "class-a", "driver": "driver-a"}],
        "slices": [
            {"name": "slice-1", "nodeName": "node-1", "pool": "pool-1", "driver": "driver-a", "devices": devices}
        ],
        "allocated": allocated,
        "claims": [
            {
                "name": f"claim-{i}",
                "requests": [
                    {
                        "name": "req-0",
                        "exactly": {"deviceClassName": "class-a", "count": 1, "capacity": {"requests": {"cap": q}}},
                    }
                ],
            }
            for i, q in enumerate(inst["claims"])
        ],
        "expect": {"unsatisfiable": True},
    }
    allocator_mod = pytest.importorskip("phalanx.dra.allocator")
    features_mod = pytest.importorskip("phalanx.dra.features")
    inventory_mod = pytest.importorskip("phalanx.dra.inventory")
    state_mod = pytest.importorskip("phalanx.dra.state")
    case = build_case("shared", raw)
    features = features_mod.Features()
    table = NodeTable.build(case.nodes, ResourceIndex())
    inventory = inventory_mod.DeviceInventory(case.slices, table, features)
    state = state_mod.AllocatedState(inventory)
    for allocation in case.allocated:
        state.add(allocation)
    result = allocator_mod.Allocator(inventory, state, case.classes, features).allocate(
        table.index["node-1"], case.claims
    )
    free = [c - u for c, u in zip(inst["caps"], inst["used"], strict=True)]
    feasible = any(
        all(sum(q for q, d in zip(inst["claims"], pick, strict=True) if d == i) <= free[i] for i in range(len(free)))
        for pick in itertools.product(range(len(free)), repeat=len(inst["claims"]))
    )
    assert (result is not None) == feasible
    if result is None:
        return
    load = list(inst["used"])
    for allocation in result:
        (r,) = allocation.devices.results
        assert r.share_id
        index = int(r.device.split("-")[1])
        load[index] += int(parse_quantity(r.consumed_capacity["cap"]))
    assert all(load[i] <= inst["caps"][i] for i in range(len(load)))
