"""AllocatedState: exclusive devices, shares of multi-allocatable devices, counters charged once per device."""

from __future__ import annotations

from fractions import Fraction

import msgspec
from dra_unit import DRIVER, allocation, counter_slice, device_slice, nodes

from phalanx.api import dra
from phalanx.dra.inventory import DeviceInventory
from phalanx.dra.state import AllocatedState

GI = 2**30


def _state() -> AllocatedState:
    devices = [
        {"name": "part", "consumesCounters": [{"counterSet": "cs", "counters": {"mem": {"value": "10Gi"}}}]},
        {
            "name": "shared",
            "allowMultipleAllocations": True,
            "capacity": {"bw": {"value": "100"}},
            "consumesCounters": [{"counterSet": "cs", "counters": {"mem": {"value": "5Gi"}}}],
        },
    ]
    slices = [device_slice("s1", devices, count=2), counter_slice("s2", {"mem": "40Gi"})]
    return AllocatedState(DeviceInventory(slices, nodes("n1")))


def _share(consumed: str) -> dra.AllocationResult:
    result = {"request": "r", "driver": DRIVER, "pool": "pool", "device": "shared", "shareID": "x"}
    result["consumedCapacity"] = {"bw": consumed}
    return msgspec.convert({"devices": {"results": [result]}}, dra.AllocationResult)


def test_add_and_remove_are_inverse() -> None:
    state = _state()
    state.add(allocation("part"))
    assert state.is_allocated(0)
    assert state.counters_available(0, "cs", "mem") == Fraction(30 * GI)
    state.remove(allocation("part"))
    assert not state.is_allocated(0)
    assert state.counters_available(0, "cs", "mem") == Fraction(40 * GI)


def test_admin_access_results_do_not_count() -> None:
    state = _state()
    state.add(allocation("part", admin=True))
    assert not state.is_allocated(0)


def test_shares_consume_capacity_and_charge_counters_once() -> None:
    state = _state()
    state.add(_share("30"))
    state.add(_share("20"))
    assert not state.is_allocated(1)
    assert dict(state.consumed(1)) == {"bw": 50}
    assert state.counters_available(0, "cs", "mem") == Fraction(35 * GI)
    state.remove(_share("30"))
    assert state.counters_available(0, "cs", "mem") == Fraction(35 * GI)
    state.remove(_share("20"))
    assert state.counters_available(0, "cs", "mem") == Fraction(40 * GI)
    assert dict(state.consumed(1)) == {}


def test_copy_is_independent() -> None:
    state = _state()
    twin = state.copy()
    twin.add(allocation("part"))
    assert twin.is_allocated(0) and not state.is_allocated(0)


def test_unknown_devices_are_ignored() -> None:
    state = _state()
    state.add(allocation("gone"))
    assert not any(state.is_allocated(i) for i in range(2))
