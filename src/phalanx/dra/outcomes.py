"""Allocation outcomes shared by nodes that look alike to the allocator.

On one node the search depends only on the claims' and classes' specs, and per visible device (in search order)
on its selector verdicts and constrained attribute values (given by the caller as a selection key), what it is
apart from its name (capacity, counters, taints, scope), its pool's position and the cluster's use of it, plus
each pool's state and free counters. Equal keys give the same choices by position, so
a cluster of identical nodes needs one search, and claims generated from one template share it across pods. The
caller rebuilds results with the node's own devices and the claims' own names (shareIDs, nodeSelector).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from phalanx.api import dra
from phalanx.api.dra_defaults import ALL
from phalanx.dra.inventory import DeviceInfo, DeviceInventory
from phalanx.dra.search import Choice
from phalanx.dra.state import AllocatedState

__all__ = ["Outcome", "OutcomeCache", "shape_key"]

_SPEC = msgspec.json.Encoder(order="sorted")
_MAX_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class Outcome:
    """A search's answer by position: per claim the choices, and the subrequest chosen for each request."""

    choices: tuple[tuple[Choice, ...], ...]
    subrequests: tuple[tuple[int, ...], ...]


class OutcomeCache:
    """Outcomes (None = no solution) by shape key, oldest dropped first beyond a bound."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, Outcome | None] = {}

    def get(self, key: Hashable) -> tuple[bool, Outcome | None]:
        if key in self._entries:
            return True, self._entries[key]
        return False, None

    def put(self, key: Hashable, outcome: Outcome | None) -> None:
        if len(self._entries) >= _MAX_ENTRIES:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = outcome


def shape_key(
    inventory: DeviceInventory,
    state: AllocatedState,
    row: int,
    claims: Sequence[dra.ResourceClaim],
    classes: Mapping[str, dra.DeviceClass],
    selection: Callable[[DeviceInfo], Hashable],
) -> Hashable | None:
    """The key, or None when the call must not be shared: ``All`` requests (their pre-pass also looks at devices
    of the pools that do not serve the node) and classes that do not exist (the call fails)."""
    specs: list[bytes] = []
    class_names: set[str] = set()
    for claim in claims:
        for request in claim.spec.devices.requests:
            subs: list[dra.ExactDeviceRequest | dra.DeviceSubRequest] = list(request.first_available)
            if request.exactly is not None:
                subs.append(request.exactly)
            if any(sub.allocation_mode == ALL for sub in subs):
                return None
            class_names.update(sub.device_class_name for sub in subs)
        specs.append(_SPEC.encode(claim.spec))
    for name in sorted(class_names):
        device_class = classes.get(name)
        if device_class is None:
            return None
        specs.append(_SPEC.encode(device_class.spec))
    return (tuple(specs), _pools_key(inventory, state, row), _devices_key(inventory, state, row, selection))


def _pools_key(inventory: DeviceInventory, state: AllocatedState, row: int) -> Hashable:
    out = []
    for pool in inventory.node_pools(row):
        counters = tuple(
            (set_name, counter, state.counters_available(pool.pool_id, set_name, counter))
            for set_name, values in sorted(inventory.counter_sets(pool.pool_id).items())
            for counter in sorted(values)
        )
        out.append((pool.incomplete, bool(pool.invalid), counters))
    return tuple(out)


def _devices_key(
    inventory: DeviceInventory, state: AllocatedState, row: int, selection: Callable[[DeviceInfo], Hashable]
) -> Hashable:
    positions = inventory.pool_positions(row)
    out = []
    for d in inventory.visible(row):
        info = inventory.devices[d]
        use: Hashable = state.is_allocated(d)
        if info.allow_multiple:
            use = (state.has_shares(d), tuple(sorted(state.consumed(d).items())))
        out.append((info.static_id, positions[info.pool_id] if info.consumes else -1, use, selection(info)))
    return tuple(out)
