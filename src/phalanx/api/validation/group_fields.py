"""The building blocks a PodGroup, a Workload's templates, a CompositePodGroup and a Job's ``spec.scheduling`` share:
scheduling policies, topology constraints, shared resource claims, disruption modes, priorities, workload references.

The rules are declarative validation's (``zz_generated.validations.go`` of scheduling v1beta1/v1alpha3, v1.37),
which v1.36's v1alpha2 rules match for the parts the two versions have in common. Each helper returns the errors of
one field in kube-apiserver's order: a union's own error before its members', a list's length first (it stops the
rest), duplicates before each item's errors.
"""

from __future__ import annotations

from phalanx.api import scheduling as s
from phalanx.api.errors import FieldError
from phalanx.api.meta import TypedLocalObjectReference
from phalanx.api.validation import fields as f

__all__ = [
    "PREEMPTION_POLICIES",
    "PRIORITY_MAX",
    "validate_claim_statuses",
    "validate_claims",
    "validate_composite_policy",
    "validate_constraints",
    "validate_controller_ref",
    "validate_disruption_mode",
    "validate_policy",
    "validate_preemption_policy",
    "validate_priority_fields",
    "validate_workload_ref",
]

PRIORITY_MAX = 1_000_000_000  # HighestUserDefinablePriority
PREEMPTION_POLICIES = (s.PREEMPT_NEVER, s.PREEMPT_LOWER_PRIORITY)


def validate_policy(
    path: str, policy: s.PodGroupSchedulingPolicy | None, optional_count: bool = False
) -> list[FieldError]:
    """``basic`` | ``gang``. In a PodGroup or template the gang's minCount is required (0 is "Required value");
    in a Job's spec.scheduling (``optional_count``) it may be left out, and when given must be at least 1."""
    # An absent policy is an empty union: the API type is a required struct, so only the union rule can fire.
    policy = policy or s.PodGroupSchedulingPolicy()
    errs = f.union(path, {"basic": policy.basic is not None, "gang": policy.gang is not None})
    if policy.gang is not None:
        errs += _count(f"{path}.gang.minCount", policy.gang.min_count, optional_count)
    return errs


def validate_composite_policy(path: str, policy: s.CompositePodGroupSchedulingPolicy | None) -> list[FieldError]:
    """``basic`` | ``gang{minGroupCount}``, minGroupCount required and at least 1."""
    policy = policy or s.CompositePodGroupSchedulingPolicy()
    errs = f.union(path, {"basic": policy.basic is not None, "gang": policy.gang is not None})
    if policy.gang is not None:
        errs += _count(f"{path}.gang.minGroupCount", policy.gang.min_group_count, optional=False)
    return errs


def _count(path: str, count: int | None, optional: bool) -> list[FieldError]:
    if count is None:
        return [] if optional else [FieldError.required(path)]
    if count == 0 and not optional:
        return [FieldError.required(path)]  # RequiredValue: a zero int32 is an unset one
    if count < 1:
        return [FieldError.invalid(path, count, "must be greater than or equal to 1")]
    return f.int32(path, count)


def validate_constraints(path: str, constraints: s.PodGroupSchedulingConstraints | None) -> list[FieldError]:
    """At most one topology constraint, whose key is a label key."""
    if constraints is None:
        return []
    topology = constraints.topology
    if len(topology) > s.MAX_TOPOLOGY_CONSTRAINTS:
        return [FieldError.too_many(f"{path}.topology", len(topology), s.MAX_TOPOLOGY_CONSTRAINTS)]
    errs: list[FieldError] = []
    for i, constraint in enumerate(topology):
        errs += f.required(f"{path}.topology[{i}].key", constraint.key, f.qualified_name)
    return errs


def validate_claims(path: str, claims: list[s.PodGroupResourceClaim]) -> list[FieldError]:
    """At most four claims with unique names, each naming exactly one of a claim or a template."""
    if len(claims) > s.MAX_POD_GROUP_RESOURCE_CLAIMS:
        return [FieldError.too_many(path, len(claims), s.MAX_POD_GROUP_RESOURCE_CLAIMS)]
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


def validate_claim_statuses(
    path: str, statuses: list[s.PodGroupResourceClaimStatus], claim_names: set[str]
) -> list[FieldError]:
    """``status.resourceClaimStatuses``: at most four, unique, each for a claim the spec declares."""
    if len(statuses) > s.MAX_POD_GROUP_RESOURCE_CLAIMS:
        return [FieldError.too_many(path, len(statuses), s.MAX_POD_GROUP_RESOURCE_CLAIMS)]
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


def validate_disruption_mode(path: str, mode: s.DisruptionMode | None) -> list[FieldError]:
    """The union ``single`` | ``all`` when given. (A PodGroup's is defaulted to ``single`` before validation, so
    its "Required value" never fires; an internal object without one means ``single`` too.)"""
    if mode is None:
        return []
    return f.union(path, {"single": mode.single is not None, "all": mode.all is not None})


def validate_priority_fields(path: str, priority_class_name: str, priority: int | None) -> list[FieldError]:
    """``priorityClassName`` (a DNS subdomain) and ``priority`` (at most the highest user-definable priority)."""
    errs = f.dns_subdomain(f"{path}.priorityClassName", priority_class_name) if priority_class_name else []
    if priority is not None and priority > PRIORITY_MAX:
        errs.append(FieldError.invalid(f"{path}.priority", priority, f"must be less than or equal to {PRIORITY_MAX}"))
    return errs


def validate_preemption_policy(path: str, policy: str | None) -> list[FieldError]:
    """``Never`` | ``PreemptLowerPriority`` (gate PodGroupPreemptionPolicy, taken as on)."""
    return f.enum(path, policy, PREEMPTION_POLICIES)


def validate_workload_ref(path: str, ref: s.WorkloadReference | None, required: bool = False) -> list[FieldError]:
    """``workloadName`` (a DNS subdomain) and ``templateName`` (a DNS label), both required."""
    if ref is None:
        return [FieldError.required(path)] if required else []
    errs = f.required(f"{path}.workloadName", ref.workload_name, f.dns_subdomain)
    errs += f.required(f"{path}.templateName", ref.template_name, f.dns_label)
    return errs


def validate_controller_ref(ref: TypedLocalObjectReference) -> list[FieldError]:
    """A Workload's ``spec.controllerRef``: an optional API group, a kind and a name (path segment names)."""
    path = "spec.controllerRef"
    errs = f.dns_subdomain(f"{path}.apiGroup", ref.api_group) if ref.api_group else []
    errs += f.required(f"{path}.kind", ref.kind, f.path_segment_name)
    errs += f.required(f"{path}.name", ref.name, f.path_segment_name)
    return errs
