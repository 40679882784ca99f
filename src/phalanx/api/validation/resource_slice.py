"""ResourceSlice validation (``resource.k8s.io/v1``, spec dra.md §1.1 and §1.5): driver, pool, node selection,
devices with their attributes, capacities, counters, taints and binding conditions, and shared counter sets.
"""

from __future__ import annotations

import re

from phalanx.api import dra
from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import dra_fields as d
from phalanx.api.validation import fields as f
from phalanx.api.validation.affinity import _validate_node_selector as validate_node_selector
from phalanx.api.validation.capacity_policy import validate_capacity
from phalanx.api.validation.meta import validate_object_meta

__all__ = ["validate_resource_slice"]

MAX_DEVICES = 128
MAX_DEVICES_WITH_ADVANCED_FEATURES = 64  # any device with taints, consumesCounters or list attributes
_MAX_COUNTER_SETS = 8
_MAX_COUNTERS = 32
_MAX_COUNTER_CONSUMPTIONS = 2
_MAX_ATTRIBUTES_AND_CAPACITIES = 32
_MAX_ATTRIBUTE_VALUES = 48
_MAX_TAINTS = 16
_MAX_VALUE_LENGTH = 64
_NODE_SELECTION = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
_DEVICE_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to "
    "true in the ResourceSlice spec"
)
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
)


def validate_resource_slice(rs: dra.ResourceSlice) -> list[FieldError]:
    """Every problem with a ResourceSlice, as kube-apiserver reports them on create."""
    return validate_object_meta(rs.metadata, namespaced=False) + _validate_spec(rs.spec)


def _validate_spec(spec: dra.ResourceSliceSpec) -> list[FieldError]:
    errs = d.validate_driver_name("spec.driver", spec.driver)
    errs += _validate_pool(spec.pool)
    errs += _validate_node_selection(spec)
    if spec.shared_counters and spec.devices:
        errs.append(FieldError.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    advanced = any(dev.taints or dev.consumes_counters or _has_list_attributes(dev) for dev in spec.devices)
    limit = MAX_DEVICES_WITH_ADVANCED_FEATURES if advanced else MAX_DEVICES
    per_device = spec.per_device_node_selection is True

    def device(path: str, dev: dra.Device) -> list[FieldError]:
        return _validate_device(path, dev, per_device)

    errs += d.validate_set("spec.devices", spec.devices, limit, device, key=lambda dev: dev.name)
    errs += d.validate_set(
        "spec.sharedCounters", spec.shared_counters, _MAX_COUNTER_SETS, _validate_counter_set, key=lambda cs: cs.name
    )
    return errs


def _validate_pool(pool: dra.ResourcePool) -> list[FieldError]:
    errs = d.validate_pool_name("spec.pool.name", pool.name)
    if pool.resource_slice_count <= 0:
        path = "spec.pool.resourceSliceCount"
        errs.append(FieldError.invalid(path, pool.resource_slice_count, "must be greater than zero"))
    if pool.generation < 0:
        errs.append(
            FieldError.invalid("spec.pool.generation", pool.generation, "must be greater than or equal to zero")
        )
    errs += f.int64("spec.pool.resourceSliceCount", pool.resource_slice_count)
    return errs + f.int64("spec.pool.generation", pool.generation)


def _validate_node_selection(spec: dra.ResourceSliceSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    chosen: list[str] = []
    if spec.node_name is not None:
        if spec.node_name:
            chosen.append("`nodeName`")
            errs += f.dns_subdomain("spec.nodeName", spec.node_name)
        else:
            errs.append(FieldError.invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.node_selector is not None:
        chosen.append("`nodeSelector`")
        errs += _validate_slice_node_selector("spec.nodeSelector", spec.node_selector)
    for name, value in (("allNodes", spec.all_nodes), ("perDeviceNodeSelection", spec.per_device_node_selection)):
        if value is True:
            chosen.append(f"`{name}`")
        elif value is False:
            errs.append(FieldError.invalid(f"spec.{name}", False, "must be either unset or set to true"))
    if not chosen:
        errs.append(FieldError.required("spec", _NODE_SELECTION))
    elif len(chosen) > 1:
        errs.append(
            FieldError.invalid("spec", "{" + ", ".join(chosen) + "}", _NODE_SELECTION + ", but multiple fields are set")
        )
    return errs


def _validate_slice_node_selector(path: str, selector: m.NodeSelector) -> list[FieldError]:
    errs = validate_node_selector(selector, path)
    terms = selector.node_selector_terms
    if len(terms) != 1:
        # One term keeps the merge of selectors from several slices into one allocation result simple.
        errs.append(
            FieldError.invalid(f"{path}.nodeSelectorTerms", f.shown(terms), "must have exactly one node selector term")
        )
    return errs


# --- devices -----------------------------------------------------------------------------------------------------


def _has_list_attributes(dev: dra.Device) -> bool:
    return any(
        a.ints is not None or a.bools is not None or a.strings is not None or a.versions is not None
        for a in dev.attributes.values()
    )


def _attribute_values(dev: dra.Device) -> int:
    total = 0
    for a in dev.attributes.values():
        listed = len(a.ints or []) + len(a.bools or []) + len(a.strings or []) + len(a.versions or [])
        total += listed or 1
    return total


def _validate_device(path: str, dev: dra.Device, per_device: bool) -> list[FieldError]:
    errs = f.required(f"{path}.name", dev.name, f.dns_label)
    entries = len(dev.attributes) + len(dev.capacity)
    if entries > _MAX_ATTRIBUTES_AND_CAPACITIES:
        detail = f"the total number of attributes and capacities must not exceed {_MAX_ATTRIBUTES_AND_CAPACITIES}"
        errs.append(FieldError.invalid(path, entries, detail))
    values = _attribute_values(dev)
    if values > _MAX_ATTRIBUTE_VALUES:
        detail = f"the total number of attribute values must not exceed {_MAX_ATTRIBUTE_VALUES}"
        errs.append(FieldError.invalid(path, values, detail))
    errs += d.validate_map_keys(f"{path}.attributes", dev.attributes)
    for name, attribute in dev.attributes.items():
        errs += _validate_attribute(d.map_key_path(f"{path}.attributes", name), attribute)
    errs += d.validate_map_keys(f"{path}.capacity", dev.capacity)
    multiple = dev.allow_multiple_allocations is True
    for name, capacity in dev.capacity.items():
        errs += validate_capacity(d.map_key_path(f"{path}.capacity", name), capacity, multiple)
    errs += d.validate_set(f"{path}.taints", dev.taints, _MAX_TAINTS, d.validate_taint)
    errs += d.validate_set(
        f"{path}.consumesCounters",
        dev.consumes_counters,
        _MAX_COUNTER_CONSUMPTIONS,
        _validate_counter_consumption,
        key=lambda c: c.counter_set,
    )
    errs += _validate_device_node_selection(path, dev, per_device)
    errs += d.validate_binding_conditions(path, dev.binding_conditions, dev.binding_failure_conditions)
    return errs


def _validate_device_node_selection(path: str, dev: dra.Device, per_device: bool) -> list[FieldError]:
    if not per_device:
        if dev.node_name is not None or dev.node_selector is not None or dev.all_nodes is not None:
            detail = (
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to "
                "true in the ResourceSlice spec"
            )
            return [FieldError.invalid(path, None, detail)]
        return []
    errs: list[FieldError] = []
    chosen: list[str] = []
    if dev.node_name is not None:
        if dev.node_name:
            chosen.append("`nodeName`")
            errs += f.dns_subdomain(f"{path}.nodeName", dev.node_name)
        else:
            errs.append(FieldError.invalid(f"{path}.nodeName", "", "must not be empty"))
    if dev.node_selector is not None:
        chosen.append("`nodeSelector`")
        errs += validate_node_selector(dev.node_selector, f"{path}.nodeSelector")
    if dev.all_nodes is True:
        chosen.append("`allNodes`")
    elif dev.all_nodes is False:
        errs.append(FieldError.invalid(f"{path}.allNodes", False, "must be either unset or set to true"))
    if not chosen:
        errs.append(FieldError.required(path, _DEVICE_NODE_SELECTION))
    elif len(chosen) > 1:
        errs.append(FieldError.invalid(path, "{" + ", ".join(chosen) + "}", _DEVICE_NODE_SELECTION))
    return errs


def _validate_attribute(path: str, a: dra.DeviceAttribute) -> list[FieldError]:
    members = [a.bool_, a.int_, a.string, a.version, a.bools, a.ints, a.strings, a.versions]
    set_count = sum(member is not None for member in members)
    if set_count == 1 and (a.int_ is not None or a.bool_ is not None):
        return f.int64(f"{path}.int", a.int_)  # the common case, with nothing more to check
    errs = f.int64(f"{path}.int", a.int_)
    for i, n in enumerate(a.ints or []):
        errs += f.int64(f"{path}.ints[{i}]", n)
    if a.string is not None:
        errs += _string_value(f"{path}.string", a.string)
    if a.version is not None:
        errs += _version_value(f"{path}.version", a.version)
    for member, listed in (("bools", a.bools), ("ints", a.ints), ("strings", a.strings), ("versions", a.versions)):
        if listed is not None and not listed:
            errs.append(FieldError.invalid(f"{path}.{member}", f.shown(listed), "must not be empty if specified"))
    for i, s in enumerate(a.strings or []):
        errs += _string_value(f"{path}.strings[{i}]", s)
    for i, v in enumerate(a.versions or []):
        errs += _version_value(f"{path}.versions[{i}]", v)
    if set_count == 0:
        errs.append(FieldError.invalid(path, "", "exactly one value must be specified"))
    elif set_count > 1:
        errs.append(FieldError.invalid(path, f.shown(a), "exactly one value must be specified"))
    return errs


def _string_value(path: str, value: str) -> list[FieldError]:
    return [d.too_long(path, _MAX_VALUE_LENGTH)] if len(value.encode()) > _MAX_VALUE_LENGTH else []


def _version_value(path: str, value: str) -> list[FieldError]:
    errs = []
    if not _SEMVER.match(value):
        errs.append(FieldError.invalid(path, value, "must be a string compatible with semver.org spec 2.0.0"))
    return errs + _string_value(path, value)


# --- counters ----------------------------------------------------------------------------------------------------


def _validate_counters(path: str, counters: dict[str, dra.Counter]) -> list[FieldError]:
    if not counters:
        return [FieldError.required(path)]
    if len(counters) > _MAX_COUNTERS:
        return [FieldError.too_many(path, len(counters), _MAX_COUNTERS)]
    errs: list[FieldError] = []
    for name, counter in counters.items():
        errs += f.dns_label(path, name)  # a bad key is reported on the map's path
        errs += validate_capacity(d.map_key_path(path, name, 63), dra.DeviceCapacity(value=counter.value), False)
    return errs


def _validate_counter_set(path: str, cs: dra.CounterSet) -> list[FieldError]:
    return f.required(f"{path}.name", cs.name, f.dns_label) + _validate_counters(f"{path}.counters", cs.counters)


def _validate_counter_consumption(path: str, c: dra.DeviceCounterConsumption) -> list[FieldError]:
    errs = f.required(f"{path}.counterSet", c.counter_set, f.dns_label)
    return errs + _validate_counters(f"{path}.counters", c.counters)
