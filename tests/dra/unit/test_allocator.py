"""Allocator behaviour the golden table does not pin down: CEL caching and error timing, determinism, shareIDs,
purity, the invalid-pool report and firstAvailable order."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest
from dra_unit import DRIVER, allocator, claim, device_class, device_slice, devices_of

from phalanx.api.cel import CelError
from phalanx.dra.allocator import AllocationError, Allocator


class _Counting:
    """An injected CEL compiler: ``attr=value`` compares an int attribute, ``boom`` fails at runtime."""

    def __init__(self) -> None:
        self.compiled: list[str] = []
        self.evaluated = 0

    def __call__(self, expression: str) -> Any:
        self.compiled.append(expression)
        outer = self

        class _Selector:
            def matches(self, device: Any) -> bool:
                outer.evaluated += 1
                if expression == "boom":
                    raise CelError("no such key: boom")
                name, _, value = expression.partition("=")
                return bool(device.attributes[DRIVER][name] == int(value))

        return _Selector()


def _with_compiler(slices: list[Any], compiler: _Counting, *selectors: str) -> Allocator:
    base = allocator(slices)
    classes = {"gpu": device_class("gpu", *selectors)}
    return Allocator(base.inventory, base.state, classes, base.features, compile=compiler)


def test_cel_compiled_once_and_identical_devices_evaluated_once() -> None:
    compiler = _Counting()
    devices = [{"name": f"d{i}", "attributes": {"kind": {"int": 1}}} for i in range(8)]
    alloc = _with_compiler([device_slice("s", devices)], compiler, "kind=1")
    for _ in range(3):
        assert alloc.allocate(0, [claim("c", {"name": "r", "count": 2})]) is not None
    assert compiler.compiled == ["kind=1"]
    assert compiler.evaluated == 1  # eight devices with the same attributes share one verdict, across calls


def test_cel_error_is_fatal_only_when_the_search_reaches_the_device() -> None:
    compiler = _Counting()
    devices = [{"name": "ok", "attributes": {"kind": {"int": 1}}}, {"name": "bad", "attributes": {"kind": {"int": 2}}}]
    alloc = _with_compiler([device_slice("s", devices)], compiler)
    boom = [{"cel": {"expression": "boom"}}]
    fine = [{"cel": {"expression": "kind=1"}}]
    # the first device satisfies the request before the second is looked at
    assert devices_of(alloc.allocate(0, [claim("c", {"name": "r", "selectors": fine})])) == [["r:ok"]]
    message = "claim default/c: selector #0 on device gpu.example.com/pool/ok: CEL runtime error: no such key: boom"
    with pytest.raises(AllocationError, match=re.escape(message)):
        alloc.allocate(0, [claim("c", {"name": "r", "selectors": boom})])


def test_same_input_same_output_including_share_ids() -> None:
    devices = [{"name": "d", "allowMultipleAllocations": True, "capacity": {"bw": {"value": "10"}}}]
    claims = [claim("a", {"name": "r", "capacity": {"requests": {"bw": "4"}}}), claim("b", {"name": "r", "capacity": {"requests": {"bw": "4"}}})]  # fmt: skip
    first = allocator([device_slice("s", devices)]).allocate(0, claims)
    second = allocator([device_slice("s", devices)]).allocate(0, claims)
    assert first is not None and msgspec.to_builtins(first) == msgspec.to_builtins(second)
    ids = [a.devices.results[0].share_id for a in first]
    assert ids[0] != ids[1] and all(i and len(i) == 36 and i == i.lower() for i in ids)
    assert first[0].devices.results[0].consumed_capacity == {"bw": "4"}


def test_allocate_is_pure_and_results_apply_to_the_state() -> None:
    alloc = allocator([device_slice("s", ["d1", "d2"])])
    claims = [claim("c", {"name": "r"})]
    first = alloc.allocate(0, claims)
    assert devices_of(alloc.allocate(0, claims)) == devices_of(first) == [["r:d1"]]
    assert first is not None
    alloc.state.add(first[0])
    assert devices_of(alloc.allocate(0, claims)) == [["r:d2"]]


def test_invalid_pools_are_reported_when_nothing_fits() -> None:
    slices = [device_slice("a", ["d"], pool="broken", count=2), device_slice("b", ["d"], pool="broken", count=2)]
    alloc = allocator(slices)
    assert alloc.allocate(0, [claim("c", {"name": "r"})]) is None
    assert alloc.invalid_pools == ["gpu.example.com/broken"]


def test_first_available_takes_the_first_subrequest_that_fits() -> None:
    alloc = allocator([device_slice("s", ["d1", "d2"])])
    subs = [
        {"name": "four", "deviceClassName": "gpu", "count": 4},
        {"name": "two", "deviceClassName": "gpu", "count": 2},
    ]
    got = alloc.allocate(0, [claim("c", {"name": "r", "firstAvailable": subs})])
    assert devices_of(got) == [["r/two:d1", "r/two:d2"]]


def test_missing_class_is_fatal() -> None:
    alloc = allocator([device_slice("s", ["d1"])])
    bad = claim("c", {"name": "r", "deviceClassName": "nope"})
    message = 'could not retrieve device class nope: deviceclass.resource.k8s.io "nope" not found'
    with pytest.raises(AllocationError, match=re.escape(message)):
        alloc.allocate(0, [bad])


def test_more_than_32_devices_is_fatal() -> None:
    alloc = allocator([device_slice("s", [f"d{i}" for i in range(40)])])
    with pytest.raises(AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"):
        alloc.allocate(0, [claim("c", {"name": "r", "count": 33})])
