"""The names the Job controller gives a Job's Workload, PodGroupTemplate and PodGroup (v1.36 and v1.37 alike).

kube-controller-manager hashes with FNV-1a (32 bits): the Workload's suffix from the Job's UID as Go's
``dump.ForHash`` prints a ``types.UID`` (``(types.UID)<uid>``), the PodGroup's from the Workload and template
names; the decimal hash is spelled with ``rand.SafeEncodeString``'s alphabet. Names are cut to fit a DNS
subdomain (253 characters) as upstream cuts them, so a real cluster and phalanx name the same Job's objects alike.
"""

from __future__ import annotations

__all__ = ["pod_group_name", "safe_encode", "template_name", "workload_name"]

_MAX = 253  # validation.DNS1123SubdomainMaxLength
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand: no vowels, no 0, 1, 3


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each character mapped into an alphabet that cannot spell words."""
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in text)


def workload_name(job_name: str, job_uid: str) -> str:
    """``computeWorkloadName``: ``<job name>-<hash of the Job's UID>``, the name cut to leave room for the hash."""
    suffix = safe_encode(str(_fnv32a(f"(types.UID){job_uid}".encode())))
    return f"{job_name[: _MAX - len(suffix) - 1]}-{suffix}"


def template_name(job_name: str) -> str:
    """The one PodGroupTemplate a Job's Workload has: ``<job name>-pgt-0``."""
    return f"{job_name}-pgt-0"


def pod_group_name(workload: str, template: str) -> str:
    """``computePodGroupName``: ``<workload>-<template>-<hash>``; when too long, the longer part gives way first."""
    suffix = safe_encode(str(_fnv32a((workload + template).encode())))
    room = _MAX - len(suffix) - 2
    if len(workload) + len(template) > room:
        half = room // 2
        if len(workload) <= half:
            template = template[: room - len(workload)]
        elif len(template) <= half:
            workload = workload[: room - len(template)]
        else:
            workload, template = workload[: room - half], template[:half]
    return f"{workload}-{template}-{suffix}"
