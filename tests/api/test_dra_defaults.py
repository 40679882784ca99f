"""The request defaults kube-apiserver applies before storing a claim (spec dra.md §1.3)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api.dra import DeviceSubRequest, ExactDeviceRequest
from phalanx.api.dra_defaults import defaulted, effective_count


@pytest.mark.parametrize(
    ("mode", "count", "want"),
    [("ExactCount", 0, 1), ("ExactCount", 4, 4), ("", 0, 1), ("", 3, 3), ("All", 0, 0)],
)
def test_effective_count(mode: str, count: int, want: int) -> None:
    assert effective_count(mode, count) == want


def exact(**fields: Any) -> ExactDeviceRequest:
    return msgspec.convert({"deviceClassName": "gpu.nvidia.com", **fields}, ExactDeviceRequest)


def test_written_fields_are_defaulted() -> None:
    req = exact(allocationMode="", tolerations=[{"key": "k", "operator": ""}, {"operator": "Exists"}])
    out = defaulted(req)
    assert (out.allocation_mode, out.count) == ("ExactCount", 1)
    assert [t.operator for t in out.tolerations] == ["Equal", "Exists"]
    assert req.allocation_mode == "" and req.tolerations[0].operator == ""  # the input is left alone


def test_all_keeps_no_count_and_complete_requests_are_returned_as_is() -> None:
    assert defaulted(exact(allocationMode="All")).count == 0
    complete = exact(count=2)
    assert defaulted(complete) is complete


def test_subrequests_are_defaulted_too() -> None:
    sub = msgspec.convert({"name": "h100", "deviceClassName": "gpu.nvidia.com"}, DeviceSubRequest)
    assert defaulted(sub).count == 1
