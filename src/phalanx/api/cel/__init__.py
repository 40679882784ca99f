"""CEL for DRA device selectors: a small, complete CEL implementation with the Kubernetes libraries.

Parse -> plan (type-checked closures) -> evaluate with a cost limit. Public surface: :func:`check_selector`
(API validation), :func:`compile_selector` (cached), :class:`Selector`, :class:`DeviceView`, :func:`device_view`.
"""

from phalanx.api.cel.device import DeviceView, device_view
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.selector import COST_LIMIT, MAX_EXPRESSION_BYTES, Selector, check_selector, compile_selector
from phalanx.api.cel.values import Optional, Quantity, Semver, UInt

__all__ = [
    "COST_LIMIT",
    "MAX_EXPRESSION_BYTES",
    "CelError",
    "DeviceView",
    "Optional",
    "Quantity",
    "Selector",
    "Semver",
    "UInt",
    "check_selector",
    "compile_selector",
    "device_view",
]
