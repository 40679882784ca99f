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
from phalanx.api.models import ObjectMeta, OwnerReference, Pod, PodGroup
from phalanx.api.quantity import parse_quantity
from phalanx.cluster.node_selector import terms_mask
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.dra.allocator import AllocationError
from phalanx.dra.claims import ClaimTracker, PodClaim, PodClaims, Suspension, claim_key
from phalanx.dra.features import DEFAULT_FEATURES, Features
from phalanx.scheduling.framework import Code, Status
from phalanx.scheduling.reasons import Reason

__all__ = ["EXTENDED_RESOURCE_ANNOTATION", "IMPLICIT_EXTENDED_PREFIX", "ClaimBinding", "ResourceObjects"]

EXTENDED_RESOURCE_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
_PLUGIN = "DynamicResources"
_CANNOT_ALLOCATE = Reason("cannot allocate all claims")
IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"


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
        self.extended: dict[str, str] = {}

    @classmethod
    def build(
        cls,
        nodes: NodeTable,
        objects: ResourceObjects | None,
        group_of: Callable[[PodInfo], PodGroup | None],
        features: Features = DEFAULT_FEATURES,
    ) -> ClaimBinding:
        """``features``: the DRA feature gates the allocator and the inventory honour."""
        objects = objects or ResourceObjects()
        tracker = ClaimTracker(nodes, objects.classes, objects.slices, (), objects.templates, features)
        for claim in objects.claims:
            key = f"{claim.metadata.namespace}/{claim.metadata.name}"
            tracker.add_claim(claim, objects.generated_from.get(key))
        binding = cls(tracker, group_of)
        binding._classes_changed(nodes)
        return binding

    def rebuild(
        self,
        nodes: NodeTable,
        classes: Iterable[dra.DeviceClass] | None = None,
        slices: Iterable[dra.ResourceSlice] | None = None,
    ) -> None:
        """Nodes, slices or classes changed: index the devices again, keeping claims and reservations."""
        self.tracker.rebuild(nodes, classes, slices)
        self._classes_changed(nodes)

    def _classes_changed(self, nodes: NodeTable) -> None:
        """The extended resources the DeviceClasses serve, for DynamicResources and NodeResourcesFit (none with
        the DRAExtendedResource gate off)."""
        classes = self.tracker.classes.values() if self.tracker.features.extended_resource else ()
        self.extended = extended_resource_classes(classes)
        nodes.dra_resources = frozenset(self.extended)

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

    def reserve(self, pi: PodInfo, row: int, nodes: NodeTable) -> Status:
        """DynamicResources' Reserve: allocate the pod's unallocated claims (and the claim for extended resources
        the node does not advertise) for node ``row`` and reserve every claim for it. UNSCHEDULABLE when a claim
        is missing or its devices were taken since Filter ran; ERROR on a fatal allocation error."""
        resolved = self.claims(pi)
        if resolved.waiting:
            return Status(Code.UNSCHEDULABLE, (Reason(resolved.waiting),), _PLUGIN)
        claims = list(resolved.claims)
        extended = self.extended_claim(pi, self.lacking(pi, nodes, row))
        if extended is not None:
            self.tracker.add_claim(extended)
            claims.append(PodClaim("", claim_key(pi.namespace, extended.metadata.name), None))
        if not claims:
            return Status()
        todo = self.tracker.unallocated(claims)
        results: list[dra.AllocationResult] = []
        if todo:
            try:
                found = self.tracker.allocator.allocate(row, todo)
            except AllocationError as exc:
                found, failed = None, Status(Code.ERROR, (), _PLUGIN, exc)
            else:
                failed = Status(Code.UNSCHEDULABLE, (_CANNOT_ALLOCATE,), _PLUGIN)
            if found is None:
                if extended is not None:
                    self.tracker.delete_claim(claims[-1].key)
                return failed
            results = found
        self.tracker.reserve(pi.pod, claims, results, pi.key)
        self.held[pi.key] = tuple(claims)
        self.priority[pi.key] = pi.priority
        return Status()

    def deallocate_unusable(self, pi: PodInfo, nodes: NodeTable) -> str:
        """PostFilter: when the pod fits nowhere, deallocate the first of its allocated claims that is unusable on
        some node and reserved by nobody but this pod, so the next attempt can allocate it where the pod fits.
        Returns the claim's name, or ''."""
        resolved = self.claims(pi)
        for pc in resolved.claims:
            record = self.tracker.records[pc.key]
            allocation = record.allocation
            if allocation is None or allocation.node_selector is None or record.assumed_by is not None:
                continue
            if terms_mask(allocation.node_selector.node_selector_terms, nodes).all():
                continue  # usable everywhere: deallocating it cannot help
            others = [r for r in record.reserved_for if not (r.resource == "pods" and r.name == pi.name)]
            if others:
                continue
            self.tracker.deallocate(pc.key)
            return record.claim.metadata.name
        return ""

    # --- extended resources served by DRA (DRAExtendedResource) ---------------------------------------------------

    def extended_requests(self, pi: PodInfo) -> list[tuple[str, int, int, str]]:
        """(resource, container index, count, class) for each container request of a resource a DeviceClass
        serves (regular containers; init containers' extended resources are not served by DRA here)."""
        if not self.extended:
            return []
        out = []
        for i, container in enumerate(pi.pod.spec.containers):
            # Extended resources cannot be overcommitted: a limit without a request is the request.
            wanted = {**container.resources.limits, **container.resources.requests}
            for name, quantity in sorted(wanted.items()):
                cls = self.extended.get(name)
                if cls is not None:
                    count = int(parse_quantity(quantity))
                    if count > 0:
                        out.append((name, i, count, cls))
        return out

    def lacking(self, pi: PodInfo, nodes: NodeTable, row: int) -> frozenset[str]:
        """The DRA-served resources the pod asks for that node ``row`` does not advertise."""
        out = set()
        for name, *_ in self.extended_requests(pi):
            col = nodes.resources.column.get(name)
            if col is None or nodes.allocatable[row, col] == 0:
                out.add(name)
        return frozenset(out)

    def extended_claim(self, pi: PodInfo, lacking: frozenset[str]) -> dra.ResourceClaim | None:
        """The claim the scheduler creates for the pod's extended-resource requests a node does not advertise:
        one ExactCount request ``container-<i>-request-<j>`` per container and resource."""
        if not lacking:
            return None
        requests = []
        per_container: dict[int, int] = {}
        for name, i, count, cls in self.extended_requests(pi):
            if name not in lacking:
                continue
            j = per_container.get(i, 0)
            per_container[i] = j + 1
            exact = dra.ExactDeviceRequest(device_class_name=cls, count=count)
            requests.append(dra.DeviceRequest(name=f"container-{i}-request-{j}", exactly=exact))
        owner = OwnerReference(api_version="v1", kind="Pod", name=pi.name, uid=pi.pod.metadata.uid, controller=True)
        meta = ObjectMeta(
            name=f"{pi.name[:40]}-extended-resources",
            namespace=pi.namespace,
            annotations={EXTENDED_RESOURCE_ANNOTATION: "true"},
            owner_references=[owner],
        )
        return dra.ResourceClaim(metadata=meta, spec=dra.ResourceClaimSpec(devices=dra.DeviceClaim(requests=requests)))

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


def extended_resource_classes(classes: Iterable[dra.DeviceClass]) -> dict[str, str]:
    """Extended resource name -> DeviceClass: each class's ``extendedResourceName`` (when two classes name the
    same resource, the most recently created wins, ties to the lexicographically first name) and its implicit
    ``deviceclass.resource.kubernetes.io/<class>``."""
    out: dict[str, str] = {}
    explicit: dict[str, dra.DeviceClass] = {}
    for cls in sorted(classes, key=lambda c: c.metadata.name):
        out[IMPLICIT_EXTENDED_PREFIX + cls.metadata.name] = cls.metadata.name
        name = cls.spec.extended_resource_name
        if not name:
            continue
        current = explicit.get(name)
        created = cls.metadata.creation_timestamp
        if current is None or (
            created is not None
            and (current.metadata.creation_timestamp is None or created > current.metadata.creation_timestamp)
        ):
            explicit[name] = cls
    out.update({name: cls.metadata.name for name, cls in explicit.items()})
    return out
