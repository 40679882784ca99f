"""The DRA device-selector environment: the ``device`` variable, its declared fields and the function table.

Built once (it is immutable) and shared by every compiled selector; this is the Python counterpart of
``dynamic-resource-allocation/cel``'s ``newCompiler`` on top of the Kubernetes base environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from itertools import chain

from phalanx.api.cel import arithmetic, kubernetes, strings
from phalanx.api.cel.overloads import Table

__all__ = ["DEVICE_TYPE", "FIELD_TYPES", "SCOPE", "function_table"]

DEVICE_TYPE = "kubernetes.DRADevice"
FIELD_TYPES: Mapping[str, Mapping[str, str]] = {
    DEVICE_TYPE: {"driver": "string", "attributes": "map", "capacity": "map", "allowMultipleAllocations": "bool"},
}
SCOPE: Mapping[str, str] = {"device": DEVICE_TYPE}


@cache
def function_table() -> Table:
    """Every function a selector may call; cached because it is immutable and costs ~1 ms to build."""
    return Table(chain(arithmetic.overloads(), strings.overloads(), kubernetes.overloads()))
