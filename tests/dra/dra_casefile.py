"""Golden DRA allocator cases: the YAML format of ``tests/dra/cases/*.yaml`` and how it becomes Python objects.

A case names ResourceSlices, DeviceClasses, ResourceClaims (v1 shapes, with the shorthands described in
``cases/README.md``), the node to allocate for and what is already allocated; ``expect`` says what the allocator
must return. This module only builds objects and normalises results; ``test_golden.py`` runs the allocator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
import yaml

from phalanx.api import dra
from phalanx.api.models import Node
from phalanx.api.quantity import parse_quantity

CASES_DIR = Path(__file__).parent / "cases"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# Two nodes in every case unless a case lists its own, as upstream's table does.
DEFAULT_NODES = [
    {"name": "node-1", "labels": {"region": "region-1", "planet": "earth"}},
    {"name": "node-2", "labels": {"region": "region-2", "planet": "earth"}},
]


@dataclass
class Case:
    file: str
    name: str
    raw: dict[str, Any]
    nodes: list[Node] = field(default_factory=list)
    slices: list[dra.ResourceSlice] = field(default_factory=list)
    classes: dict[str, dra.DeviceClass] = field(default_factory=dict)
    claims: list[dra.ResourceClaim] = field(default_factory=list)
    allocated: list[dra.AllocationResult] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.file}:{self.name}"

    @property
    def node(self) -> str:
        return str(self.raw.get("node", "node-1"))

    @property
    def features(self) -> dict[str, bool]:
        return dict(self.raw.get("features") or {})

    @property
    def expect(self) -> dict[str, Any]:
        return dict(self.raw["expect"])


def load_cases() -> list[Case]:
    cases: list[Case] = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for raw in doc["cases"]:
            cases.append(build_case(path.stem, raw))
    return cases


def build_case(file: str, raw: dict[str, Any]) -> Case:
    case = Case(file=file, name=raw["name"], raw=raw)
    case.nodes = [_node(n) for n in raw.get("nodes", DEFAULT_NODES)]
    case.slices = [_slice(s) for s in raw.get("slices", [])]
    case.classes = {c["name"]: _class(c) for c in raw.get("classes", [])}
    case.claims = [_claim(c) for c in raw.get("claims", [])]
    case.allocated = [_allocated(a) for a in raw.get("allocated", [])]
    return case


def _node(raw: dict[str, Any]) -> Node:
    return msgspec.convert({"metadata": {"name": raw["name"], "labels": raw.get("labels", {})}}, Node)


def _pool(raw: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(raw, str):  # a pool of one slice, generation 1
        return {"name": raw, "generation": 1, "resourceSliceCount": 1}
    return {"generation": 1, "resourceSliceCount": 1, **raw}


def _device(raw: str | dict[str, Any]) -> dict[str, Any]:
    return {"name": raw} if isinstance(raw, str) else raw


def _slice(raw: dict[str, Any]) -> dra.ResourceSlice:
    spec = {k: v for k, v in raw.items() if k != "name"}
    spec["pool"] = _pool(raw["pool"])
    spec["devices"] = [_device(d) for d in raw.get("devices", [])]
    return msgspec.convert({"metadata": {"name": raw["name"]}, "spec": spec}, dra.ResourceSlice)


def _selectors(raw: list[Any]) -> list[dict[str, Any]]:
    # A plain string is a CEL expression; a mapping is a DeviceSelector as written.
    return [{"cel": {"expression": s}} if isinstance(s, str) else s for s in raw]


def _class(raw: dict[str, Any]) -> dra.DeviceClass:
    spec: dict[str, Any] = {"config": raw.get("config", [])}
    if "selectors" in raw:
        spec["selectors"] = _selectors(raw["selectors"])
    else:
        spec["selectors"] = _selectors([f'device.driver == "{raw["driver"]}"'])
    return msgspec.convert({"metadata": {"name": raw["name"]}, "spec": spec}, dra.DeviceClass)


def _request(raw: dict[str, Any]) -> dict[str, Any]:
    out = dict(raw)
    if "exactly" in out:
        out["exactly"] = {**out["exactly"], "selectors": _selectors(out["exactly"].get("selectors", []))}
    if "firstAvailable" in out:
        out["firstAvailable"] = [{**s, "selectors": _selectors(s.get("selectors", []))} for s in out["firstAvailable"]]
    return out


def _claim(raw: dict[str, Any]) -> dra.ResourceClaim:
    name = raw["name"]
    devices = {
        "requests": [_request(r) for r in raw.get("requests", [])],
        "constraints": raw.get("constraints", []),
        "config": raw.get("config", []),
    }
    meta = {"name": name, "namespace": raw.get("namespace", "default"), "uid": f"uid-{name}"}
    return msgspec.convert({"metadata": meta, "spec": {"devices": devices}}, dra.ResourceClaim)


def _allocated(raw: dict[str, Any]) -> dra.AllocationResult:
    # One already-allocated claim; a bare device entry (driver/pool/device) is an exclusive allocation.
    entries = raw.get("results", [raw])
    results = [{"request": "req-other", **e} for e in entries]
    return msgspec.convert({"devices": {"results": results}}, dra.AllocationResult)


# --- comparing results --------------------------------------------------------------------------------------------


def _quantities(values: dict[str, Any]) -> dict[str, Fraction]:
    return {k: parse_quantity(v) for k, v in values.items()}


def normalize_selector(selector: Any) -> Any:
    """A NodeSelector as plain data, order-free inside terms; the shorthand ``node-1`` means that node only."""
    if selector is None:
        return None
    if isinstance(selector, str):
        selector = {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [selector]}]}]
        }
    terms = []
    for term in selector.get("nodeSelectorTerms", []):
        norm = {}
        for kind in ("matchExpressions", "matchFields"):
            reqs = sorted((r["key"], r["operator"], tuple(sorted(r.get("values", [])))) for r in term.get(kind, []))
            norm[kind] = reqs
        terms.append(norm)
    return sorted(terms, key=repr)


def normalize_result(result: dict[str, Any], share_ids: list[str]) -> dict[str, Any]:
    """One DeviceRequestAllocationResult as comparable data; a shareID is recorded and replaced by a marker."""
    out = dict(result)
    if "shareID" in out:
        share_ids.append(out["shareID"])
        out["shareID"] = "present"
    if "consumedCapacity" in out:
        out["consumedCapacity"] = _quantities(out["consumedCapacity"])
    out.setdefault("tolerations", [])
    for t in out["tolerations"]:
        t.setdefault("operator", "Equal")
    for key in ("bindingConditions", "bindingFailureConditions"):
        if not out.get(key):
            out.pop(key, None)
    return out


def normalize_allocation(allocation: dict[str, Any], share_ids: list[str]) -> dict[str, Any]:
    devices = allocation.get("devices", {})
    return {
        "results": [normalize_result(r, share_ids) for r in devices.get("results", [])],
        "config": devices.get("config", []),
        "nodeSelector": normalize_selector(allocation.get("nodeSelector")),
    }


def actual_allocation(result: dra.AllocationResult) -> dict[str, Any]:
    data = msgspec.to_builtins(result)
    assert isinstance(data, dict)
    data.pop("allocationTimestamp", None)
    return data
