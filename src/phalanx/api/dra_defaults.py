"""The defaults kube-apiserver applies to DRA requests before anyone reads them (spec dra.md §1.3).

A snapshot written by hand leaves them out; :func:`defaulted` gives the allocator the request as the API server
would have stored it, so it never has to know which fields were written.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec

from phalanx.api.dra import DeviceSubRequest, DeviceToleration, ExactDeviceRequest

__all__ = ["ALL", "ALLOCATION_MODES", "EXACT_COUNT", "TOLERATION_OPERATORS", "defaulted", "effective_count"]

EXACT_COUNT = "ExactCount"
ALL = "All"
ALLOCATION_MODES = (ALL, EXACT_COUNT)
TOLERATION_OPERATORS = ("Equal", "Exists")

Request = TypeVar("Request", ExactDeviceRequest, DeviceSubRequest)


def effective_count(allocation_mode: str, count: int) -> int:
    """The count an ExactCount request asks for (unset means 1); ``All`` requests have no count (0)."""
    if (allocation_mode or EXACT_COUNT) != EXACT_COUNT:
        return 0
    return count or 1


def _toleration(toleration: DeviceToleration) -> DeviceToleration:
    if toleration.operator:
        return toleration
    return msgspec.structs.replace(toleration, operator="Equal")


def defaulted(request: Request) -> Request:
    """``request`` with kube-apiserver's defaults: allocationMode ExactCount, count 1 for ExactCount, toleration
    operator Equal. Returns the same object when nothing changes."""
    mode = request.allocation_mode or EXACT_COUNT
    count = effective_count(mode, request.count) if mode == EXACT_COUNT else request.count
    tolerations = [_toleration(t) for t in request.tolerations]
    if mode == request.allocation_mode and count == request.count and tolerations == request.tolerations:
        return request
    return msgspec.structs.replace(request, allocation_mode=mode, count=count, tolerations=tolerations)
