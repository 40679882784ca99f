"""Typed models of the Kubernetes objects phalanx reads, decoded leniently as kube-apiserver does.

Only the fields the scheduler uses are declared; unknown fields are ignored. Every field has a default, so a
missing required field is reported by validation (with kube-apiserver's "Required value"), not by decoding.
Quantities stay as written (``str | int | float``) and are parsed by :mod:`phalanx.api.quantity`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from phalanx.api.meta import Condition, ObjectMeta, OwnerReference, TypedLocalObjectReference
from phalanx.api.scheduling import (
    AllDisruptionMode,
    BasicSchedulingPolicy,
    CompositeBasicSchedulingPolicy,
    CompositeGangSchedulingPolicy,
    CompositePodGroup,
    CompositePodGroupSchedulingPolicy,
    CompositePodGroupSpec,
    CompositePodGroupStatus,
    CompositePodGroupTemplate,
    DisruptionMode,
    GangSchedulingPolicy,
    PodGroup,
    PodGroupResourceClaim,
    PodGroupResourceClaimStatus,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    PodGroupStatus,
    PodGroupTemplate,
    SingleDisruptionMode,
    TopologyConstraint,
    Workload,
    WorkloadReference,
    WorkloadSpec,
)

__all__ = [
    "Affinity",
    "AllDisruptionMode",
    "BasicSchedulingPolicy",
    "CompositeBasicSchedulingPolicy",
    "CompositeGangSchedulingPolicy",
    "CompositePodGroup",
    "CompositePodGroupSchedulingPolicy",
    "CompositePodGroupSpec",
    "CompositePodGroupStatus",
    "CompositePodGroupTemplate",
    "Condition",
    "Container",
    "ContainerPort",
    "DisruptionMode",
    "GangSchedulingPolicy",
    "Job",
    "JobCondition",
    "JobSchedulingConfiguration",
    "JobSpec",
    "JobStatus",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "ObjectMeta",
    "Overhead",
    "OwnerReference",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodCondition",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "PodGroup",
    "PodGroupResourceClaim",
    "PodGroupResourceClaimStatus",
    "PodGroupSchedulingConstraints",
    "PodGroupSchedulingPolicy",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTemplate",
    "PodResourceClaimStatus",
    "PodSchedulingGate",
    "PodSchedulingGroup",
    "PodSpec",
    "PodStatus",
    "PodTemplateMeta",
    "PodTemplateSpec",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "Quantity",
    "ResourceClaimRef",
    "ResourceList",
    "ResourceRequirements",
    "RuntimeClass",
    "Scheduling",
    "SingleDisruptionMode",
    "Taint",
    "Toleration",
    "TopologyConstraint",
    "TopologySpreadConstraint",
    "TypedLocalObjectReference",
    "WeightedPodAffinityTerm",
    "Workload",
    "WorkloadReference",
    "WorkloadSpec",
]

Quantity = str | int | float
ResourceList = dict[str, Quantity]


class _Model(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


# --- selectors -------------------------------------------------------------------------------------------------


class LabelSelectorRequirement(_Model):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class LabelSelector(_Model):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(_Model):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class NodeSelectorTerm(_Model):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_Model):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_Model):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(_Model):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_Model):
    label_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_Model):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_Model):
    """``podAffinity`` or ``podAntiAffinity`` (the two have the same shape)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class TopologySpreadConstraint(_Model):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class Affinity(_Model):
    node_affinity: NodeAffinity | None = None
    # Inter-pod (anti-)affinity is kept as written (validation reports its field paths); the InterPodAffinity plugin
    # decodes it into PodAffinity.
    pod_affinity: dict[str, Any] | None = None
    pod_anti_affinity: dict[str, Any] | None = None


# --- nodes -----------------------------------------------------------------------------------------------------


class Taint(_Model):
    key: str = ""
    value: str = ""
    effect: str = ""


class Toleration(_Model):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class NodeSpec(_Model):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(_Model):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}


class Node(_Model):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class Namespace(_Model):
    """Only its labels matter: pod affinity terms select namespaces by label (namespaceSelector)."""

    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


# --- pods ------------------------------------------------------------------------------------------------------


class ResourceClaimRef(_Model):
    """A container's use of one of the pod's ``spec.resourceClaims`` (optionally one request of it)."""

    name: str = ""
    request: str = ""


class ResourceRequirements(_Model):
    requests: ResourceList = {}
    limits: ResourceList = {}
    claims: list[ResourceClaimRef] = []


class ContainerPort(_Model):
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")
    name: str = ""


class Container(_Model):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = []
    restart_policy: str | None = None


class PodSchedulingGroup(_Model):
    pod_group_name: str | None = None


class PodSchedulingGate(_Model):
    name: str = ""


class PodSpec(_Model):
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: ResourceList = {}
    # Pod-level resources (PodLevelResources, beta and on by default since v1.34).
    resources: ResourceRequirements | None = None
    runtime_class_name: str | None = None
    host_network: bool = False
    scheduling_group: PodSchedulingGroup | None = None
    scheduling_gates: list[PodSchedulingGate] = []
    # Kept as written for validation and the DRA plugin; PodTopologySpread decodes TopologySpreadConstraint.
    topology_spread_constraints: list[dict[str, Any]] = []
    resource_claims: list[dict[str, Any]] = []


class PodCondition(_Model):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


class PodResourceClaimStatus(_Model):
    name: str = ""
    resource_claim_name: str | None = None


class PodStatus(_Model):
    phase: str = ""
    conditions: list[PodCondition] = []
    nominated_node_name: str = ""
    start_time: datetime | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = []


class Pod(_Model):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


# --- scheduling.k8s.io/v1 and policy/v1 --------------------------------------------------------------------------


class PriorityClass(_Model):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int | None = None
    global_default: bool = False
    preemption_policy: str | None = None
    description: str = ""


class PodDisruptionBudgetSpec(_Model):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(_Model):
    # None when the snapshot has no status: the scheduler then computes it as the disruption controller would.
    disruptions_allowed: int | None = None
    disrupted_pods: dict[str, Any] = {}


class PodDisruptionBudget(_Model):
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


# --- node.k8s.io/v1 --------------------------------------------------------------------------------------------


class Overhead(_Model):
    pod_fixed: ResourceList = {}


class Scheduling(_Model):
    node_selector: dict[str, str] = {}
    tolerations: list[Toleration] = []


class RuntimeClass(_Model):
    api_version: str = "node.k8s.io/v1"
    kind: str = "RuntimeClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    handler: str = ""
    overhead: Overhead | None = None
    scheduling: Scheduling | None = None


# --- batch/v1 --------------------------------------------------------------------------------------------------


class PodTemplateMeta(_Model):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class PodTemplateSpec(_Model):
    metadata: PodTemplateMeta = msgspec.field(default_factory=PodTemplateMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


class JobSchedulingConfiguration(_Model):
    """``spec.scheduling`` of a v1.37 Job (WorkloadWithJob): the scheduling.k8s.io/v1alpha3 building blocks a
    controller compiles into its Workload. The gang's ``minCount`` may be left out (it defaults to parallelism)."""

    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: list[PodGroupResourceClaim] = []


class JobSpec(_Model):
    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str = "NonIndexed"
    backoff_limit: int = 6
    suspend: bool = False
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    scheduling: JobSchedulingConfiguration | None = None  # v1.37; v1.36 had no such field


class JobCondition(_Model):
    type: str = ""
    status: str = ""


class JobStatus(_Model):
    """What tells the Job controller a Job has started (isNewJob): a Job that has is not given a Workload."""

    start_time: datetime | None = None
    succeeded: int = 0
    failed: int = 0
    conditions: list[JobCondition] = []


class Job(_Model):
    api_version: str = "batch/v1"
    kind: str = "Job"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)
    status: JobStatus = msgspec.field(default_factory=JobStatus)
