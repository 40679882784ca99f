"""Consumable capacity: requestPolicy rounding and violations (spec dra.md §3.7), canonical printing."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api import dra
from phalanx.dra.capacity import Amount, amount, consumed_capacity, format_amount


def _device(policy: dict[str, Any] | None, value: str = "100") -> dra.Device:
    cap: dict[str, Any] = {"value": value}
    if policy is not None:
        cap["requestPolicy"] = policy
    return msgspec.convert({"name": "d", "allowMultipleAllocations": True, "capacity": {"bw": cap}}, dra.Device)


@pytest.mark.parametrize(
    ("policy", "request_", "consumed"),
    [
        pytest.param(None, "30", 30, id="no-policy-takes-request"),
        pytest.param(None, None, 100, id="no-request-takes-everything"),
        pytest.param({"default": "10"}, None, 10, id="default-when-not-requested"),
        pytest.param({"default": "10", "validRange": {"min": "10", "step": "10"}}, "25", 30, id="range-rounds-up"),
        pytest.param({"default": "10", "validRange": {"min": "10"}}, "5", 10, id="range-raises-to-min"),
        pytest.param({"default": "10", "validRange": {"min": "10", "max": "50"}}, "60", None, id="range-above-max"),
        pytest.param({"default": "8", "validValues": ["8", "16", "32"]}, "9", 16, id="values-next-up"),
        pytest.param({"default": "8", "validValues": ["8", "16", "32"]}, "33", None, id="values-none-large-enough"),
    ],
)
def test_request_policy(policy: dict[str, Any] | None, request_: str | None, consumed: int | None) -> None:
    requests = {} if request_ is None else {"bw": amount(request_)}
    got = consumed_capacity(requests, _device(policy))
    assert (None if got is None else got["bw"].value) == consumed


def test_request_for_a_capacity_the_device_lacks() -> None:
    assert consumed_capacity({"memory": amount("1")}, _device(None)) is None


@pytest.mark.parametrize(
    ("value", "binary", "text"),
    [(10 * 2**30, True, "10Gi"), (1500, False, "1500"), (2000, False, "2k"), (0, True, "0"), (1536, True, "1536")],
)
def test_format_amount(value: int, binary: bool, text: str) -> None:
    assert format_amount(Amount(value, binary)) == text
