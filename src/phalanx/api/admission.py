"""Admission mutations the API server applies to pods before the scheduler sees them.

RuntimeClass admission (``node.k8s.io/v1``): a pod naming a RuntimeClass gets the class's ``overhead.podFixed``
as its ``spec.overhead`` and the class's ``scheduling`` node selector and tolerations merged into its own. A
snapshot taken from a cluster already carries these; a hand-written one gets them here.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from phalanx.api.models import Pod, RuntimeClass

__all__ = ["AdmissionError", "RuntimeClasses"]


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
