"""DynamicResources PreBind: the ResourceClaim writes made before a pod (or a gang's members) is bound.

For each claim a pod reserved: the extended-resource claim the scheduler made is created (POST) and named in the
pod's ``status.extendedResourceClaimStatus``; a claim the engine allocated gets the finalizer
``resource.kubernetes.io/delete-protection``; then ``status.allocation`` (when allocated here) and the consumer
appended to ``status.reservedFor`` are written as a JSON merge patch with the resourceVersion as precondition. A 409
re-reads the claim and tries again while the write is still valid (not allocated elsewhere, not being deleted, room
in reservedFor); otherwise the write fails and the caller unreserves and requeues the pod.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.kube.api import Api, ApiError

__all__ = ["FINALIZER", "MAX_RESERVED_FOR", "ClaimWrite", "PreBindResult", "prebind", "same_allocation"]

log = logging.getLogger("phalanx.kube")
FINALIZER = "resource.kubernetes.io/delete-protection"
MAX_RESERVED_FOR = 256
_CONFLICTS = 5  # re-reads after a 409 before the write is given up (client-go's retry.DefaultBackoff has 4)


@dataclass(frozen=True)
class ClaimWrite:
    """One claim one pod reserved, as the engine decided it (plain data: it crosses to the writer process)."""

    pod: str  # the pod's key, namespace/name
    namespace: str
    name: str
    claim: dict[str, Any] | None  # the claim as last seen (its resourceVersion is the precondition); None: create
    consumer: dict[str, str]  # the ResourceClaimConsumerReference to append to reservedFor
    allocation: dict[str, Any] | None = None  # status.allocation to write (the engine allocated it in this cycle)
    create: dict[str, Any] | None = None  # the body to POST (the extended-resource claim)
    pod_status: dict[str, Any] | None = None  # the pod's status patch naming the created claim
    # The allocation the engine's PostFilter deallocated, which ``allocation`` replaces in the same write (only
    # while the claim still has it and no other consumer).
    replaces: dict[str, Any] | None = None


@dataclass
class PreBindResult:
    """Per pod: the error that failed its writes (absent: all written); and every claim as written last."""

    errors: dict[str, ApiError] = field(default_factory=dict)
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)  # namespace/name -> claim


Retrying = Callable[..., Any]


def prebind(api: Api, writes: Sequence[ClaimWrite], retrying: Retrying) -> PreBindResult:
    """Make ``writes`` in order. A pod whose write fails is skipped from then on; a claim written once in the batch
    (a PodGroup claim shared by every member) is the base of the next write to it, so it costs no extra 409."""
    out = PreBindResult()
    for w in writes:
        if w.pod in out.errors:
            continue
        key = f"{w.namespace}/{w.name}"
        try:
            out.claims[key] = _write(api, w, out.claims.get(key) or w.claim, retrying)
        except ApiError as exc:
            log.warning("PreBind of %s: resourceclaim %s: %s", w.pod, key, exc)
            out.errors[w.pod] = exc
    return out


def _write(api: Api, w: ClaimWrite, claim: dict[str, Any] | None, retrying: Retrying) -> dict[str, Any]:
    if claim is None:
        claim = _create(api, w, retrying)
    for _ in range(_CONFLICTS):
        problem = _invalid(claim, w)
        if problem:
            raise ApiError(409, f'resourceclaim "{w.name}": {problem}')
        try:
            return _update(api, w, claim, retrying)
        except ApiError as exc:
            if exc.code != 409:
                raise
        claim = retrying(api.get_resource_claim, w.namespace, w.name)
    raise ApiError(409, f'resourceclaim "{w.name}": still conflicting after {_CONFLICTS} attempts')


def _create(api: Api, w: ClaimWrite, retrying: Retrying) -> dict[str, Any]:
    """POST the extended-resource claim (an existing one from an earlier attempt for the same pod is reused) and
    name it in the pod's status."""
    assert w.create is not None
    try:
        claim: dict[str, Any] = retrying(api.create_resource_claim, w.namespace, w.create)
    except ApiError as exc:
        if exc.code != 409:
            raise
        claim = retrying(api.get_resource_claim, w.namespace, w.name)
        owners = [o.get("uid") for o in (claim.get("metadata") or {}).get("ownerReferences") or []]
        if w.consumer.get("uid") not in owners:
            raise ApiError(409, f'resourceclaim "{w.name}" exists and belongs to another pod') from exc
    if w.pod_status is not None:
        retrying(api.patch_pod_status, w.namespace, w.pod.split("/", 1)[1], {"status": w.pod_status})
    return claim


def _invalid(claim: dict[str, Any], w: ClaimWrite) -> str:
    """Why the write can no longer be made on ``claim`` as it is now, or ''."""
    md = claim.get("metadata") or {}
    status = claim.get("status") or {}
    if md.get("deletionTimestamp"):
        return "is being deleted"
    current = status.get("allocation")
    reserved = status.get("reservedFor") or []
    if _replacing(w, current):
        others = [r for r in reserved if not _reserved([r], w.consumer)]
        return "is in use by another consumer" if others else ""
    if w.allocation is not None and current is not None and not same_allocation(current, w.allocation):
        return "was allocated elsewhere in the meantime"
    if w.allocation is None and current is None:
        return "is no longer allocated"
    if not _reserved(reserved, w.consumer) and len(reserved) >= MAX_RESERVED_FOR:
        return f"reservedFor is full ({MAX_RESERVED_FOR} consumers)"
    return ""


def _update(api: Api, w: ClaimWrite, claim: dict[str, Any], retrying: Retrying) -> dict[str, Any]:
    """The finalizer (when allocating), then allocation and reservedFor, each with a resourceVersion precondition."""
    md = claim.get("metadata") or {}
    status = claim.get("status") or {}
    replacing = _replacing(w, status.get("allocation"))
    allocate = w.allocation is not None and (status.get("allocation") is None or replacing)
    finalizers = list(md.get("finalizers") or [])
    if allocate and FINALIZER not in finalizers:
        patch = {"metadata": {"resourceVersion": md.get("resourceVersion"), "finalizers": [*finalizers, FINALIZER]}}
        claim = retrying(api.patch_resource_claim, w.namespace, w.name, patch)
        md = claim.get("metadata") or {}
    reserved = [] if replacing else list(status.get("reservedFor") or [])  # PostFilter's deallocation clears it
    if not allocate and _reserved(reserved, w.consumer):
        return claim  # already written (another member of the gang, or an answer lost on the way back)
    new_status: dict[str, Any] = {
        "reservedFor": [*reserved, w.consumer] if not _reserved(reserved, w.consumer) else reserved
    }
    if allocate:
        new_status["allocation"] = w.allocation
    patch = {"metadata": {"resourceVersion": md.get("resourceVersion")}, "status": new_status}
    result: dict[str, Any] = retrying(api.patch_resource_claim, w.namespace, w.name, patch, True)
    return result


def _replacing(w: ClaimWrite, current: dict[str, Any] | None) -> bool:
    """The claim still has the allocation the engine deallocated (PostFilter) and ``w`` allocates anew."""
    return w.replaces is not None and current is not None and same_allocation(current, w.replaces)


def _reserved(reserved: list[dict[str, Any]], consumer: dict[str, str]) -> bool:
    """reservedFor is a map keyed by uid; a PodGroup reference is matched by name, as pods know no PodGroup uid."""
    for r in reserved:
        if r.get("resource") != consumer.get("resource") or r.get("apiGroup", "") != consumer.get("apiGroup", ""):
            continue
        if consumer.get("resource") == "pods" and r.get("uid") == consumer.get("uid"):
            return True
        if consumer.get("resource") != "pods" and r.get("name") == consumer.get("name"):
            return True
    return False


def same_allocation(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same devices and node selector (allocationTimestamp is the writer's clock, not the decision)."""
    return {k: v for k, v in a.items() if k != "allocationTimestamp"} == {
        k: v for k, v in b.items() if k != "allocationTimestamp"
    }
