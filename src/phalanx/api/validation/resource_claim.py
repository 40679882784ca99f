"""ResourceClaim and ResourceClaimTemplate validation (``resource.k8s.io/v1``, spec dra.md §1.3-§1.4).

Both share the ResourceClaimSpec rules: requests (``exactly`` or ``firstAvailable``), constraints and
configuration, with every request reference checked against the claim's requests. A claim's status (allocation
result, reservedFor, device status) is checked as the status update that wrote it would have been.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.api import dra, names
from phalanx.api.dra_defaults import ALL, ALLOCATION_MODES, EXACT_COUNT
from phalanx.api.errors import FieldError
from phalanx.api.validation import dra_fields as d
from phalanx.api.validation import fields as f
from phalanx.api.validation.affinity import _validate_node_selector as validate_node_selector
from phalanx.api.validation.capacity_policy import parsed
from phalanx.api.validation.meta import validate_labels, validate_object_meta

__all__ = [
    "MAX_REQUESTS",
    "MAX_RESERVED_FOR",
    "request_names",
    "validate_claim_spec",
    "validate_resource_claim",
    "validate_resource_claim_template",
]

MAX_REQUESTS = 32  # also the most devices one allocation result may hold
MAX_RESULTS = 32
MAX_RESERVED_FOR = 256
_MAX_SUBREQUESTS = 8
_MAX_CONSTRAINTS = 32
_MAX_CONFIG = 32
_MAX_DEVICE_CONDITIONS = 8
_REF = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
_ALLOCATION_SOURCES = ("FromClaim", "FromClass")

# request name -> its subrequest names (None without firstAvailable); what "req" and "req/sub" may refer to.
RequestNames = dict[str, frozenset[str] | None]


def validate_resource_claim(claim: dra.ResourceClaim) -> list[FieldError]:
    """Every problem with a ResourceClaim: its spec as on create, its status as on the status update."""
    errs = validate_object_meta(claim.metadata, namespaced=True)
    errs += validate_claim_spec("spec", claim.spec)
    return errs + _validate_status(claim.status, request_names(claim.spec))


def validate_resource_claim_template(template: dra.ResourceClaimTemplate) -> list[FieldError]:
    """Every problem with a ResourceClaimTemplate, as kube-apiserver reports them on create."""
    errs = validate_object_meta(template.metadata, namespaced=True)
    meta = template.spec.metadata
    # Only labels and annotations may be given: the rest of a generated claim's metadata is the controller's.
    errs += validate_labels(meta.labels, "spec.metadata.labels")
    for k in meta.annotations:
        # Keys are checked lower-cased but reported as written, as for any object's annotations.
        errs += [
            FieldError.invalid("spec.metadata.annotations", k, msg) for msg in names.check_qualified_name(k.lower())
        ]
    return errs + validate_claim_spec("spec.spec", template.spec.spec)


def request_names(spec: dra.ResourceClaimSpec) -> RequestNames:
    return {
        r.name: frozenset(s.name for s in r.first_available) if r.first_available else None
        for r in spec.devices.requests
    }


def validate_claim_spec(path: str, spec: dra.ResourceClaimSpec) -> list[FieldError]:
    """``ResourceClaimSpec``: requests, then constraints, then configuration."""
    at = f"{path}.devices"
    devices = spec.devices
    known = request_names(spec)
    errs = d.validate_set(f"{at}.requests", devices.requests, MAX_REQUESTS, _validate_request, key=lambda r: r.name)
    errs += d.validate_set(f"{at}.constraints", devices.constraints, _MAX_CONSTRAINTS, _constraint_check(known))
    errs += d.validate_set(f"{at}.config", devices.config, _MAX_CONFIG, _config_check(known))
    return errs


# --- requests ----------------------------------------------------------------------------------------------------


def _validate_request(path: str, request: dra.DeviceRequest) -> list[FieldError]:
    errs = f.required(f"{path}.name", request.name, f.dns_label)
    if request.exactly is not None and request.first_available:
        detail = "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
        errs.append(FieldError.invalid(path, None, detail))
    elif request.exactly is not None:
        errs += _validate_exact(f"{path}.exactly", request.exactly)
    elif request.first_available:
        errs += d.validate_set(
            f"{path}.firstAvailable",
            request.first_available,
            _MAX_SUBREQUESTS,
            _validate_subrequest,
            key=lambda s: s.name,
        )
    else:
        errs.append(FieldError.required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    return errs


def _validate_exact(path: str, exact: dra.ExactDeviceRequest) -> list[FieldError]:
    errs = f.required(f"{path}.deviceClassName", exact.device_class_name, f.dns_subdomain)
    errs += d.validate_selectors(f"{path}.selectors", exact.selectors)
    errs += _validate_allocation_mode(path, exact.allocation_mode, exact.count)
    errs += d.validate_tolerations(f"{path}.tolerations", exact.tolerations)
    return errs + _validate_capacity_requests(f"{path}.capacity", exact.capacity)


def _validate_subrequest(path: str, sub: dra.DeviceSubRequest) -> list[FieldError]:
    errs = f.required(f"{path}.name", sub.name, f.dns_label)
    errs += f.required(f"{path}.deviceClassName", sub.device_class_name, f.dns_subdomain)
    errs += d.validate_selectors(f"{path}.selectors", sub.selectors)
    errs += _validate_allocation_mode(path, sub.allocation_mode, sub.count)
    errs += d.validate_tolerations(f"{path}.tolerations", sub.tolerations)
    return errs + _validate_capacity_requests(f"{path}.capacity", sub.capacity)


def _validate_allocation_mode(path: str, mode: str, count: int) -> list[FieldError]:
    mode = mode or EXACT_COUNT  # defaulted before validation, as is count (0 -> 1 for ExactCount)
    if mode == ALL:
        if count != 0:
            return [FieldError.invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")]
        return []
    if mode == EXACT_COUNT:
        if count < 0:
            return [FieldError.invalid(f"{path}.count", count, "must be greater than zero")]
        return f.int64(f"{path}.count", count)
    return [FieldError.unsupported(f"{path}.allocationMode", mode, list(ALLOCATION_MODES))]


def _validate_capacity_requests(path: str, capacity: dra.CapacityRequirements | None) -> list[FieldError]:
    if capacity is None:
        return []
    at = f"{path}.requests"
    errs = d.validate_map_keys(at, capacity.requests)
    for name, raw in capacity.requests.items():
        key_path = d.map_key_path(at, name)
        value = parsed(key_path, raw, errs)
        if value is not None and value < 0:
            errs.append(FieldError.invalid(key_path, str(raw), "must be greater than or equal to 0"))
    return errs


# --- references, constraints, configuration ----------------------------------------------------------------------


def _validate_ref(path: str, ref: str, known: RequestNames) -> list[FieldError]:
    """A reference to ``request`` or ``request/subrequest`` of this claim."""
    segments = ref.split("/")
    if len(segments) > 2:
        return [FieldError.invalid(path, ref, _REF)]
    errs: list[FieldError] = []
    for segment in segments:
        errs += f.dns_label(path, segment)
    subs = known.get(segments[0], frozenset())
    found = segments[0] in known and (len(segments) == 1 or (subs is not None and segments[1] in subs))
    if not found:
        errs.append(FieldError.invalid(path, ref, _REF))
    return errs


def _validate_refs(path: str, refs: list[str], known: RequestNames) -> list[FieldError]:
    return d.validate_set(path, refs, MAX_REQUESTS, lambda at, ref: _validate_ref(at, ref, known), key=lambda r: r)


def _constraint_check(known: RequestNames) -> Callable[[str, dra.DeviceConstraint], list[FieldError]]:
    def check(path: str, constraint: dra.DeviceConstraint) -> list[FieldError]:
        errs = _validate_refs(f"{path}.requests", constraint.requests, known)
        match, distinct = constraint.match_attribute, constraint.distinct_attribute
        if match is not None and distinct is not None:
            errs += f.union(path, {"matchAttribute": True, "distinctAttribute": True})
        elif match is not None:
            errs += d.validate_full_qualified_name(f"{path}.matchAttribute", match)
        elif distinct is not None:
            errs += d.validate_full_qualified_name(f"{path}.distinctAttribute", distinct)
        else:
            # kube-apiserver's wording, "multiple fields are set" included, though none is.
            detail = 'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set'
            errs.append(FieldError.required(path, detail))
        return errs

    return check


def _config_check(known: RequestNames) -> Callable[[str, dra.DeviceClaimConfiguration], list[FieldError]]:
    def check(path: str, config: dra.DeviceClaimConfiguration) -> list[FieldError]:
        return _validate_refs(f"{path}.requests", config.requests, known) + d.validate_opaque(path, config.opaque)

    return check


# --- status ------------------------------------------------------------------------------------------------------


def _validate_status(status: dra.ResourceClaimStatus, known: RequestNames) -> list[FieldError]:
    errs = d.validate_set(
        "status.reservedFor", status.reserved_for, MAX_RESERVED_FOR, _validate_consumer, key=lambda r: r.uid
    )
    allocated = _allocated_devices(status.allocation)
    errs += d.validate_set(
        "status.devices",
        status.devices,
        -1,
        lambda path, dev: _validate_device_status(path, dev, allocated),
        key=_device_id,
    )
    if status.reserved_for and status.allocation is None:
        errs.append(FieldError.forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
    if status.allocation is not None:
        errs += _validate_allocation("status.allocation", status.allocation, known)
    return errs


def _validate_consumer(path: str, ref: dra.ResourceClaimConsumerReference) -> list[FieldError]:
    errs = []
    for name, value in (("resource", ref.resource), ("name", ref.name), ("uid", ref.uid)):
        if not value:
            errs.append(FieldError.required(f"{path}.{name}"))
    return errs


def _allocated_devices(allocation: dra.AllocationResult | None) -> set[tuple[str, str, str, str | None]]:
    results = allocation.devices.results if allocation is not None else []
    return {(r.driver, r.pool, r.device, r.share_id) for r in results}


def _validate_allocation(path: str, allocation: dra.AllocationResult, known: RequestNames) -> list[FieldError]:
    at = f"{path}.devices"

    def result(rpath: str, r: dra.DeviceRequestAllocationResult) -> list[FieldError]:
        return _validate_result(rpath, r, known)

    def config(cpath: str, c: dra.DeviceAllocationConfiguration) -> list[FieldError]:
        errs = (
            f.enum(f"{cpath}.source", c.source, _ALLOCATION_SOURCES)
            if c.source
            else [FieldError.required(f"{cpath}.source")]
        )
        return errs + _validate_refs(f"{cpath}.requests", c.requests, known) + d.validate_opaque(cpath, c.opaque)

    errs = d.validate_set(f"{at}.results", allocation.devices.results, MAX_RESULTS, result)
    errs += d.validate_set(f"{at}.config", allocation.devices.config, 2 * _MAX_CONFIG, config)
    if allocation.node_selector is not None:
        errs += validate_node_selector(allocation.node_selector, f"{path}.nodeSelector")
    return errs


def _validate_result(path: str, r: dra.DeviceRequestAllocationResult, known: RequestNames) -> list[FieldError]:
    errs = _validate_ref(f"{path}.request", r.request, known)
    errs += d.validate_driver_name(f"{path}.driver", r.driver)
    errs += d.validate_pool_name(f"{path}.pool", r.pool)
    errs += f.required(f"{path}.device", r.device, f.dns_label)
    errs += d.validate_binding_conditions(path, r.binding_conditions, r.binding_failure_conditions)
    errs += d.validate_tolerations(f"{path}.tolerations", r.tolerations)
    if r.share_id is not None:
        errs += _validate_uid(f"{path}.shareID", r.share_id)
    return errs


def _validate_uid(path: str, uid: str) -> list[FieldError]:
    parts = uid.split("-")
    hexdigits = set("0123456789abcdefABCDEF")
    shaped = [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(set(p) <= hexdigits for p in parts)
    if not shaped or uid != uid.lower():
        detail = (
            "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase "
            "hexadecimal characters"
        )
        return [FieldError.invalid(path, uid, detail)]
    return []


def _validate_device_status(
    path: str, dev: dra.AllocatedDeviceStatus, allocated: set[tuple[str, str, str, str | None]]
) -> list[FieldError]:
    errs = d.validate_driver_name(f"{path}.driver", dev.driver)
    errs += d.validate_pool_name(f"{path}.pool", dev.pool)
    errs += f.required(f"{path}.device", dev.device, f.dns_label)
    if dev.share_id is not None:
        errs += _validate_uid(f"{path}.shareID", dev.share_id)
    if (dev.driver, dev.pool, dev.device, dev.share_id) not in allocated:
        errs.append(FieldError.invalid(path, _device_id(dev), "must be an allocated device in the claim"))
    if len(dev.conditions) > _MAX_DEVICE_CONDITIONS:
        errs.append(FieldError.too_many(f"{path}.conditions", len(dev.conditions), _MAX_DEVICE_CONDITIONS))
    return errs


def _device_id(dev: dra.AllocatedDeviceStatus) -> str:
    """``driver/pool/device``, with ``/shareID`` for one share of a multi-allocatable device."""
    return "/".join([dev.driver, dev.pool, dev.device] + ([dev.share_id] if dev.share_id else []))
