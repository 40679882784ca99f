"""What each supported Kubernetes version needs switched on: feature gates, API groups and controllers.

The gates are the workload-aware scheduling and DRA gates of that release (kube_features.go of the tag), set the
same way on every component, as a cluster operator enabling the features would. v1.37 folded ``GangScheduling``
and ``WorkloadAwarePreemption`` into ``GenericWorkload`` (now beta, still off by default) and added
``CompositePodGroup`` and ``PodGroupPreemptionPolicy``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SUPPORTED", "KubeVersion", "kube_version"]

# Controllers a scheduler test relies on; the rest (node lifecycle, pod GC, replica sets ...) stay off so that
# nothing acts on the nodes and pods a test creates behind its back.
_CONTROLLERS = (
    "job-controller",
    "disruption-controller",
    "resourceclaim-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "podgroup-protection-controller",
)


@dataclass(frozen=True)
class KubeVersion:
    version: str  # "1.36.3"
    feature_gates: tuple[tuple[str, bool], ...]
    runtime_config: tuple[str, ...]
    scheduling_api: str  # the scheduling.k8s.io version that serves Workload and PodGroup
    controllers: tuple[str, ...] = _CONTROLLERS

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    def gates_flag(self) -> str:
        return ",".join(f"{name}={'true' if on else 'false'}" for name, on in self.feature_gates)


V1_36 = KubeVersion(
    "1.36.3",
    feature_gates=(
        ("GenericWorkload", True),
        ("GangScheduling", True),
        ("TopologyAwareWorkloadScheduling", True),
        ("WorkloadAwarePreemption", True),
        ("DRAWorkloadResourceClaims", True),
        ("WorkloadWithJob", True),
    ),
    runtime_config=("scheduling.k8s.io/v1alpha2=true",),
    scheduling_api="v1alpha2",
)

V1_37 = KubeVersion(
    "1.37.2",
    feature_gates=(
        ("GenericWorkload", True),
        ("TopologyAwareWorkloadScheduling", True),
        ("CompositePodGroup", True),
        ("PodGroupPreemptionPolicy", True),
        ("DRAWorkloadResourceClaims", True),
        ("WorkloadWithJob", True),
    ),
    runtime_config=("scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"),
    scheduling_api="v1beta1",
)

SUPPORTED = {v.version: v for v in (V1_36, V1_37)}


def kube_version(version: str) -> KubeVersion:
    """The settings for ``version`` ("1.36.3", "v1.36.3" or a minor such as "1.36")."""
    v = version.removeprefix("v")
    if v in SUPPORTED:
        return SUPPORTED[v]
    for known in SUPPORTED.values():
        if known.minor == v:
            return known
    raise KeyError(f"unsupported Kubernetes version {version!r}: supported are {', '.join(SUPPORTED)}")
