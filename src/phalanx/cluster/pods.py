"""PodInfo: everything the scheduler needs from a pod, computed once when the pod is added.

The scheduling signature groups pods whose node-static filters and scores (taints, node affinity, node name)
are identical, so a gang's identical members, or a Deployment's replicas, share one evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import msgspec
import numpy as np
import numpy.typing as npt

from phalanx.api.models import NodeAffinity, Pod, Toleration
from phalanx.cluster.nodes import HostPort
from phalanx.cluster.resources import pod_requests

__all__ = ["PodInfo", "pod_key"]

_EPOCH = 0.0


def pod_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(eq=False, slots=True)
class PodInfo:
    pod: Pod
    key: str
    priority: int
    requests: dict[str, int]
    nonzero_cpu: int
    nonzero_memory: int
    host_ports: tuple[HostPort, ...]
    signature: bytes
    shape: bytes  # signature plus requests: pods with equal shapes get equal filter and score results
    created: float
    # resource columns and amounts (filled when the pod meets a node table)
    req_cols: npt.NDArray[np.intp]
    req_vals: npt.NDArray[np.int64]
    # Pods with equal keys have the same inter-pod (anti-)affinity terms in the same namespace (None: no terms).
    affinity_key: bytes | None = None

    @classmethod
    def of(cls, pod: Pod, priority: int) -> PodInfo:
        r = pod_requests(pod)
        ports = tuple(
            (
                p.protocol or "TCP",
                p.host_ip or "0.0.0.0",
                p.host_port or (p.container_port if pod.spec.host_network else 0),
            )
            # Regular init containers have exited before the pod runs; only sidecars keep their ports.
            for c in (*(i for i in pod.spec.init_containers if i.restart_policy == "Always"), *pod.spec.containers)
            for p in c.ports
            if p.host_port or pod.spec.host_network
        )
        node_affinity: NodeAffinity | None = pod.spec.affinity.node_affinity if pod.spec.affinity else None
        signature = msgspec.json.encode(
            (
                sorted(pod.spec.node_selector.items()),
                node_affinity,
                sorted(_toleration_key(t) for t in pod.spec.tolerations),
                pod.spec.node_name,
                sorted(ports),
            )
        )
        ts: datetime | None = pod.metadata.creation_timestamp
        return cls(
            pod=pod,
            key=pod_key(pod.metadata.namespace, pod.metadata.name),
            priority=priority,
            requests=r.requests,
            nonzero_cpu=r.nonzero_cpu,
            nonzero_memory=r.nonzero_memory,
            host_ports=ports,
            signature=signature,
            shape=signature + msgspec.json.encode((sorted(r.requests.items()), r.nonzero_cpu, r.nonzero_memory)),
            created=ts.timestamp() if ts is not None else _EPOCH,
            req_cols=np.zeros(0, dtype=np.intp),
            req_vals=np.zeros(0, dtype=np.int64),
            affinity_key=_affinity_key(pod),
        )

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace

    @property
    def name(self) -> str:
        return self.pod.metadata.name

    @property
    def group_name(self) -> str | None:
        sg = self.pod.spec.scheduling_group
        return sg.pod_group_name if sg is not None else None

    @property
    def group_key(self) -> str | None:
        g = self.group_name
        return pod_key(self.namespace, g) if g else None

    @property
    def tolerations(self) -> list[Toleration]:
        return self.pod.spec.tolerations

    def sort_key(self) -> tuple[int, float, str]:
        """PrioritySort: higher priority first, then earlier creation; the key breaks remaining ties."""
        return (-self.priority, self.created, self.key)


def _affinity_key(pod: Pod) -> bytes | None:
    affinity = pod.spec.affinity
    if affinity is None or not (affinity.pod_affinity or affinity.pod_anti_affinity):
        return None
    terms = msgspec.json.encode((affinity.pod_affinity, affinity.pod_anti_affinity))
    # matchLabelKeys and mismatchLabelKeys read the pod's own labels, which then belong to the key.
    labels = sorted(pod.metadata.labels.items()) if b"LabelKeys" in terms else None
    return msgspec.json.encode((pod.metadata.namespace, labels)) + terms


def _toleration_key(t: Toleration) -> tuple[str, str, str, str, int]:
    return (t.key, t.operator, t.value, t.effect, -1 if t.toleration_seconds is None else t.toleration_seconds)
