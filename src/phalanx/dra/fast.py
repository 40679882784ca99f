"""The allocator's fast path for simple claims: the search's answer from a scan of the node's devices.

A call is simple when it allocates one claim with one request for ``count`` devices (ExactCount, no
``firstAvailable``), no constraints and no adminAccess, and when no device the request could take draws from
shared counters. Then every device is usable or not on its own (its selectors, taints and the capacity the
request asks are fixed; its allocation and consumed capacity come from the cluster), and a request never takes
one device twice, so the search's first solution is the first ``count`` usable devices in the node's device order,
and there is none when fewer are usable. A device whose selector failed to evaluate ends the scan with that error
when the scan reaches it while it is free, as the search would (:mod:`phalanx.dra.search`).

What does not depend on the cluster's use (which devices of the node the request could ever take, and what one
allocation of each consumes) is kept per (request spec, node row); a scan then reads only the allocated state.
Anything outside this shape goes to the general search; ``tests/dra/test_fast.py`` checks both agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from phalanx.api import dra
from phalanx.api.dra_defaults import EXACT_COUNT, defaulted
from phalanx.dra.capacity import Amount, amount, consumed_capacity, requested_fits
from phalanx.dra.errors import MAX_RESULTS, AllocationError
from phalanx.dra.features import Features
from phalanx.dra.inventory import DeviceInfo, DeviceInventory
from phalanx.dra.outcomes import Outcome
from phalanx.dra.search import Choice, tolerated
from phalanx.dra.selection import SelectorError
from phalanx.dra.state import AllocatedState

__all__ = ["FastRows", "Prepared", "Simple", "fast_solve", "simple_claim"]

_SPEC = msgspec.json.Encoder(order="sorted")
_MAX_ROWS = 1 << 17  # (request spec, row) entries kept, oldest dropped first


@dataclass(frozen=True, slots=True)
class Simple:
    """A simple claim's one request, validated and defaulted."""

    key: bytes  # the claim's and class's specs: equal keys select the same devices
    count: int
    capacity: dict[str, Amount]
    device_class: dra.DeviceClass
    class_exprs: list[str]
    request_exprs: list[str]
    tolerations: tuple[dra.DeviceToleration, ...]
    who: str


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the allocator worked out once for a list of claims (``Allocator.prepare``)."""

    simple: Simple | None  # None: the general search


@dataclass(frozen=True, slots=True)
class _Device:
    """A device of the node the request could take: its position, index, whether it is shared, what one
    allocation consumes ((name, use, total) per capacity, for the scan; the amounts, for the result) and the
    selector error the scan stops at."""

    pos: int
    index: int
    multi: bool
    limits: tuple[tuple[str, int, int], ...]
    consumed: dict[str, Amount] | None
    error: str | None


class FastRows:
    """Per (request spec, node row): the devices a simple request could take, or None when the node has a
    device the request could take that draws from shared counters (the general search then)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[bytes, int], tuple[_Device, ...] | None] = {}

    def get(self, key: tuple[bytes, int]) -> tuple[bool, tuple[_Device, ...] | None]:
        entry = self._entries.get(key, False)
        if entry is False:
            return False, None
        return True, entry  # type: ignore[return-value]

    def put(self, key: tuple[bytes, int], devices: tuple[_Device, ...] | None) -> None:
        if len(self._entries) >= _MAX_ROWS:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = devices


def simple_claim(
    claims: Sequence[dra.ResourceClaim], classes: Mapping[str, dra.DeviceClass], features: Features
) -> Simple | None:
    """The request when ``claims`` is one simple claim that passes every check of the allocator's pre-pass
    (anything it would reject goes to the general path, which says why), else None."""
    if len(claims) != 1:
        return None
    claim = claims[0]
    devices = claim.spec.devices
    if devices.constraints or len(devices.requests) != 1:
        return None
    request = devices.requests[0]
    raw = request.exactly
    if request.first_available or raw is None or raw.admin_access is not None:
        return None
    if raw.capacity is not None and not features.consumable_capacity:
        return None
    exact = defaulted(raw)
    if exact.allocation_mode != EXACT_COUNT or not 1 <= exact.count <= MAX_RESULTS:
        return None
    device_class = classes.get(exact.device_class_name) if exact.device_class_name else None
    if device_class is None:
        return None
    if any(s.cel is None for s in exact.selectors) or any(s.cel is None for s in device_class.spec.selectors):
        return None
    capacity = {k: amount(q) for k, q in (exact.capacity.requests if exact.capacity else {}).items()}
    return Simple(
        key=_SPEC.encode(claim.spec) + b"\0" + _SPEC.encode(device_class.spec),
        count=exact.count,
        capacity=capacity,
        device_class=device_class,
        class_exprs=[s.cel.expression for s in device_class.spec.selectors if s.cel is not None],
        request_exprs=[s.cel.expression for s in exact.selectors if s.cel is not None],
        tolerations=tuple(exact.tolerations),
        who=f"{claim.metadata.namespace}/{claim.metadata.name}",
    )


Selectable = Callable[[str, list[str], str, list[str], DeviceInfo], "bool | SelectorError"]


def node_devices(
    simple: Simple, inventory: DeviceInventory, row: int, features: Features, selectable: Selectable
) -> tuple[_Device, ...] | None:
    """The devices of node ``row`` the request could ever take, in search order (see FastRows)."""
    out: list[_Device] = []
    class_name = simple.device_class.metadata.name
    for pos, d in enumerate(inventory.visible(row)):
        info = inventory.devices[d]
        verdict = selectable(class_name, simple.class_exprs, simple.who, simple.request_exprs, info)
        if isinstance(verdict, SelectorError):
            out.append(_Device(pos, d, False, (), None, verdict.message))
            continue
        if not verdict:
            continue
        if info.consumes:
            if not features.partitionable:
                continue
            return None  # counters make devices depend on each other: the general search
        if features.device_taints and not tolerated(info, simple.tolerations):
            continue
        if not info.allow_multiple:
            if features.consumable_capacity and not requested_fits(simple.capacity, info.device):
                continue
            out.append(_Device(pos, d, False, (), None, None))
            continue
        consumed = consumed_capacity(simple.capacity, info.device)
        if consumed is None:
            continue
        limits = tuple((n, a.value, amount(info.device.capacity[n].value).value) for n, a in consumed.items())
        out.append(_Device(pos, d, True, limits, consumed, None))
    return tuple(out)


def fast_solve(simple: Simple, devices: tuple[_Device, ...], state: AllocatedState) -> Outcome | None:
    """The first ``count`` usable devices, or None (see the module docstring)."""
    picks: list[Choice] = []
    for device in devices:
        if state.is_allocated(device.index):
            continue
        if device.error is not None:
            raise AllocationError(device.error)
        if device.multi:
            used = state.consumed(device.index)
            if any(used.get(name, 0) + use > total for name, use, total in device.limits):
                continue
        picks.append(Choice(0, 0, device.pos, device.consumed))
        if len(picks) == simple.count:
            return Outcome(choices=(tuple(picks),), subrequests=((0,),))
    return None
