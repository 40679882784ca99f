"""What is allocated in the cluster, as the allocator sees it (spec dra.md §3.1 AllocatedState), kept incrementally.

Exclusively allocated devices, the shares of multi-allocatable devices with their consumed capacity, and the
shared counters consumed per (driver, pool). Results with ``adminAccess: true`` never count as allocated.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from phalanx.api import dra
from phalanx.api.models import Quantity
from phalanx.api.quantity import QuantityError, parse_quantity, value
from phalanx.dra.inventory import DeviceInfo, DeviceInventory

__all__ = ["AllocatedState", "capacity_key"]

CounterKey = tuple[int, str, str]  # (pool id, counter set, counter)


class AllocatedState:
    """Allocated devices, consumed capacity and consumed counters; ``add``/``remove`` apply one AllocationResult."""

    def __init__(self, inventory: DeviceInventory) -> None:
        self.inventory = inventory
        self._exclusive: dict[int, int] = {}  # device -> number of allocations holding it (1 when consistent)
        self._shares: dict[int, int] = {}  # multi-allocatable device -> number of shares
        self._consumed: dict[int, dict[str, int]] = {}  # multi-allocatable device -> capacity name -> consumed
        self._counters: dict[CounterKey, Fraction] = {}
        self.generation = 0  # bumped on every change, for callers that cache on it

    def add(self, allocation: dra.AllocationResult) -> None:
        """Count ``allocation`` as allocated (devices the inventory does not know are ignored)."""
        for result in allocation.devices.results:
            self._apply(result, +1)
        self.generation += 1

    def remove(self, allocation: dra.AllocationResult) -> None:
        """Undo :meth:`add` for the same ``allocation``."""
        for result in allocation.devices.results:
            self._apply(result, -1)
        self.generation += 1

    def _apply(self, result: dra.DeviceRequestAllocationResult, sign: int) -> None:
        if result.admin_access:
            return
        device = self.inventory.lookup(result.driver, result.pool, result.device)
        if device is None:
            return
        info = self.inventory.devices[device]
        if not info.allow_multiple:
            before = self._exclusive.get(device, 0)
            _bump(self._exclusive, device, sign)
            if _first_or_last(before, sign):
                self._charge(info, sign)
            return
        before = self._shares.get(device, 0)
        _bump(self._shares, device, sign)
        consumed = self._consumed.setdefault(device, {})
        for key, q in result.consumed_capacity.items():
            name = capacity_key(info, key)
            consumed[name] = consumed.get(name, 0) + sign * _value(q)
        if not self._shares.get(device):
            self._consumed.pop(device, None)
        if _first_or_last(before, sign):
            self._charge(info, sign)  # counters are charged once per device, not per share

    def _charge(self, info: DeviceInfo, sign: int) -> None:
        for set_name, counter, amount in info.consumes:
            key = (info.pool_id, set_name, counter)
            self._counters[key] = self._counters.get(key, Fraction(0)) + sign * amount

    def is_allocated(self, device: int) -> bool:
        """Whether ``device`` is exclusively allocated (multi-allocatable devices never are)."""
        return self._exclusive.get(device, 0) > 0

    def has_shares(self, device: int) -> bool:
        """Whether a multi-allocatable ``device`` has at least one allocation (its counters are then charged)."""
        return self._shares.get(device, 0) > 0

    def consumed(self, device: int) -> Mapping[str, int]:
        """Capacity consumed by the shares of a multi-allocatable device, by capacity name."""
        return self._consumed.get(device, {})

    def usage(self) -> tuple[Mapping[int, int], Mapping[int, Mapping[str, int]]]:
        """The live maps behind ``is_allocated`` (a device is in the first when exclusively allocated) and
        ``consumed`` (multi-allocatable devices with shares), for scans over many devices; read them only."""
        return self._exclusive, self._consumed

    def counters_consumed(self, pool_id: int, counter_set: str, counter: str) -> Fraction:
        return self._counters.get((pool_id, counter_set, counter), Fraction(0))

    def counters_available(self, pool_id: int, counter_set: str, counter: str) -> Fraction:
        """Shared counter minus what allocated devices consume (may be negative: nothing left)."""
        total = self.inventory.counter_sets(pool_id).get(counter_set, {}).get(counter, Fraction(0))
        return total - self.counters_consumed(pool_id, counter_set, counter)

    def copy(self) -> AllocatedState:
        """An independent copy, for what-if evaluations (preemption)."""
        other = AllocatedState(self.inventory)
        other._exclusive = dict(self._exclusive)
        other._shares = dict(self._shares)
        other._consumed = {d: dict(c) for d, c in self._consumed.items()}
        other._counters = dict(self._counters)
        other.generation = self.generation
        return other


def capacity_key(info: DeviceInfo, key: str) -> str:
    """The device's own capacity name for ``key``: results may omit the driver's domain, or spell it out."""
    capacity = info.device.capacity
    if key in capacity:
        return key
    domain, _, name = key.rpartition("/")
    if domain == info.driver and name in capacity:
        return name
    qualified = f"{info.driver}/{key}"
    return qualified if not domain and qualified in capacity else key


def _bump(counts: dict[int, int], key: int, sign: int) -> None:
    new = counts.get(key, 0) + sign
    if new > 0:
        counts[key] = new
    else:
        counts.pop(key, None)


def _first_or_last(before: int, sign: int) -> bool:
    """Whether a change by ``sign`` from ``before`` holders takes the device from free to used or back."""
    return (before == 0 and sign > 0) or (before == 1 and sign < 0)


def _value(q: Quantity) -> int:
    try:
        return value(parse_quantity(q))
    except QuantityError:
        return 0
