"""The Workload API (``scheduling.k8s.io``) as phalanx holds it: one internal model for every served version.

The shape is v1.37's (``v1beta1`` Workload and PodGroup, ``v1alpha3`` CompositePodGroup; the two versions have the
same Workload and PodGroup types): PodGroups point at their template with ``workloadRef``, ``disruptionMode`` is the
union ``{single} | {all}``, PodGroups and CompositePodGroups name a ``parentCompositePodGroupName`` and carry a
``preemptionPolicy``, and a Workload may hold a tree of CompositePodGroupTemplates. v1.36's ``v1alpha2`` objects are
decoded into :mod:`phalanx.api.scheduling_v1alpha2` and converted here by :mod:`phalanx.api.scheduling_convert`, so
nothing outside ``phalanx.api`` knows which version an object came in.

Condition types are the engine's (``PodGroupScheduled``); the conversions rename v1.37's ``PodGroupInitiallyScheduled``
on the way in, and front ends writing to a server use :func:`phalanx.api.scheduling_convert.condition_type`.
"""

from __future__ import annotations

import msgspec

from phalanx.api.meta import Condition, ObjectMeta, TypedLocalObjectReference

__all__ = [
    "COMPOSITE_POD_GROUP_SCHEDULED",
    "GROUP_TEMPLATE_NAME_ANNOTATION",
    "HUB_VERSION",
    "MAX_POD_GROUP_RESOURCE_CLAIMS",
    "MAX_TEMPLATES",
    "MAX_TREE_DEPTH",
    "PARENT_COMPOSITE_POD_GROUP_ANNOTATION",
    "POD_GROUP_SCHEDULED",
    "PREEMPT_LOWER_PRIORITY",
    "PREEMPT_NEVER",
    "AllDisruptionMode",
    "BasicSchedulingPolicy",
    "CompositeBasicSchedulingPolicy",
    "CompositeGangSchedulingPolicy",
    "CompositePodGroup",
    "CompositePodGroupSchedulingPolicy",
    "CompositePodGroupSpec",
    "CompositePodGroupStatus",
    "CompositePodGroupTemplate",
    "DisruptionMode",
    "GangSchedulingPolicy",
    "PodGroup",
    "PodGroupResourceClaim",
    "PodGroupResourceClaimStatus",
    "PodGroupSchedulingConstraints",
    "PodGroupSchedulingPolicy",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTemplate",
    "SingleDisruptionMode",
    "TopologyConstraint",
    "Workload",
    "WorkloadReference",
    "WorkloadSpec",
    "disrupts_together",
]

HUB_VERSION = "scheduling.k8s.io/v1beta1"  # the apiVersion the internal objects carry
COMPOSITE_VERSION = "scheduling.k8s.io/v1alpha3"  # CompositePodGroup is served by v1alpha3 only

# Limits of the v1.37 API (k8s.io/api scheduling/v1beta1 types.go).
MAX_TEMPLATES = 8  # podGroupTemplates and compositePodGroupTemplates, in a Workload and in each composite template
MAX_TREE_DEPTH = 4  # WorkloadMaxTreeDepth: composite templates nested at most this deep
MAX_POD_GROUP_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY_CONSTRAINTS = 1

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"

# The engine's condition names (v1.36's; v1.37 writes PodGroupInitiallyScheduled, converted at the edges).
POD_GROUP_SCHEDULED = "PodGroupScheduled"
COMPOSITE_POD_GROUP_SCHEDULED = "CompositePodGroupScheduled"

# Annotations a parent controller (JobSet, LWS) puts on a child Job (pkg/apis/scheduling/annotation_key_constants.go).
GROUP_TEMPLATE_NAME_ANNOTATION = "scheduling.k8s.io/group-template-name"
PARENT_COMPOSITE_POD_GROUP_ANNOTATION = "scheduling.k8s.io/parent-compositepodgroup"


# --- policies, constraints, claims, disruption -----------------------------------------------------------------


class _Model(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class BasicSchedulingPolicy(_Model):
    pass


class GangSchedulingPolicy(_Model):
    # Required in a PodGroup or template (validation says so); optional in a Job's spec.scheduling, where the
    # controller defaults it to parallelism. Mutable in v1.37: elastic gangs.
    min_count: int | None = None


class PodGroupSchedulingPolicy(_Model):
    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class CompositeBasicSchedulingPolicy(_Model):
    pass


class CompositeGangSchedulingPolicy(_Model):
    # satisfied children needed; required. Mutable in a Workload's template like minCount, immutable on a live
    # CompositePodGroup (its schedulingPolicy is, v1.37.2 types.go).
    min_group_count: int | None = None


class CompositePodGroupSchedulingPolicy(_Model):
    basic: CompositeBasicSchedulingPolicy | None = None
    gang: CompositeGangSchedulingPolicy | None = None


class TopologyConstraint(_Model):
    key: str = ""


class PodGroupSchedulingConstraints(_Model):
    """Also CompositePodGroupSchedulingConstraints: the two types have the same single field."""

    topology: list[TopologyConstraint] = []


class PodGroupResourceClaim(_Model):
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class SingleDisruptionMode(_Model):
    pass


class AllDisruptionMode(_Model):
    pass


class DisruptionMode(_Model):
    """Exactly one member is set; also the CompositeDisruptionMode of composite groups (same shape)."""

    single: SingleDisruptionMode | None = None
    all: AllDisruptionMode | None = None


def disrupts_together(mode: DisruptionMode | None) -> bool:
    """Whether a group with this disruption mode is one preemption unit (``all``); unset means ``single``."""
    return mode is not None and mode.all is not None


# --- Workload ----------------------------------------------------------------------------------------------------


class PodGroupTemplate(_Model):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None


class CompositePodGroupTemplate(_Model):
    name: str = ""
    scheduling_policy: CompositePodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    pod_group_templates: list[PodGroupTemplate] = []
    composite_pod_group_templates: list[CompositePodGroupTemplate] = []


class WorkloadSpec(_Model):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = []
    composite_pod_group_templates: list[CompositePodGroupTemplate] = []


class Workload(_Model):
    api_version: str = HUB_VERSION
    kind: str = "Workload"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec | None = None


# --- PodGroup and CompositePodGroup ------------------------------------------------------------------------------


class WorkloadReference(_Model):
    workload_name: str = ""
    template_name: str = ""


class PodGroupResourceClaimStatus(_Model):
    name: str = ""
    resource_claim_name: str | None = None


class PodGroupSpec(_Model):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None


class PodGroupStatus(_Model):
    conditions: list[Condition] = []
    resource_claim_statuses: list[PodGroupResourceClaimStatus] = []


class PodGroup(_Model):
    api_version: str = HUB_VERSION
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec | None = None
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class CompositePodGroupSpec(_Model):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None  # required
    scheduling_policy: CompositePodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None


class CompositePodGroupStatus(_Model):
    conditions: list[Condition] = []


class CompositePodGroup(_Model):
    api_version: str = COMPOSITE_VERSION
    kind: str = "CompositePodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CompositePodGroupSpec | None = None
    status: CompositePodGroupStatus = msgspec.field(default_factory=CompositePodGroupStatus)
