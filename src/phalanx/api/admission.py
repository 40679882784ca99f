"""Admission the API server applies before the scheduler sees an object: pod mutations, and the DRA admin-access
rule that needs Namespace objects.

RuntimeClass admission (``node.k8s.io/v1``): a pod naming a RuntimeClass gets the class's ``overhead.podFixed``
as its ``spec.overhead`` and the class's ``scheduling`` node selector and tolerations merged into its own. A
snapshot taken from a cluster already carries these; a hand-written one gets them here.

DRA admin access (``resource.k8s.io``, GA in v1.36): a claim or template whose request sets ``adminAccess: true``
is only admitted in a namespace labelled ``resource.kubernetes.io/admin-access: "true"``.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from phalanx.api.dra import ResourceClaim, ResourceClaimTemplate
from phalanx.api.errors import FieldError
from phalanx.api.models import Namespace, Pod, RuntimeClass

__all__ = ["ADMIN_ACCESS_LABEL", "AdmissionError", "RuntimeClasses", "admin_access_allowed", "admin_access_problems"]

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


class AdmissionError(ValueError):
    """The API server would have refused to create the pod."""


class RuntimeClasses:
    def __init__(self, classes: Iterable[RuntimeClass]) -> None:
        self.by_name = {rc.metadata.name: rc for rc in classes}

    def admit(self, pod: Pod) -> Pod:
        """The pod as RuntimeClass admission leaves it. A class missing from the snapshot leaves the pod as it is
        (the pod was admitted when the class existed)."""
        name = pod.spec.runtime_class_name
        rc = self.by_name.get(name) if name else None
        if rc is None:
            return pod
        spec = pod.spec
        overhead = dict(spec.overhead)
        if rc.overhead and rc.overhead.pod_fixed:
            if overhead and overhead != rc.overhead.pod_fixed:
                raise AdmissionError(
                    f"pod {pod.metadata.namespace}/{pod.metadata.name}: pod rejected: Pod's Overhead doesn't match "
                    f"RuntimeClass's defined Overhead"
                )
            overhead = dict(rc.overhead.pod_fixed)
        selector = dict(spec.node_selector)
        tolerations = list(spec.tolerations)
        if rc.scheduling:
            for key, value in rc.scheduling.node_selector.items():
                if selector.get(key, value) != value:
                    raise AdmissionError(
                        f"pod {pod.metadata.namespace}/{pod.metadata.name}: conflict: "
                        f"runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                        f"pod.spec.nodeSelector[{key}] = {selector[key]}"
                    )
                selector[key] = value
            tolerations += [t for t in rc.scheduling.tolerations if t not in tolerations]
        new_spec = msgspec.structs.replace(spec, overhead=overhead, node_selector=selector, tolerations=tolerations)
        return msgspec.structs.replace(pod, spec=new_spec)


def admin_access_problems(
    claim: ResourceClaim | ResourceClaimTemplate, namespaces: Iterable[Namespace]
) -> list[FieldError]:
    """Why the API server would refuse ``claim`` for its admin-access requests, or nothing. A namespace missing
    from ``namespaces`` refuses too: admin access bypasses device accounting, so it fails closed."""
    spec = claim.spec.spec if isinstance(claim, ResourceClaimTemplate) else claim.spec
    requested = [
        i for i, r in enumerate(spec.devices.requests) if r.exactly is not None and r.exactly.admin_access is True
    ]
    if not requested:
        return []
    # kube-apiserver names the first such request, without ``exactly`` in the path, for claims and templates alike.
    path = f"spec.devices.requests[{requested[0]}].adminAccess"
    name = claim.metadata.namespace
    labels = next((ns.metadata.labels for ns in namespaces if ns.metadata.name == name), None)
    if labels is None:
        return [
            FieldError.forbidden(path, f"namespace {name} is not in the snapshot, so admin access cannot be verified")
        ]
    if labels.get(ADMIN_ACCESS_LABEL) != "true":
        detail = f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
        return [FieldError.forbidden(path, detail)]
    return []


def admin_access_allowed(claim: ResourceClaim | ResourceClaimTemplate, namespaces: Iterable[Namespace]) -> bool:
    """Whether the API server admits ``claim``'s admin-access requests (true when it has none)."""
    return not admin_access_problems(claim, namespaces)
