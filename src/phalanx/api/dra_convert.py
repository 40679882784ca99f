"""Conversion of ``resource.k8s.io/v1beta1`` objects into the v1 shape the models of :mod:`phalanx.api.dra` decode.

v1beta1 differs from v1 in three places: request fields sit directly on the request (v1 nests them under
``exactly``), device fields sit under ``Device.basic``, and a slice's ``nodeName``/``allNodes`` are plain values
whose zero means unset. ``v1beta2`` has the v1 shape (in v1.36 it differs only by DeviceTaintRule, a kind phalanx
does not read), so it needs no conversion.

Errors found after conversion name the v1 fields (``requests[0].exactly.count``), as kube-apiserver's do for any
version, since it validates the internal (v1-shaped) object; the loader then points at the request's line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["CONVERTERS", "Converter", "convert_v1beta1"]

Converter = Callable[[dict[str, Any]], dict[str, Any]]

# The request fields that v1 moved under ``exactly`` (everything but name and firstAvailable).
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


def convert_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """A v1beta1 DeviceClass, ResourceSlice, ResourceClaim or ResourceClaimTemplate as a v1 object dict.

    The input is not changed. A part of the wrong type raises :class:`msgspec.ValidationError` with its path, so
    the loader reports it like any decoding error."""
    kind = obj.get("kind")
    out = dict(obj)
    out["apiVersion"] = "resource.k8s.io/v1"
    spec = obj.get("spec")
    if spec is None:
        return out
    if kind == "ResourceSlice":
        out["spec"] = _slice_spec(_object(spec, "spec"))
    elif kind == "ResourceClaim":
        out["spec"] = _claim_spec(_object(spec, "spec"), "spec")
    elif kind == "ResourceClaimTemplate":
        template = dict(_object(spec, "spec"))
        if template.get("spec") is not None:
            template["spec"] = _claim_spec(_object(template["spec"], "spec.spec"), "spec.spec")
        out["spec"] = template
    return out


def _object(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise msgspec.ValidationError(f"Expected `object`, got `{_type_name(value)}` - at `$.{path}`")
    return value


def _list(value: object, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise msgspec.ValidationError(f"Expected `array`, got `{_type_name(value)}` - at `$.{path}`")
    return value


def _type_name(value: object) -> str:
    names = {str: "str", int: "int", float: "float", bool: "bool", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _slice_spec(spec: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    # v1beta1 has no pointer here: "" and false mean unset, which v1 spells by leaving the field out.
    if out.get("nodeName") == "":
        del out["nodeName"]
    if out.get("allNodes") is False:
        del out["allNodes"]
    if out.get("devices") is not None:
        devices = _list(out["devices"], "spec.devices")
        out["devices"] = [
            _device(_object(d, f"spec.devices[{i}]"), f"spec.devices[{i}]") for i, d in enumerate(devices)
        ]
    return out


def _device(device: dict[str, Any], path: str) -> dict[str, Any]:
    out = {k: v for k, v in device.items() if k != "basic"}
    basic = device.get("basic")
    if basic is not None:
        # v1 has the same fields on the device itself; a field written on both levels keeps the basic one.
        out.update(_object(basic, f"{path}.basic"))
    return out


def _claim_spec(spec: dict[str, Any], path: str) -> dict[str, Any]:
    out = dict(spec)
    devices = out.get("devices")
    if devices is None:
        return out
    devices = dict(_object(devices, f"{path}.devices"))
    if devices.get("requests") is not None:
        at = f"{path}.devices.requests"
        requests = _list(devices["requests"], at)
        devices["requests"] = [_request(_object(r, f"{at}[{i}]")) for i, r in enumerate(requests)]
    out["devices"] = devices
    return out


def _request(request: dict[str, Any]) -> dict[str, Any]:
    """Flattened fields go under ``exactly``; a request with them and ``firstAvailable`` keeps both, so
    validation reports it (as v1.36's conversion does)."""
    out = {k: v for k, v in request.items() if k not in _EXACT_FIELDS}
    exactly = {k: request[k] for k in _EXACT_FIELDS if k in request}
    if exactly:
        out["exactly"] = exactly
    return out


CONVERTERS: dict[tuple[str, str], Converter] = {
    ("resource.k8s.io/v1beta1", kind): convert_v1beta1
    for kind in ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
}
