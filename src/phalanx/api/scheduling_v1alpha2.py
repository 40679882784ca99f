"""``scheduling.k8s.io/v1alpha2`` (Kubernetes v1.36) Workload and PodGroup, as written in v1.36 snapshots and clusters.

Decoded as written so that v1.36's validation (:mod:`phalanx.api.validation.scheduling_v1alpha2`) reports v1.36's
paths and messages, then converted to the internal model (:mod:`phalanx.api.scheduling_convert`). v1.37 removed
this version.
The shapes that differ from v1.37: ``spec.podGroupTemplateRef.workload{workloadName, podGroupTemplateName}``, and
``disruptionMode`` the enum ``Pod`` | ``PodGroup``; there is no preemptionPolicy, parent or composite group.
"""

from __future__ import annotations

import msgspec

from phalanx.api.meta import Condition, ObjectMeta, TypedLocalObjectReference
from phalanx.api.scheduling import (
    PodGroupResourceClaim,
    PodGroupResourceClaimStatus,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
)

__all__ = [
    "API_VERSION",
    "DISRUPTION_MODES",
    "PodGroup",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTemplate",
    "PodGroupTemplateReference",
    "Workload",
    "WorkloadPodGroupTemplateReference",
    "WorkloadSpec",
]

API_VERSION = "scheduling.k8s.io/v1alpha2"
DISRUPTION_MODES = ("Pod", "PodGroup")


class _Model(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class PodGroupTemplate(_Model):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: str | None = None
    priority_class_name: str = ""
    priority: int | None = None


class WorkloadSpec(_Model):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = []


class Workload(_Model):
    api_version: str = API_VERSION
    kind: str = "Workload"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec | None = None


class WorkloadPodGroupTemplateReference(_Model):
    workload_name: str = ""
    pod_group_template_name: str = ""


class PodGroupTemplateReference(_Model):
    workload: WorkloadPodGroupTemplateReference | None = None


class PodGroupSpec(_Model):
    pod_group_template_ref: PodGroupTemplateReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: str | None = None
    priority_class_name: str = ""
    priority: int | None = None


class PodGroupStatus(_Model):
    conditions: list[Condition] = []
    resource_claim_statuses: list[PodGroupResourceClaimStatus] = []


class PodGroup(_Model):
    api_version: str = API_VERSION
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec | None = None
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)
