"""The engine's side of DRA: PreEnqueue (every claim exists), Reserve/Unreserve (tentative allocations), bind
(allocations become final) and pod deletion (claims released), over the one ClaimTracker of the engine.

The DynamicResources plugin reads the same object for Filter and Score, so what a cycle reserves is what the next
pod's Filter sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from phalanx.api import dra
from phalanx.api.models import Pod, PodGroup
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.dra.allocator import AllocationError
from phalanx.dra.claims import ClaimTracker, PodClaim, PodClaims

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
        return ""

    def unreserve(self, pi: PodInfo) -> None:
        claims = self.held.pop(pi.key, None)
        if claims is not None:
            self.tracker.unreserve(pi.pod, claims, pi.key)

    def commit(self, pi: PodInfo) -> None:
        claims = self.held.get(pi.key)
        if claims is not None:
            self.tracker.commit(claims, pi.key)

    def release(self, pod: Pod, key: str) -> None:
        """The pod is gone (deleted, finished, evicted): its claims no longer hold devices for it."""
        claims = self.held.pop(key, None)
        if claims is not None:
            self.tracker.release(pod, claims)

    def release_group(self, namespace: str, name: str) -> None:
        self.tracker.release_group(namespace, name)
