"""The allocator's fast path for simple claims: the search's answer from a scan of the node's devices.

A call is simple when it allocates one claim with one request for ``count`` devices (ExactCount, no
``firstAvailable``), no constraints and no adminAccess, and when no device the request could take draws from
shared counters. Then every device is usable or not on its own (its selectors, taints and the capacity the
request asks are fixed; its allocation and consumed capacity come from the cluster), and a request never takes
one device twice, so the search's first solution is the first ``count`` usable devices in the node's device order,
and there is none when fewer are usable. A device whose selector failed to evaluate ends the scan with that error
when the scan reaches it while it is free, as the search would (:mod:`phalanx.dra.search`).

What does not depend on the cluster's use (which devices of the node the request could ever take, and what one
allocation of each consumes) is kept per (selectors and capacity request, node row); a scan then reads only the
allocated state. Anything outside this shape goes to the general search; ``tests/dra/unit/test_fast.py`` checks
that both agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from phalanx.api import dra
from phalanx.api.dra_defaults import EXACT_COUNT, defaulted
from phalanx.dra.capacity import Amount, amount, consumed_capacity, requested_fits
from phalanx.dra.errors import MAX_RESULTS
from phalanx.dra.features import Features
from phalanx.dra.inventory import DeviceInfo, DeviceInventory
from phalanx.dra.outcomes import Outcome
from phalanx.dra.search import Choice, tolerated
from phalanx.dra.selection import SelectorError
from phalanx.dra.state import AllocatedState

__all__ = ["FastRows", "Prepared", "SelectorFailed", "Simple", "fast_solve", "node_devices", "simple_claim"]

_SPEC = msgspec.json.Encoder(order="sorted")
_MAX_ROWS = 1 << 17  # entries a FastRows table keeps before it starts again


@dataclass(frozen=True, slots=True)
class Simple:
    """A simple claim's one request, validated and defaulted (shared by claims of one spec)."""

    key: tuple[bytes, tuple[tuple[str, int, bool], ...]]  # equal keys: the same devices can serve the request
    select: bytes  # what picks the candidates apart from capacity: class, selectors, tolerations
    capacity_key: tuple[tuple[str, int, bool], ...]
    count: int
    capacity: dict[str, Amount]
    device_class: dra.DeviceClass
    class_exprs: list[str]
    request_exprs: list[str]
    tolerations: tuple[dra.DeviceToleration, ...]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the allocator worked out once for a list of claims (``Allocator.prepare``)."""

    simple: Simple | None  # None: the general search
    who: str = ""  # the claim, for selector errors


# One device the request could take: (position on the node, device index, capacity limits, what one allocation
# consumes, whether its selector failed). Limits are (name, use, total) per capacity of a shared device, ()
# otherwise; consumed is None for a device that is not shared. The scan stops at a free device whose selector
# failed.
_Device = tuple[int, int, tuple[tuple[str, int, int], ...], "dict[str, Amount] | None", bool]
_Selected = tuple[tuple[int, int, DeviceInfo, bool], ...]
_Fit = tuple[tuple[tuple[str, int, int], ...], "dict[str, Amount] | None"] | None


class FastRows:
    """What the fast path keeps across calls, none of it depending on the cluster's use: per claim spec the
    request; per (selectors, node row) the devices that pass them (None when one draws from shared counters:
    the general search then); per (capacity request, device kind) what one allocation consumes; and per
    (selectors, capacity request, node row) the devices the request could take, whatever its count."""

    def __init__(self) -> None:
        self.simple: dict[bytes, Simple | None] = {}
        self.selected: dict[tuple[bytes, int], _Selected | None] = {}
        self.fits: dict[tuple[tuple[tuple[str, int, bool], ...], int], _Fit] = {}
        self.devices: dict[tuple[tuple[bytes, tuple[tuple[str, int, bool], ...]], int], tuple[_Device, ...] | None] = {}

    def bound(self) -> None:
        """Forget everything beyond a bound (a long run with ever new claim specs)."""
        for table in (self.simple, self.selected, self.fits, self.devices):
            if len(table) > _MAX_ROWS:
                table.clear()


def simple_claim(
    claims: Sequence[dra.ResourceClaim],
    classes: Mapping[str, dra.DeviceClass],
    features: Features,
    known: dict[bytes, Simple | None],
) -> Simple | None:
    """The request when ``claims`` is one simple claim that passes every check of the allocator's pre-pass
    (anything it would reject goes to the general path, which says why), else None. ``known`` caches by spec."""
    if len(claims) != 1:
        return None
    spec = _SPEC.encode(claims[0].spec)
    if spec in known:
        simple = known[spec]
        if simple is None or classes.get(simple.device_class.metadata.name) is simple.device_class:
            return simple
    simple = known[spec] = _simple(claims[0].spec, classes, features)
    return simple


def _simple(spec: dra.ResourceClaimSpec, classes: Mapping[str, dra.DeviceClass], features: Features) -> Simple | None:
    devices = spec.devices
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
    class_exprs = [s.cel.expression for s in device_class.spec.selectors if s.cel is not None]
    request_exprs = [s.cel.expression for s in exact.selectors if s.cel is not None]
    tolerations = tuple(exact.tolerations)
    select = _SPEC.encode([device_class.metadata.name, device_class.spec, request_exprs, tolerations])
    capacity_key = tuple(sorted((k, a.value, a.binary) for k, a in capacity.items()))
    return Simple(
        key=(select, capacity_key),
        select=select,
        capacity_key=capacity_key,
        count=exact.count,
        capacity=capacity,
        device_class=device_class,
        class_exprs=class_exprs,
        request_exprs=request_exprs,
        tolerations=tolerations,
    )


Selectable = Callable[[str, list[str], str, list[str], DeviceInfo], "bool | SelectorError"]


def node_devices(
    simple: Simple,
    inventory: DeviceInventory,
    row: int,
    features: Features,
    selectable: Selectable,
    rows: FastRows,
) -> tuple[_Device, ...] | None:
    """The devices of node ``row`` the request could ever take, in search order (see FastRows)."""
    key = (simple.select, row)
    selected = rows.selected.get(key, False)
    if selected is False:
        selected = rows.selected[key] = _selected(simple, inventory, row, features, selectable)
    if selected is None:
        return None
    out: list[_Device] = []
    for pos, d, info, error in selected:  # type: ignore[union-attr]
        if error:
            out.append((pos, d, (), None, True))
            continue
        fit_key = (simple.capacity_key, info.static_id)
        fit = rows.fits.get(fit_key, False)
        if fit is False:
            fit = rows.fits[fit_key] = _fit(simple, info, features)
        if fit is not None:
            out.append((pos, d, fit[0], fit[1], False))  # type: ignore[index]
    return tuple(out)


def _selected(
    simple: Simple, inventory: DeviceInventory, row: int, features: Features, selectable: Selectable
) -> _Selected | None:
    out: list[tuple[int, int, DeviceInfo, bool]] = []
    class_name = simple.device_class.metadata.name
    for pos, d in enumerate(inventory.visible(row)):
        info = inventory.devices[d]
        verdict = selectable(class_name, simple.class_exprs, "", simple.request_exprs, info)
        if isinstance(verdict, SelectorError):
            out.append((pos, d, info, True))  # the message names the claim: made when the scan reaches it
            continue
        if not verdict:
            continue
        if info.consumes:
            if not features.partitionable:
                continue
            return None  # counters make devices depend on each other: the general search
        if features.device_taints and not tolerated(info, simple.tolerations):
            continue
        out.append((pos, d, info, False))
    return tuple(out)


def _fit(simple: Simple, info: DeviceInfo, features: Features) -> _Fit:
    """(limits, consumed) when the device can serve the request on its own capacity, else None."""
    if not info.allow_multiple:
        if features.consumable_capacity and not requested_fits(simple.capacity, info.device):
            return None
        return (), None
    consumed = consumed_capacity(simple.capacity, info.device)
    if consumed is None:
        return None
    limits = tuple((n, a.value, amount(info.device.capacity[n].value).value) for n, a in consumed.items())
    if any(use > total for _, use, total in limits):
        return None  # more than the device has, whatever the cluster uses of it
    return limits, consumed


class SelectorFailed(Exception):
    """The scan reached a free device whose selector failed (the caller words the error)."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def fast_solve(count: int, devices: tuple[_Device, ...], state: AllocatedState) -> Outcome | None:
    """The first ``count`` usable devices, or None (see the module docstring). Raises SelectorFailed."""
    picks: list[Choice] = []
    exclusive, consumed_by = state.usage()
    for pos, index, limits, consumed, failed in devices:
        if index in exclusive:
            continue
        if failed:
            raise SelectorFailed(index)
        if limits:
            used = consumed_by.get(index)
            if used:
                over = False
                for name, use, total in limits:
                    if used.get(name, 0) + use > total:
                        over = True
                        break
                if over:
                    continue
        picks.append(Choice(0, 0, pos, consumed))
        if len(picks) == count:
            return Outcome(choices=(tuple(picks),), subrequests=((0,),))
    return None
