"""Building one claim's AllocationResult from the devices the search picked (spec dra.md §3.10).

Results in allocation order, class and claim configuration with their provenance, the allocation's nodeSelector,
and the shareID of multi-allocatable devices: a UUID derived from the claim, request and device, never random.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phalanx.api import dra
from phalanx.api.models import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from phalanx.dra.capacity import Amount, format_amount
from phalanx.dra.inventory import DeviceInventory

__all__ = ["Pick", "RequestRef", "build_allocation", "share_id"]

_SHARE_NAMESPACE = uuid.UUID("6f0c3a52-0d1e-4c35-9d8e-2b1f7f3f6a10")


@dataclass(frozen=True, slots=True)
class RequestRef:
    """A request or chosen subrequest: its result name (``req`` or ``req/sub``), class and tolerations."""

    name: str
    request_index: int
    device_class: dra.DeviceClass
    tolerations: tuple[dra.DeviceToleration, ...]
    admin_access: bool


@dataclass(frozen=True, slots=True)
class Pick:
    """One device the search allocated for a request."""

    request: RequestRef
    device: int
    consumed: Mapping[str, Amount] | None  # multi-allocatable devices only
    share: str | None


def share_id(claim: dra.ResourceClaim, request: str, device: str, ordinal: int) -> str:
    """A stable UUID for one share of a multi-allocatable device."""
    meta = claim.metadata
    return str(uuid.uuid5(_SHARE_NAMESPACE, f"{meta.namespace}/{meta.name}/{meta.uid}/{request}/{device}/{ordinal}"))


def build_allocation(
    claim: dra.ResourceClaim,
    picks: Sequence[Pick],
    chosen: Sequence[RequestRef],
    inventory: DeviceInventory,
    node_name: str,
    binding_conditions: bool,
) -> dra.AllocationResult:
    """``chosen`` has one RequestRef per claim request (the selected subrequest for firstAvailable)."""
    results = [_result(p, inventory, binding_conditions) for p in picks]
    config = _class_config(chosen) + _claim_config(claim, chosen)
    return dra.AllocationResult(
        devices=dra.DeviceAllocationResult(results=results, config=config),
        node_selector=_node_selector(picks, inventory, node_name),
    )


def _result(pick: Pick, inventory: DeviceInventory, binding_conditions: bool) -> dra.DeviceRequestAllocationResult:
    info = inventory.devices[pick.device]
    out = dra.DeviceRequestAllocationResult(
        request=pick.request.name,
        driver=info.driver,
        pool=info.pool,
        device=info.name,
        admin_access=True if pick.request.admin_access else None,
        tolerations=list(pick.request.tolerations),
        share_id=pick.share,
        consumed_capacity={k: format_amount(a) for k, a in (pick.consumed or {}).items()},
    )
    if binding_conditions:
        out.binding_conditions = list(info.device.binding_conditions)
        out.binding_failure_conditions = list(info.device.binding_failure_conditions)
    return out


def _class_config(chosen: Sequence[RequestRef]) -> list[dra.DeviceAllocationConfiguration]:
    out: list[dra.DeviceAllocationConfiguration] = []
    ranges: dict[str, range] = {}
    for ref in chosen:
        name = ref.device_class.metadata.name
        if name in ranges:  # each class's configuration once; later requests only add their name
            for i in ranges[name]:
                out[i].requests.append(ref.name)
            continue
        start = len(out)
        for cfg in ref.device_class.spec.config:
            out.append(dra.DeviceAllocationConfiguration(source="FromClass", requests=[ref.name], opaque=cfg.opaque))
        ranges[name] = range(start, len(out))
    return out


def _claim_config(claim: dra.ResourceClaim, chosen: Sequence[RequestRef]) -> list[dra.DeviceAllocationConfiguration]:
    out: list[dra.DeviceAllocationConfiguration] = []
    for cfg in claim.spec.devices.config:
        if not cfg.requests:
            out.append(dra.DeviceAllocationConfiguration(source="FromClaim", requests=[], opaque=cfg.opaque))
            continue
        for request, ref in zip(claim.spec.devices.requests, chosen, strict=True):
            # v1.36 appends a configuration once per request it names (a config naming two requests twice).
            if request.name in cfg.requests or (request.first_available and ref.name in cfg.requests):
                out.append(
                    dra.DeviceAllocationConfiguration(
                        source="FromClaim", requests=list(cfg.requests), opaque=cfg.opaque
                    )
                )
    return out


def _node_selector(picks: Sequence[Pick], inventory: DeviceInventory, node_name: str) -> NodeSelector | None:
    term = NodeSelectorTerm(match_expressions=[], match_fields=[])
    for pick in picks:
        info = inventory.devices[pick.device]
        if info.node_name or info.binds_to_node:
            field = NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])
            return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_fields=[field])])
        if info.node_selector is not None and info.node_selector.node_selector_terms:
            source = info.node_selector.node_selector_terms[0]
            _merge(source.match_fields, term.match_fields)
            _merge(source.match_expressions, term.match_expressions)
    if term.match_fields or term.match_expressions:
        return NodeSelector(node_selector_terms=[term])
    return None


def _merge(source: list[NodeSelectorRequirement], into: list[NodeSelectorRequirement]) -> None:
    for req in source:
        if not any(r.key == req.key and r.operator == req.operator and set(r.values) == set(req.values) for r in into):
            into.append(req)
