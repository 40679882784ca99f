"""Golden cases for the structured DRA allocator, transcribed from upstream's shared allocator table.

Each case in ``cases/*.yaml`` is run through ``Allocator.allocate`` for its node; results are compared whole
(request, device, adminAccess, tolerations, binding conditions, consumed capacity, config, nodeSelector), shareIDs
only for presence and UUID form. The format is described in ``cases/README.md``.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from dra_casefile import (
    UUID,
    Case,
    actual_allocation,
    load_cases,
    normalize_allocation,
)

from phalanx.api import dra
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.resources import ResourceIndex

CASES = load_cases()


def test_case_files_are_well_formed() -> None:
    """Every case has a unique name, an outcome, and objects that decode into the v1 models."""
    seen: set[str] = set()
    for case in CASES:
        assert case.id not in seen, case.id
        seen.add(case.id)
        outcome = set(case.expect) & {"allocations", "unsatisfiable", "error", "nodeFailure"}
        assert len(outcome) == 1, f"{case.id}: expect exactly one of allocations/unsatisfiable/error/nodeFailure"
        if "allocations" in case.expect:
            assert len(case.expect["allocations"]) == len(case.claims), case.id
        assert case.node in {n.metadata.name for n in case.nodes}, case.id
        for claim in case.claims:
            for request in claim.spec.devices.requests:
                assert (request.exactly is None) != (not request.first_available), f"{case.id}: {request.name}"
    assert len(CASES) >= 60


def _expected(case: Case, allocation: dict[str, Any]) -> dict[str, Any]:
    devices = {"results": allocation.get("results", []), "config": allocation.get("config", [])}
    selector = allocation.get("nodeSelector", case.node)
    return normalize_allocation({"devices": devices, "nodeSelector": selector}, [])


def _run(case: Case) -> tuple[list[dra.AllocationResult] | None, list[bool]]:
    allocator_mod = pytest.importorskip("phalanx.dra.allocator")
    features_mod = pytest.importorskip("phalanx.dra.features")
    inventory_mod = pytest.importorskip("phalanx.dra.inventory")
    state_mod = pytest.importorskip("phalanx.dra.state")
    features = features_mod.Features(**case.features)
    table = NodeTable.build(case.nodes, ResourceIndex())
    inventory = inventory_mod.DeviceInventory(case.slices, table, features)
    state = state_mod.AllocatedState(inventory)
    for allocation in case.allocated:
        state.add(allocation)
    before = [state.is_allocated(i) for i in range(len(inventory.devices))]
    allocator = allocator_mod.Allocator(inventory, state, case.classes, features)
    try:
        result = allocator.allocate(table.index[case.node], case.claims)
    finally:
        # allocate() is pure: whatever happens, the cluster state is what it was.
        after = [state.is_allocated(i) for i in range(len(inventory.devices))]
        assert after == before, "allocate() changed the AllocatedState"
    return result, before


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden(case: Case) -> None:
    expect = case.expect
    allocator_mod = pytest.importorskip("phalanx.dra.allocator")
    if "error" in expect:
        with pytest.raises(allocator_mod.AllocationError) as info:
            _run(case)
        for fragment in expect["error"]:
            assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"
        return
    if "nodeFailure" in expect:
        # Upstream's ErrFailedAllocationOnNode: the scheduler treats it as "no solution on this node". phalanx may
        # return None or raise AllocationError naming the cause; it must never return devices.
        try:
            result, _ = _run(case)
        except allocator_mod.AllocationError as err:
            assert expect["nodeFailure"] in str(err)
            return
        assert result is None
        return
    result, _ = _run(case)
    if expect.get("unsatisfiable"):
        assert result is None, f"expected no solution, got {[msgspec.to_builtins(r) for r in result or []]}"
        return
    assert result is not None, "expected a solution, allocator found none"
    share_ids: list[str] = []
    actual = [normalize_allocation(actual_allocation(r), share_ids) for r in result]
    expected = [_expected(case, a) for a in expect["allocations"]]
    assert actual == expected
    assert all(UUID.match(s) for s in share_ids), share_ids
