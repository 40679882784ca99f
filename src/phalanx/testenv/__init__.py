"""A real Kubernetes control plane on loopback for tests and benchmarks, as controller-runtime's envtest gives Go.

``ControlPlane`` starts etcd, kube-apiserver (generated certificates, RBAC, a service-account signing key, the
workload and DRA feature gates of its version) and kube-controller-manager, and on request kube-scheduler, each as
its own process with its log in the work directory. The binaries are built from source by
``scripts/kube-testenv/build`` and found by ``assets``. Nothing here imports the rest of phalanx.
"""

from phalanx.testenv.assets import Assets, AssetsError, find_assets
from phalanx.testenv.controlplane import ControlPlane, ControlPlaneError, RequestError
from phalanx.testenv.versions import SUPPORTED, KubeVersion, kube_version

__all__ = [
    "SUPPORTED",
    "Assets",
    "AssetsError",
    "ControlPlane",
    "ControlPlaneError",
    "KubeVersion",
    "RequestError",
    "find_assets",
    "kube_version",
]
