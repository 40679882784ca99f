"""CEL for DRA device selectors and Kubernetes expressions: a complete CEL implementation with the Kubernetes
libraries, cost estimation and runtime cost as kube-apiserver computes them.

Parse -> expand macros -> type-check -> validate -> plan (closures) -> evaluate with a cost limit. Public surface:
:func:`check_selector` (API validation), :func:`compile_selector` (cached), :class:`Selector`, :class:`DeviceView`,
:func:`device_view`, :class:`Features`, and :func:`kubernetes_environment` for other expressions.
"""

from phalanx.api.cel.device import DeviceView, device_view
from phalanx.api.cel.dra import Features
from phalanx.api.cel.environment import Environment, Program, kubernetes_environment
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.selector import (
    COST_LIMIT,
    MAX_EXPRESSION_BYTES,
    Selector,
    check_selector,
    compile_selector,
    selector_cost,
)
from phalanx.api.cel.values import Optional, Quantity, Semver, UInt

__all__ = [
    "COST_LIMIT",
    "MAX_EXPRESSION_BYTES",
    "CelError",
    "DeviceView",
    "Environment",
    "Features",
    "Optional",
    "Program",
    "Quantity",
    "Selector",
    "Semver",
    "UInt",
    "check_selector",
    "compile_selector",
    "device_view",
    "kubernetes_environment",
    "selector_cost",
]
