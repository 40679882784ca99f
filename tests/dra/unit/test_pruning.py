"""Pruning never changes the answer: on random small instances the pruned search returns exactly what upstream's
plain first-fit search returns (same devices in the same order, or no solution, or the same error)."""

from __future__ import annotations

from typing import Any

import msgspec
from dra_unit import DRIVER, allocation, allocator, claim, counter_slice, device_class, device_slice
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api import dra
from phalanx.dra.errors import AllocationError
from phalanx.dra.features import Features

SELECTOR = f'device.attributes["{DRIVER}"].kind == 1'


@st.composite
def instances(draw: st.DrawFn) -> dict[str, Any]:
    devices = []
    lists = draw(st.booleans())  # DRAListTypeAttributes: numa becomes a set of values
    for i in range(draw(st.integers(1, 8))):
        numa = {"ints": draw(st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True))}
        dev: dict[str, Any] = {
            "name": f"d{i}",
            "attributes": {
                "kind": {"int": draw(st.integers(0, 1))},
                "numa": numa if lists else {"int": numa["ints"][0]},
            },
        }
        cost = draw(st.integers(0, 3))
        if cost:
            dev["consumesCounters"] = [{"counterSet": "cs", "counters": {"mem": {"value": str(cost)}}}]
        if draw(st.integers(0, 5)) == 0:
            dev["taints"] = [{"key": "bad", "effect": "NoSchedule"}]
        if draw(st.integers(0, 3)) == 0:
            dev["allowMultipleAllocations"] = True
            dev["capacity"] = {"mem": {"value": "4"}}
        devices.append(dev)
    claims = []
    for c in range(draw(st.integers(1, 2))):
        requests: list[dict[str, Any]] = []
        for r in range(draw(st.integers(1, 2))):
            request: dict[str, Any] = {"name": f"r{r}", "count": draw(st.integers(1, 3))}
            if draw(st.booleans()):
                request["selectors"] = [{"cel": {"expression": SELECTOR}}]
            if draw(st.integers(0, 3)) == 0:
                request["capacity"] = {"requests": {"mem": str(draw(st.integers(1, 3)))}}
            if draw(st.integers(0, 6)) == 0:
                request = {"name": f"r{r}", "allocationMode": "All", "selectors": request.get("selectors", [])}
            if draw(st.integers(0, 3)) == 0:
                request = {"name": f"r{r}", "firstAvailable": [{"name": "big", "deviceClassName": "gpu", "count": 3},
                                                               {"name": "small", "deviceClassName": "gpu", "count": 1}]}  # fmt: skip
            requests.append(request)
        constraints = []
        kind = draw(st.sampled_from([None, "matchAttribute", "distinctAttribute"]))
        if kind:
            scope = draw(st.sampled_from([[], ["r0"]]))
            constraints.append({kind: f"{DRIVER}/numa", "requests": scope})
        claims.append((f"c{c}", requests, constraints))
    return {
        "lists": lists,
        "devices": devices,
        "counter": draw(st.integers(1, 12)),
        "taken": draw(st.lists(st.integers(0, 7), max_size=2, unique=True)),
        "claims": claims,
    }


def _outcome(inst: dict[str, Any], prune: bool) -> tuple[str, Any, int]:
    slices = [device_slice("s1", inst["devices"], count=2), counter_slice("s2", {"mem": str(inst["counter"])})]
    names = {d["name"] for d in inst["devices"]}
    taken = [allocation(f"d{i}") for i in inst["taken"] if f"d{i}" in names]
    features = Features(list_type_attributes=inst["lists"])
    alloc = allocator(slices, [device_class()], allocated=taken, prune=prune, features=features)
    claims = [claim(name, *reqs, constraints=cons) for name, reqs, cons in inst["claims"]]
    try:
        result = alloc.allocate(0, claims)
    except AllocationError as err:
        return "error", str(err), alloc.stats.steps
    return "ok", msgspec.to_builtins(result), alloc.stats.steps


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_pruned_search_returns_upstreams_first_solution(inst: dict[str, Any]) -> None:
    kind, pruned, pruned_steps = _outcome(inst, prune=True)
    plain_kind, plain, plain_steps = _outcome(inst, prune=False)
    assert (kind, pruned) == (plain_kind, plain)
    assert pruned_steps <= plain_steps


def test_backtracking_shape_needs_few_steps() -> None:
    """scheduler_perf PartitionableBacktracking: 8 devices, count 7, 70Gi of memory counter, device-1 costs 20Gi.
    Plain first-fit tries every combination with device-1; the classes leave one choice per level."""
    devices = [
        {"name": f"device-{i}", "consumesCounters": [{"counterSet": "cs", "counters": {"mem": {"value": cost}}}]}
        for i, cost in enumerate(["20Gi"] + ["10Gi"] * 7, start=1)
    ]
    slices = [device_slice("s1", devices, count=2), counter_slice("s2", {"mem": "70Gi"})]
    claims = [claim("c", {"name": "r", "count": 7})]
    pruned, plain = allocator(slices), allocator(slices, prune=False)
    got = pruned.allocate(0, claims)
    assert got is not None and [r.device for r in got[0].devices.results] == [f"device-{i}" for i in range(2, 9)]
    assert msgspec.to_builtins(got) == msgspec.to_builtins(plain.allocate(0, claims))
    assert pruned.stats.steps <= 20 < plain.stats.steps


def test_infeasible_count_fails_without_search() -> None:
    """64 devices, one already allocated, two claims of 32: no combination is tried."""
    slices = [device_slice("s1", [f"d{i}" for i in range(64)])]
    alloc = allocator(slices, allocated=[allocation("d5")])
    assert alloc.allocate(0, [claim("a", {"name": "r", "count": 32}), claim("b", {"name": "r", "count": 32})]) is None
    assert alloc.stats.steps < 100


def test_match_attribute_without_large_enough_group_fails_fast() -> None:
    devices = [{"name": f"d{i}", "attributes": {"nvlink": {"int": i % 8}}} for i in range(64)]
    alloc = allocator([device_slice("s1", devices)])
    constraint = [{"matchAttribute": f"{DRIVER}/nvlink"}]
    assert alloc.allocate(0, [claim("c", {"name": "r", "count": 9}, constraints=constraint)]) is None
    assert alloc.stats.steps == 1


def test_symmetric_devices_still_give_the_earliest() -> None:
    """Interchangeable devices: the result names the first ones in slice order, as upstream's first fit does."""
    alloc = allocator([device_slice("b", ["d3", "d4"], count=2), device_slice("a", ["d1", "d2"], count=2)])
    got = alloc.allocate(0, [claim("c", {"name": "r", "count": 3})])
    assert got is not None and [r.device for r in got[0].devices.results] == ["d1", "d2", "d3"]


def test_result_shape() -> None:
    got = allocator([device_slice("s1", ["d1"])]).allocate(0, [claim("c", {"name": "r"})])
    assert got is not None
    assert isinstance(got[0], dra.AllocationResult)
    assert got[0].node_selector is not None
    assert got[0].node_selector.node_selector_terms[0].match_fields[0].values == ["n1"]


def test_memo_skips_a_failing_request_already_searched() -> None:
    """req-b can never be satisfied (no two devices agree on both attributes, which candidate counting cannot
    see); without the memo every one of req-a's 20 choices would search req-b's 16 x 15 pairs again."""
    a_devices = [{"name": f"a{i}", "attributes": {"idx": {"int": i}, "side": {"int": 0}}} for i in range(6)]
    b_devices = [
        {"name": f"b{x}{y}", "attributes": {"x": {"int": x}, "y": {"int": y}, "side": {"int": 1}}}
        for x in range(4)
        for y in range(4)
    ]
    side = f'device.attributes["{DRIVER}"].side == '
    constraints = [
        {"distinctAttribute": f"{DRIVER}/idx", "requests": ["req-a"]},
        {"matchAttribute": f"{DRIVER}/x", "requests": ["req-b"]},
        {"matchAttribute": f"{DRIVER}/y", "requests": ["req-b"]},
    ]
    claims = [
        claim(
            "c",
            {"name": "req-a", "count": 3, "selectors": [{"cel": {"expression": side + "0"}}]},
            {"name": "req-b", "count": 2, "selectors": [{"cel": {"expression": side + "1"}}]},
            constraints=constraints,
        )
    ]
    slices = [device_slice("s", a_devices + b_devices)]
    pruned, plain = allocator(slices), allocator(slices, prune=False)
    assert pruned.allocate(0, claims) is None
    assert plain.allocate(0, claims) is None
    assert pruned.stats.memo_hits > 0
    assert pruned.stats.steps <= plain.stats.steps
