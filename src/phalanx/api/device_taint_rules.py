"""DeviceTaintRules (``resource.k8s.io/v1``, GA in v1.37) applied to the ResourceSlices they select.

kube-scheduler never sees a rule: its ResourceSlice tracker (k8s.io/dynamic-resource-allocation/resourceslice/tracker)
hands the allocator slices whose devices carry the taints of every matching rule, appended after the slice's own.
This module is that patching step, so everything below it reads tainted devices from the slices alone.

A rule matches a device when each of ``driver``, ``pool`` and ``device`` its selector sets is equal to the device's;
an empty selector matches every device, and a rule without a selector matches none.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from phalanx.api import dra

__all__ = ["apply_device_taint_rules", "rule_matches"]


def rule_matches(rule: dra.DeviceTaintRule, slice_: dra.ResourceSlice, device: dra.Device) -> bool:
    selector = rule.spec.device_selector
    if selector is None:
        return False  # no selector selects nothing (not everything): a half-written rule taints no device
    return (
        (selector.driver is None or selector.driver == slice_.spec.driver)
        and (selector.pool is None or selector.pool == slice_.spec.pool.name)
        and (selector.device is None or selector.device == device.name)
    )


def apply_device_taint_rules(
    slices: Iterable[dra.ResourceSlice], rules: Iterable[dra.DeviceTaintRule]
) -> list[dra.ResourceSlice]:
    """The slices as the scheduler sees them: each device with the taints of the rules that match it, rules taken
    in name order (the tracker's order is its informer's; a name order keeps phalanx deterministic). Slices no rule
    touches are returned as they are."""
    ordered = sorted(rules, key=lambda r: r.metadata.name)
    return [_patched(s, ordered) for s in slices] if ordered else list(slices)


def _patched(slice_: dra.ResourceSlice, rules: list[dra.DeviceTaintRule]) -> dra.ResourceSlice:
    devices: list[dra.Device] = []
    changed = False
    for device in slice_.spec.devices:
        added = [r.spec.taint for r in rules if rule_matches(r, slice_, device)]
        if added:
            changed = True
            device = msgspec.structs.replace(device, taints=[*device.taints, *added])
        devices.append(device)
    if not changed:
        return slice_
    return msgspec.structs.replace(slice_, spec=msgspec.structs.replace(slice_.spec, devices=devices))
