"""DeviceTaintRules applied to ResourceSlices as kube-scheduler's ResourceSlice tracker applies them: every set
criterion of the selector must match, an empty selector matches every device, no selector matches none."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api import dra
from phalanx.api.device_taint_rules import apply_device_taint_rules


def make_slice(pool: str, *devices: str, driver: str = "gpu.example.com", taints: int = 0) -> dra.ResourceSlice:
    own = [{"key": "example.com/own", "effect": "NoSchedule"}] * taints
    doc = {
        "metadata": {"name": f"{pool}-slice"},
        "spec": {
            "driver": driver,
            "nodeName": pool,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": d, "taints": own} for d in devices],
        },
    }
    return msgspec.convert(doc, dra.ResourceSlice)


def rule(name: str, selector: dict[str, Any] | None, key: str = "example.com/t") -> dra.DeviceTaintRule:
    spec: dict[str, Any] = {"taint": {"key": key, "effect": "NoSchedule"}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, dra.DeviceTaintRule)


def tainted(slices: list[dra.ResourceSlice]) -> list[str]:
    return [f"{s.spec.pool.name}/{d.name}" for s in slices for d in s.spec.devices if d.taints]


SLICES = [make_slice("a", "gpu-0", "gpu-1"), make_slice("b", "gpu-0", "gpu-1"), make_slice("c", "nic-0", driver="nic")]


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param(None, [], id="no-selector-matches-nothing"),
        pytest.param({}, ["a/gpu-0", "a/gpu-1", "b/gpu-0", "b/gpu-1", "c/nic-0"], id="empty-selector-matches-all"),
        pytest.param({"driver": "gpu.example.com"}, ["a/gpu-0", "a/gpu-1", "b/gpu-0", "b/gpu-1"], id="driver"),
        pytest.param({"pool": "b"}, ["b/gpu-0", "b/gpu-1"], id="pool"),
        pytest.param({"device": "gpu-1"}, ["a/gpu-1", "b/gpu-1"], id="device-in-every-pool"),
        pytest.param({"driver": "gpu.example.com", "pool": "a", "device": "gpu-1"}, ["a/gpu-1"], id="all-three"),
        pytest.param({"driver": "nic", "pool": "a"}, [], id="criteria-are-and-ed"),
    ],
)
def test_which_devices_a_rule_taints(selector: dict[str, Any] | None, want: list[str]) -> None:
    assert tainted(apply_device_taint_rules(SLICES, [rule("r", selector)])) == want


def test_rule_taints_follow_the_devices_own_in_name_order() -> None:
    (out,) = apply_device_taint_rules(
        [make_slice("a", "gpu-0", taints=1)], [rule("z", {}, "example.com/z"), rule("m", {}, "example.com/m")]
    )
    assert [t.key for t in out.spec.devices[0].taints] == ["example.com/own", "example.com/m", "example.com/z"]


def test_slices_are_not_changed_in_place() -> None:
    original = make_slice("a", "gpu-0")
    out = apply_device_taint_rules([original, SLICES[2]], [rule("r", {"pool": "a"})])
    assert original.spec.devices[0].taints == [] and out[0].spec.devices[0].taints != []
    assert out[1] is SLICES[2]  # a slice no rule selects is passed through
