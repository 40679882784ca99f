"""Kubernetes resource quantities, parsed exactly.

A quantity (``500m``, ``1.5Gi``, ``2e3``) is parsed into a :class:`fractions.Fraction`, never a float, and
converted to the integers the scheduler works in the way ``resource.Quantity`` does: ``milli_value`` for CPU and
``value`` (rounded up) for everything else.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = ["MAX_DIGITS", "QuantityError", "milli_value", "parse_quantity", "value"]

MAX_DIGITS = 1000

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# The grammar of resource.ParseQuantity: a signed decimal number, then a binary SI suffix, a decimal SI suffix,
# or a decimal exponent.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_EXPECTED = "must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message is kube-apiserver's."""


@lru_cache(maxsize=4096)
def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity exactly. Integers are taken as they are; floats only when they are whole numbers."""
    if isinstance(text, bool):
        raise QuantityError(_EXPECTED)
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(_EXPECTED)
        # A YAML float such as 0.5 is how a user writes "0.5"; its decimal repr is the intended value.
        return _parse_str(repr(text))
    return _parse_str(text)


def _parse_str(text: str) -> Fraction:
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(_EXPECTED)
    if len(match.group("num")) > MAX_DIGITS:  # no resource is that precise, and int() would refuse it anyway
        raise QuantityError(f"quantity has more than {MAX_DIGITS} digits")
    number = Fraction(match.group("num"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > 1000:
        raise QuantityError("quantity exponent is out of range")
    return number * Fraction(10) ** exponent


def value(quantity: Fraction) -> int:
    """``Quantity.Value()``: the value rounded up to an integer (``1.5`` -> 2, ``100m`` -> 1)."""
    return math.ceil(quantity)


def milli_value(quantity: Fraction) -> int:
    """``Quantity.MilliValue()``: the value in thousandths, rounded up (``0.1`` -> 100, ``1n`` -> 1)."""
    return math.ceil(quantity * 1000)
