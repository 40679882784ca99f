"""Outcomes shared between alike nodes: a node answered from another node's search gets exactly what its own
search would give (its own devices, nodeSelector and shareIDs)."""

from __future__ import annotations

from typing import Any

import msgspec
from dra_unit import DRIVER, allocation, allocator, claim, counter_slice, device_class, device_slice, nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api import dra
from phalanx.dra.allocator import AllocationError, Allocator

NODES = ("n1", "n2", "n3", "n4")


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    """Four nodes built from two device templates, so some nodes are alike and some are not."""
    templates = []
    for _ in range(2):
        devices = []
        for i in range(draw(st.integers(1, 4))):
            dev: dict[str, Any] = {"name": f"d{i}", "attributes": {"numa": {"int": draw(st.integers(0, 1))}}}
            if draw(st.booleans()):
                dev["consumesCounters"] = [{"counterSet": "cs", "counters": {"mem": {"value": "1"}}}]
            if draw(st.integers(0, 3)) == 0:
                dev["allowMultipleAllocations"] = True
                dev["capacity"] = {"bw": {"value": "4"}}
            devices.append(dev)
        templates.append(devices)
    layout = [draw(st.integers(0, 1)) for _ in NODES]
    taken = [(n, d) for n in range(len(NODES)) for d in range(4) if draw(st.integers(0, 5)) == 0]
    requests = [{"name": f"r{r}", "count": draw(st.integers(1, 2))} for r in range(draw(st.integers(1, 2)))]
    if draw(st.booleans()):
        requests[0]["capacity"] = {"requests": {"bw": "2"}}
    match = draw(st.booleans())
    return {"templates": templates, "layout": layout, "taken": taken, "requests": requests, "match": match}


def _allocator(cluster: dict[str, Any]) -> Allocator:
    slices = []
    for n, node in enumerate(NODES):
        devices = cluster["templates"][cluster["layout"][n]]
        slices.append(device_slice(f"{node}-s1", devices, pool=node, count=2, nodeName=node))
        counters = counter_slice(f"{node}-s2", {"mem": "2"}, pool=node)
        counters.spec.node_name = node
        slices.append(counters)
    names = {n: {d["name"] for d in cluster["templates"][cluster["layout"][n]]} for n in range(len(NODES))}
    taken = [
        _on_pool(allocation(f"d{d}"), NODES[n]) for n, d in cluster["taken"] if f"d{d}" in names[n]
    ]  # fmt: skip
    return allocator(slices, [device_class()], table=nodes(*NODES), allocated=taken)


def _on_pool(result: dra.AllocationResult, pool: str) -> dra.AllocationResult:
    for r in result.devices.results:
        r.pool = pool
    return result


def _run(alloc: Allocator, row: int, claims: list[dra.ResourceClaim]) -> Any:
    try:
        return msgspec.to_builtins(alloc.allocate(row, claims))
    except AllocationError as err:
        return str(err)


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_shared_outcomes_equal_own_search(cluster: dict[str, Any]) -> None:
    constraints = [{"matchAttribute": f"{DRIVER}/numa"}] if cluster["match"] else []
    claims = [claim("c", *cluster["requests"], constraints=constraints)]
    shared = _allocator(cluster)
    for row in range(len(NODES)):
        assert _run(shared, row, claims) == _run(_allocator(cluster), row, claims)


def test_identical_nodes_share_one_search() -> None:
    table = nodes(*NODES)
    slices = [device_slice(f"{n}-gpus", ["g0", "g1"], pool=n, nodeName=n) for n in NODES]
    alloc = allocator(slices, table=table, fast=False)  # a simple claim: the fast path would skip the search
    claims = [claim("c", {"name": "r", "count": 2})]
    results = [alloc.allocate(row, claims) for row in range(len(NODES))]
    assert alloc.stats.shape_hits == len(NODES) - 1
    assert [r[0].devices.results[0].pool for r in results if r] == list(NODES)
    selectors = [r[0].node_selector for r in results if r]
    assert [s.node_selector_terms[0].match_fields[0].values for s in selectors if s] == [[n] for n in NODES]
