"""Small builders for the allocator's unit tests: slices, claims and classes from plain dicts, and one call."""

from __future__ import annotations

from typing import Any

import msgspec

from phalanx.api import dra
from phalanx.api.models import Node
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.resources import ResourceIndex
from phalanx.dra.allocator import Allocator
from phalanx.dra.features import DEFAULT_FEATURES, Features
from phalanx.dra.inventory import DeviceInventory
from phalanx.dra.state import AllocatedState

DRIVER = "gpu.example.com"


def nodes(*names: str, labels: dict[str, dict[str, str]] | None = None) -> NodeTable:
    objs = [
        msgspec.convert({"metadata": {"name": n, "labels": (labels or {}).get(n, {})}}, Node) for n in names or ("n1",)
    ]
    return NodeTable.build(objs, ResourceIndex())


def device_slice(name: str, devices: list[Any], pool: str = "pool", count: int = 1, **spec: Any) -> dra.ResourceSlice:
    """A slice of ``DRIVER``; devices are names or Device dicts; node-local to n1 unless ``spec`` says otherwise."""
    if not ({"nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection", "sharedCounters"} & spec.keys()):
        spec["nodeName"] = "n1"
    gen = spec.pop("generation", 0)
    body = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": gen, "resourceSliceCount": count},
        "devices": [{"name": d} if isinstance(d, str) else d for d in devices],
        **spec,
    }
    return msgspec.convert({"metadata": {"name": name}, "spec": body}, dra.ResourceSlice)


def counter_slice(name: str, counters: dict[str, str], pool: str = "pool", count: int = 2) -> dra.ResourceSlice:
    body = {
        "driver": DRIVER,
        "pool": {"name": pool, "resourceSliceCount": count},
        "nodeName": "n1",
        "sharedCounters": [{"name": "cs", "counters": {k: {"value": v} for k, v in counters.items()}}],
    }
    return msgspec.convert({"metadata": {"name": name}, "spec": body}, dra.ResourceSlice)


def device_class(name: str = "gpu", *selectors: str, config: list[Any] | None = None) -> dra.DeviceClass:
    spec = {"selectors": [{"cel": {"expression": s}} for s in selectors], "config": config or []}
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, dra.DeviceClass)


def claim(
    name: str, *requests: dict[str, Any], constraints: list[Any] | None = None, **devices: Any
) -> dra.ResourceClaim:
    """Requests are ``{"name": .., **exactly fields}`` or ``{"name": .., "firstAvailable": [...]}``."""
    reqs = []
    for r in requests:
        r = dict(r)
        rname = r.pop("name")
        if "firstAvailable" in r:
            reqs.append({"name": rname, "firstAvailable": r["firstAvailable"]})
        else:
            reqs.append({"name": rname, "exactly": {"deviceClassName": "gpu", **r}})
    body = {"devices": {"requests": reqs, "constraints": constraints or [], **devices}}
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    return msgspec.convert({"metadata": meta, "spec": body}, dra.ResourceClaim)


def allocator(
    slices: list[dra.ResourceSlice],
    classes: list[dra.DeviceClass] | None = None,
    table: NodeTable | None = None,
    features: Features = DEFAULT_FEATURES,
    allocated: list[dra.AllocationResult] | None = None,
    prune: bool = True,
    fast: bool = True,
) -> Allocator:
    table = table or nodes("n1")
    inventory = DeviceInventory(slices, table, features)
    state = AllocatedState(inventory)
    for a in allocated or []:
        state.add(a)
    by_name = {c.metadata.name: c for c in classes or [device_class()]}
    return Allocator(inventory, state, by_name, features, prune=prune, fast=fast)


def devices_of(results: list[dra.AllocationResult] | None) -> list[list[str]] | None:
    """Per claim: ``request:device`` of every result, in order."""
    if results is None:
        return None
    return [[f"{r.request}:{r.device}" for r in a.devices.results] for a in results]


def allocation(*devices: str, request: str = "r", admin: bool = False) -> dra.AllocationResult:
    results = [
        {"request": request, "driver": DRIVER, "pool": "pool", "device": d, **({"adminAccess": True} if admin else {})}
        for d in devices
    ]
    return msgspec.convert({"devices": {"results": results}}, dra.AllocationResult)
