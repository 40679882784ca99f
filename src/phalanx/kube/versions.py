"""Which version of the Workload API (``scheduling.k8s.io``) a server speaks, per watched collection.

v1.36 serves ``v1alpha2``; v1.37 removed it and serves ``v1beta1`` (Workload, PodGroup) and ``v1alpha3`` (those two
and CompositePodGroup). Clusters older than v1.36 use phalanx's ``scheduling.phalanx.dev/v1alpha2`` CRDs. serve
watches each collection in the first version of its list the server answers, and decodes what it gets through
:mod:`phalanx.api.scheduling_convert`, so the engine sees one internal model; writes name the condition as the
watched version does (``PodGroupInitiallyScheduled`` in v1.37).
"""

from __future__ import annotations

__all__ = ["CANDIDATES", "KINDS"]

# Newest first: a server serving two versions is watched in the one that can say everything.
CANDIDATES: dict[str, tuple[tuple[str, str], ...]] = {
    "podgroups": (
        ("scheduling.k8s.io", "v1beta1"),
        ("scheduling.k8s.io", "v1alpha3"),
        ("scheduling.k8s.io", "v1alpha2"),
        ("scheduling.phalanx.dev", "v1alpha2"),
    ),
    "workloads": (
        ("scheduling.k8s.io", "v1beta1"),
        ("scheduling.k8s.io", "v1alpha3"),
        ("scheduling.k8s.io", "v1alpha2"),
        ("scheduling.phalanx.dev", "v1alpha2"),
    ),
    "compositepodgroups": (("scheduling.k8s.io", "v1alpha3"),),
}
# The kind of each collection's objects (list items carry none).
KINDS = {"podgroups": "PodGroup", "workloads": "Workload", "compositepodgroups": "CompositePodGroup"}
