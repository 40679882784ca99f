"""A trace job's GPUs requested through DRA: the trace fields (``dra``, ``deviceClass``, ``gpuProduct``,
``gpuSelector``, ``matchAttribute``, ``sameNumaNode``), and the ResourceClaimTemplate each of the job's pods
claims its GPUs from. Formats are documented in docs/simulate.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.api import dra
from phalanx.api.models import ObjectMeta, ResourceClaimRef
from phalanx.sim.devices import NUMA_NODE, cel_string
from phalanx.sim.inputs import Fields

__all__ = ["CLAIM_FIELDS", "CLAIM_NAME", "GpuClaim", "claim_template", "parse_claim", "pod_claims"]

CLAIM_NAME = "gpus"  # the pod's spec.resourceClaims entry, and the template's request
CLAIM_FIELDS = frozenset({"dra", "deviceClass", "gpuProduct", "gpuSelector", "matchAttribute", "sameNumaNode"})
_PRODUCT_DRIVER = "gpu.nvidia.com"  # the driver whose productName attribute gpuProduct compares


@dataclass(frozen=True)
class GpuClaim:
    """Each pod's GPUs come from one claim: ``count`` devices of ``device_class``, optionally only of
    ``product``, matching the CEL ``selector``, all with the same value of ``match_attribute``."""

    device_class: str = "gpu.nvidia.com"
    product: str = ""
    selector: str = ""
    match_attribute: str = ""


def parse_claim(row: Mapping[str, Any], fields: Fields, at: str = "", line: int | None = None) -> GpuClaim | None:
    """The claim a trace row asks for, or None (its GPUs are the ``nvidia.com/gpu`` extended resource). Any
    of the DRA fields implies ``dra``; ``dra: false`` with one of them is a contradiction. Problems go to
    ``fields``, at ``at`` + the column; names and selectors are checked on the template (``trace``)."""
    given = {k: row[k] for k in sorted(CLAIM_FIELDS - {"dra", "sameNumaNode"}) if not _absent(row.get(k))}
    if _bool(row.get("sameNumaNode"), f"{at}sameNumaNode", fields, line):
        given["sameNumaNode"] = True
    flag = _bool(row.get("dra"), f"{at}dra", fields, line)
    if not given and not flag:
        return None
    if flag is False and row.get("dra") not in (None, ""):
        detail = f"must not be false: {', '.join(given)} ask for a DRA claim"
        fields.invalid(f"{at}dra", row["dra"], detail, line)
    match = fields.text(given.get("matchAttribute"), f"{at}matchAttribute", "", line)
    if given.get("sameNumaNode"):
        if match and match != NUMA_NODE:
            fields.invalid(f"{at}matchAttribute", match, f"must be {NUMA_NODE} (or unset) with sameNumaNode", line)
        match = NUMA_NODE
    return GpuClaim(
        fields.text(given.get("deviceClass"), f"{at}deviceClass", GpuClaim.device_class, line),
        fields.text(given.get("gpuProduct"), f"{at}gpuProduct", "", line),
        fields.text(given.get("gpuSelector"), f"{at}gpuSelector", "", line),
        match,
    )


def _absent(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _bool(raw: Any, path: str, fields: Fields, line: int | None) -> bool:
    """A YAML boolean, or in CSV ``true``/``false``; ``1`` and ``0`` are not booleans (in Python they equal them)."""
    if _absent(raw) or raw is False or (isinstance(raw, str) and raw.strip() in ("false", "False")):
        return False
    if raw is True or (isinstance(raw, str) and raw.strip() in ("true", "True")):
        return True
    fields.invalid(path, raw, "must be true or false", line)
    return False


def claim_template(name: str, namespace: str, count: int, claim: GpuClaim) -> dra.ResourceClaimTemplate:
    """The template ``name`` a job's pods generate their claims from: one request for ``count`` devices."""
    selectors = []
    if claim.product:
        attribute = f"device.attributes[{cel_string(_PRODUCT_DRIVER)}].productName"
        product = f"{attribute} == {cel_string(claim.product)}"  # the product is data, never CEL
        selectors.append(dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=product)))
    if claim.selector:
        selectors.append(dra.DeviceSelector(cel=dra.CELDeviceSelector(expression=claim.selector)))
    request = dra.DeviceRequest(
        name=CLAIM_NAME,
        exactly=dra.ExactDeviceRequest(device_class_name=claim.device_class, count=count, selectors=selectors),
    )
    constraints = (
        [dra.DeviceConstraint(requests=[CLAIM_NAME], match_attribute=claim.match_attribute)]
        if claim.match_attribute
        else []
    )
    return dra.ResourceClaimTemplate(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=dra.ResourceClaimTemplateSpec(
            spec=dra.ResourceClaimSpec(devices=dra.DeviceClaim(requests=[request], constraints=constraints))
        ),
    )


def pod_claims(template: str) -> tuple[list[dict[str, Any]], list[ResourceClaimRef]]:
    """The pod's ``spec.resourceClaims`` entry naming ``template``, and its container's ``resources.claims``."""
    return [{"name": CLAIM_NAME, "resourceClaimTemplateName": template}], [ResourceClaimRef(name=CLAIM_NAME)]
