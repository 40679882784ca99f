"""The engine's side of DRA: PreEnqueue (every claim exists), Reserve/Unreserve (tentative allocations), bind
(allocations become final) and pod deletion (claims released), over the one ClaimTracker of the engine.

The DynamicResources plugin reads the same object for Filter and Score, so what a cycle reserves is what the next
pod's Filter sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from phalanx.api import dra
from phalanx.api.models import Pod, PodGroup
from phalanx.cluster.node_selector import terms_mask
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.dra.allocator import AllocationError
from phalanx.dra.claims import ClaimTracker, PodClaim, PodClaims, Suspension

__all__ = ["ClaimBinding", "ResourceObjects"]


class ResourceObjects:
    """The resource.k8s.io objects of a snapshot (claims already include the generated ones)."""

    def __init__(
        self,
        classes: Iterable[dra.DeviceClass] = (),
        slices: Iterable[dra.ResourceSlice] = (),
        claims: Iterable[dra.ResourceClaim] = (),
        templates: Iterable[dra.ResourceClaimTemplate] = (),
        generated_from: dict[str, str] | None = None,
    ) -> None:
        self.classes = list(classes)
        self.slices = list(slices)
        self.claims = list(claims)
        self.templates = list(templates)
        self.generated_from = generated_from or {}


class ClaimBinding:
    """Claims per pod through one scheduling attempt: resolved, allocated on the chosen node, bound or dropped."""

    def __init__(self, tracker: ClaimTracker, group_of: Callable[[PodInfo], PodGroup | None]) -> None:
        self.tracker = tracker
        self.group_of = group_of
        self.held: dict[str, tuple[PodClaim, ...]] = {}  # pod key -> claims the pod reserved
        self.priority: dict[str, int] = {}  # pod key -> priority of the pods in ``held`` (preemption asks)

    @classmethod
    def build(
        cls, nodes: NodeTable, objects: ResourceObjects | None, group_of: Callable[[PodInfo], PodGroup | None]
    ) -> ClaimBinding:
        objects = objects or ResourceObjects()
        tracker = ClaimTracker(nodes, objects.classes, objects.slices, (), objects.templates)
        for claim in objects.claims:
            key = f"{claim.metadata.namespace}/{claim.metadata.name}"
            tracker.add_claim(claim, objects.generated_from.get(key))
        return cls(tracker, group_of)

    def claims(self, pi: PodInfo) -> PodClaims:
        return self.tracker.resolve(pi.pod, self.group_of(pi))

    def waiting(self, pi: PodInfo) -> str:
        """PreEnqueue: why the pod cannot be tried yet (a claim missing or not generated), or ''."""
        if not pi.pod.spec.resource_claims:
            return ""
        return self.claims(pi).waiting

    def adopt(self, pi: PodInfo) -> None:
        """A pod already bound in the input holds its claims (its consumer entry is added when missing)."""
        resolved = self.claims(pi)
        if resolved.waiting or not resolved.claims:
            return
        self.tracker.reserve(pi.pod, resolved.claims, [], pi.key, allocate=False)
        self.held[pi.key] = resolved.claims
        self.priority[pi.key] = pi.priority

    def reserve(self, pi: PodInfo, row: int) -> str:
        """Allocate the pod's unallocated claims for node ``row`` and reserve every claim for it. Returns '' or
        why Reserve failed (a claim taken since Filter ran, or a fatal allocation error)."""
        resolved = self.claims(pi)
        if resolved.waiting:
            return resolved.waiting
        if not resolved.claims:
            return ""
        todo = self.tracker.unallocated(resolved.claims)
        results: list[dra.AllocationResult] = []
        if todo:
            try:
                found = self.tracker.allocator.allocate(row, todo)
            except AllocationError as exc:
                return str(exc)
            if found is None:
                return "cannot allocate all claims"
            results = found
        self.tracker.reserve(pi.pod, resolved.claims, results, pi.key)
        self.held[pi.key] = resolved.claims
        self.priority[pi.key] = pi.priority
        return ""

    def unreserve(self, pi: PodInfo) -> None:
        claims = self.held.pop(pi.key, None)
        self.priority.pop(pi.key, None)
        if claims is not None:
            self.tracker.unreserve(pi.pod, claims, pi.key)

    def commit(self, pi: PodInfo) -> None:
        claims = self.held.get(pi.key)
        if claims is not None:
            self.tracker.commit(claims, pi.key)

    def release(self, pod: Pod, key: str) -> None:
        """The pod is gone (deleted, finished, evicted): its claims no longer hold devices for it."""
        claims = self.held.pop(key, None)
        self.priority.pop(key, None)
        if claims is not None:
            self.tracker.release(pod, claims)

    def suspend(self, pi: PodInfo) -> Suspension:
        """Preemption's what-if removal of a placed pod: its claims as ``release`` would leave them, undone by
        ``resume``."""
        claims = self.held.get(pi.key)
        return self.tracker.suspend(pi.pod, claims) if claims is not None else Suspension()

    def resume(self, token: Suspension) -> None:
        self.tracker.resume(token)

    def freeable(self, below: int) -> list[dra.AllocationResult]:
        """Allocations that evicting pods of priority < ``below`` could free: every consumer in reservedFor is
        such a pod holding the claim here. A PodGroup consumer, or one this engine does not know, keeps the
        devices (a superset of what preemption frees: it still checks each node for real)."""
        out: list[dra.AllocationResult] = []
        for record in self.tracker.records.values():
            if record.allocation is None or not record.reserved_for:
                continue
            ns = record.claim.metadata.namespace
            keys = [f"{ns}/{r.name}" for r in record.reserved_for if r.resource == "pods" and not r.api_group]
            if len(keys) == len(record.reserved_for) and all(self.priority.get(k, below) < below for k in keys):
                out.append(record.allocation)
        return out

    def release_group(self, namespace: str, name: str) -> None:
        self.tracker.release_group(namespace, name)

    def group_claim_scopes(self, pi: PodInfo, nodes: NodeTable, limit: int) -> list[npt.NDArray[np.bool_]]:
        """Where the PodGroup claims ``pi`` shares with its group could be allocated: the distinct node sets an
        allocation's nodeSelector would allow (for a multi-host device, e.g. the nodes of one NVLink clique), in
        node order, at most ``limit``. Empty when the group has no unallocated group claim, or when every
        allocation would be usable everywhere (nothing to choose)."""
        resolved = self.claims(pi)
        keys = list(dict.fromkeys(pc.key for pc in resolved.claims if pc.group is not None))
        todo = [r.claim for k in keys if (r := self.tracker.records[k]).allocation is None]
        if not todo:
            return []
        seen: set[bytes] = set()
        scopes: list[npt.NDArray[np.bool_]] = []
        for row in range(len(nodes)):
            try:
                found = self.tracker.allocator.allocate(row, todo)
            except AllocationError:
                return []
            if found is None:
                continue
            mask = np.ones(len(nodes), dtype=bool)
            for result in found:
                if result.node_selector is not None:
                    mask &= terms_mask(result.node_selector.node_selector_terms, nodes)
            key = np.packbits(mask).tobytes()
            if key in seen or mask.all():
                continue
            seen.add(key)
            scopes.append(mask)
            if len(scopes) >= limit:
                break
        return scopes
