"""PodGroup validation (``scheduling.k8s.io/v1alpha2``), and the group fields a Workload's templates share with it.

Follows the declarative rules of v1.36 (workload-api spec §1.10) with every feature gate on, so the gated fields
(schedulingConstraints, resourceClaims, disruptionMode, priorityClassName, priority) are allowed.
"""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation.meta import validate_object_meta

__all__ = [
    "DISRUPTION_MODES",
    "MAX_POD_GROUP_RESOURCE_CLAIMS",
    "MAX_TOPOLOGY_CONSTRAINTS",
    "validate_group_fields",
    "validate_pod_group",
]

DISRUPTION_MODES = ("Pod", "PodGroup")
MAX_POD_GROUP_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY_CONSTRAINTS = 1
_PRIORITY_RANGE = (-2_147_483_648, 1_000_000_000)


def validate_pod_group(pg: m.PodGroup) -> list[FieldError]:
    """Every problem with a PodGroup, as kube-apiserver reports them on create."""
    errs = validate_object_meta(pg.metadata, namespaced=True)
    # spec is a required struct in the API: an absent spec is an empty one, so its own rules report it.
    spec = pg.spec or m.PodGroupSpec()
    errs += _validate_template_ref(spec.pod_group_template_ref)
    errs += validate_group_fields("spec", spec)
    errs += _validate_status(pg.status, {claim.name for claim in spec.resource_claims})
    errs += _validate_topology_annotations(pg.metadata.annotations)
    return errs


# phalanx's topology intents (docs/topology.md); kube-apiserver ignores annotations, phalanx reads them.
_TOPOLOGY_KEYS = ("scheduling.phalanx.dev/topology-required", "scheduling.phalanx.dev/topology-preferred")
_UNCONSTRAINED = "scheduling.phalanx.dev/topology-unconstrained"


def _validate_topology_annotations(notes: dict[str, str]) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in _TOPOLOGY_KEYS:
        if key in notes:
            errs += f.qualified_name(f"metadata.annotations[{key}]", notes[key])
    if _UNCONSTRAINED in notes and notes[_UNCONSTRAINED] not in ("true", "false"):
        errs.append(
            FieldError.unsupported(f"metadata.annotations[{_UNCONSTRAINED}]", notes[_UNCONSTRAINED], ["true", "false"])
        )
    given = [k for k in (*_TOPOLOGY_KEYS, _UNCONSTRAINED) if k in notes]
    if len(given) > 1:
        errs.append(FieldError.forbidden("metadata.annotations", f"at most one of {', '.join(given)} may be set"))
    return errs


def validate_group_fields(path: str, group: m.PodGroupSpec | m.PodGroupTemplate) -> list[FieldError]:
    """The fields a PodGroup spec and a PodGroupTemplate have in common, in the API's field order."""
    errs = _validate_policy(f"{path}.schedulingPolicy", group.scheduling_policy)
    if group.scheduling_constraints is not None:
        errs += _validate_constraints(f"{path}.schedulingConstraints", group.scheduling_constraints)
    errs += _validate_claims(f"{path}.resourceClaims", group.resource_claims)
    errs += f.enum(f"{path}.disruptionMode", group.disruption_mode, DISRUPTION_MODES)
    if group.priority_class_name:
        errs += f.dns_subdomain(f"{path}.priorityClassName", group.priority_class_name)
    if group.priority is not None:
        errs += _validate_priority(f"{path}.priority", group.priority)
    return errs


def _validate_template_ref(ref: m.PodGroupTemplateReference | None) -> list[FieldError]:
    if ref is None:
        return []
    path = "spec.podGroupTemplateRef"
    errs = f.union(path, {"workload": ref.workload is not None})
    if ref.workload is not None:
        at = f"{path}.workload"
        errs += f.required(f"{at}.workloadName", ref.workload.workload_name, f.dns_subdomain)
        errs += f.required(f"{at}.podGroupTemplateName", ref.workload.pod_group_template_name, f.dns_label)
    return errs


def _validate_policy(path: str, policy: m.PodGroupSchedulingPolicy | None) -> list[FieldError]:
    # An absent policy is an empty union: the API type is a required struct, so only the union rule can fire.
    policy = policy or m.PodGroupSchedulingPolicy()
    errs = f.union(path, {"basic": policy.basic is not None, "gang": policy.gang is not None})
    if policy.gang is not None:
        at = f"{path}.gang.minCount"
        min_count = policy.gang.min_count
        if not min_count:
            errs.append(FieldError.required(at))
        elif min_count < 1:
            errs.append(FieldError.invalid(at, min_count, "must be greater than or equal to 1"))
        else:
            errs += f.int32(at, min_count)
    return errs


def _validate_constraints(path: str, constraints: m.PodGroupSchedulingConstraints) -> list[FieldError]:
    topology = constraints.topology
    if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
        return [FieldError.too_many(f"{path}.topology", len(topology), MAX_TOPOLOGY_CONSTRAINTS)]
    errs: list[FieldError] = []
    for i, constraint in enumerate(topology):
        errs += f.required(f"{path}.topology[{i}].key", constraint.key, f.qualified_name)
    return errs


def _validate_claims(path: str, claims: list[m.PodGroupResourceClaim]) -> list[FieldError]:
    if len(claims) > MAX_POD_GROUP_RESOURCE_CLAIMS:
        return [FieldError.too_many(path, len(claims), MAX_POD_GROUP_RESOURCE_CLAIMS)]
    errs = f.unique(path, claims, lambda claim: claim.name)
    for i, claim in enumerate(claims):
        at = f"{path}[{i}]"
        members = {
            "resourceClaimName": claim.resource_claim_name is not None,
            "resourceClaimTemplateName": claim.resource_claim_template_name is not None,
        }
        errs += f.union(at, members)
        errs += f.required(f"{at}.name", claim.name, f.dns_label)
        if claim.resource_claim_name is not None:
            errs += f.required(f"{at}.resourceClaimName", claim.resource_claim_name, f.dns_subdomain)
        if claim.resource_claim_template_name is not None:
            name = claim.resource_claim_template_name
            errs += f.required(f"{at}.resourceClaimTemplateName", name, f.dns_subdomain)
    return errs


def _validate_priority(path: str, priority: int) -> list[FieldError]:
    low, high = _PRIORITY_RANGE
    if priority < low:
        return [FieldError.invalid(path, priority, f"must be greater than or equal to {low}")]
    if priority > high:
        return [FieldError.invalid(path, priority, f"must be less than or equal to {high}")]
    return []


def _validate_status(status: m.PodGroupStatus, claim_names: set[str]) -> list[FieldError]:
    path = "status.resourceClaimStatuses"
    statuses = status.resource_claim_statuses
    if len(statuses) > MAX_POD_GROUP_RESOURCE_CLAIMS:
        return [FieldError.too_many(path, len(statuses), MAX_POD_GROUP_RESOURCE_CLAIMS)]
    errs = f.unique(path, statuses, lambda claim_status: claim_status.name)
    for i, claim_status in enumerate(statuses):
        at = f"{path}[{i}]"
        if claim_status.resource_claim_name is not None:
            errs += f.required(f"{at}.resourceClaimName", claim_status.resource_claim_name, f.dns_subdomain)
        # The status update rule: a status entry exists only for a claim the spec declares.
        if claim_status.name not in claim_names:
            detail = "must match the name of an entry in `spec.resourceClaims`"
            errs.append(FieldError.invalid(f"{at}.name", claim_status.name, detail))
    return errs
