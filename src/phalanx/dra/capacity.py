"""Consumable capacity (spec dra.md §3.7): what one allocation of a device consumes, after requestPolicy rounding.

Quantities are compared as ``Quantity.Value()`` integers, as in v1.36. A consumed amount remembers whether it was
written with a binary suffix so the result prints it the way kube-scheduler would (``10Gi``, not ``10737418240``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.api import dra
from phalanx.api.models import Quantity
from phalanx.api.quantity import QuantityError, parse_quantity, value

__all__ = ["Amount", "amount", "consumed_capacity", "format_amount", "requested_fits"]

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


@dataclass(frozen=True, slots=True)
class Amount:
    """An integer quantity and whether it prints with a binary suffix."""

    value: int
    binary: bool = False


def amount(q: Quantity | None) -> Amount:
    """``q`` as an Amount (0 when unset or not a quantity: validation reports those)."""
    if q is None:
        return Amount(0)
    try:
        v = value(parse_quantity(q))
    except QuantityError:
        return Amount(0)
    return Amount(v, isinstance(q, str) and q.endswith("i"))


def format_amount(a: Amount) -> str:
    """The canonical Kubernetes spelling: the largest suffix that divides the value exactly."""
    if a.value:
        for suffix, factor in _BINARY if a.binary else _DECIMAL:
            if a.value % factor == 0:
                return f"{a.value // factor}{suffix}"
    return str(a.value)


def requested_fits(requests: Mapping[str, Amount], device: dra.Device) -> bool:
    """A device that is not multi-allocatable serves a capacity request when it has every named capacity and
    each is large enough."""
    for name, want in requests.items():
        cap = device.capacity.get(name)
        if cap is None or want.value > amount(cap.value).value:
            return False
    return True


def consumed_capacity(requests: Mapping[str, Amount], device: dra.Device) -> dict[str, Amount] | None:
    """What one allocation of a multi-allocatable device consumes of every capacity, or None when the request
    names a capacity the device lacks or a requestPolicy forbids the (rounded) amount."""
    if any(name not in device.capacity for name in requests):
        return None
    out: dict[str, Amount] = {}
    for name, cap in device.capacity.items():
        policy = cap.request_policy
        total = amount(cap.value)
        want = requests.get(name)
        if want is None:
            want = amount(policy.default) if policy is not None and policy.default is not None else total
        if policy is not None:
            rounded = _apply_policy(want, policy)
            if rounded is None:
                return None
            want = rounded
        out[name] = want
    return out


def _apply_policy(want: Amount, policy: dra.CapacityRequestPolicy) -> Amount | None:
    default = amount(policy.default).value if policy.default is not None else None
    if policy.valid_values:
        values = sorted(amount(v).value for v in policy.valid_values)
        chosen = next((v for v in values if v >= want.value), want.value)
        ok = chosen in values or chosen == default
        return Amount(chosen, want.binary) if ok else None
    rng = policy.valid_range
    if rng is None:
        return want
    low = amount(rng.min).value
    step = amount(rng.step).value if rng.step is not None else 0
    result = want.value
    if result < low:
        result = low
    elif step > 0:
        result = low + math.ceil((result - low) / step) * step
    too_big = rng.max is not None and result > amount(rng.max).value
    off_step = step > 0 and (result - low) % step != 0
    if (too_big or off_step) and result != default:
        return None
    return Amount(result, want.binary)
