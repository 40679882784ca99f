"""PodGroup validation, v1.37 (``scheduling.k8s.io/v1beta1`` and ``v1alpha3``), on the internal object.

The hand-written rule first (``parentCompositePodGroupName`` needs ``workloadRef``), then the declarative rules in the
spec's field order, with every feature gate on (CompositePodGroup, PodGroupPreemptionPolicy,
TopologyAwareWorkloadScheduling, DRAWorkloadResourceClaims), as kube-apiserver reports them on create. The
PodGroup has been defaulted (``disruptionMode: {single: {}}``) by the conversion. v1.36's v1alpha2 objects are checked
by :mod:`phalanx.api.validation.scheduling_v1alpha2` instead.
"""

from __future__ import annotations

from phalanx.api import scheduling as s
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation import group_fields as g
from phalanx.api.validation.meta import validate_object_meta
from phalanx.api.validation.scheduling_v1alpha2 import validate_topology_annotations

__all__ = ["validate_pod_group"]


def validate_pod_group(pg: s.PodGroup) -> list[FieldError]:
    """Every problem with a PodGroup, as kube-apiserver v1.37 reports them on create."""
    errs = validate_object_meta(pg.metadata, namespaced=True)
    # spec is a required struct in the API: an absent spec is an empty one, so its own rules report it.
    spec = pg.spec or s.PodGroupSpec()
    if spec.parent_composite_pod_group_name is not None and spec.workload_ref is None:
        errs.append(FieldError.required("spec.workloadRef", "must be set when parentCompositePodGroupName is set"))
    if spec.parent_composite_pod_group_name is not None:
        errs += f.dns_subdomain("spec.parentCompositePodGroupName", spec.parent_composite_pod_group_name)
    errs += g.validate_workload_ref("spec.workloadRef", spec.workload_ref)
    errs += g.validate_policy("spec.schedulingPolicy", spec.scheduling_policy)
    errs += g.validate_constraints("spec.schedulingConstraints", spec.scheduling_constraints)
    errs += g.validate_claims("spec.resourceClaims", spec.resource_claims)
    errs += g.validate_disruption_mode("spec.disruptionMode", spec.disruption_mode)
    errs += g.validate_priority_fields("spec", spec.priority_class_name, spec.priority)
    errs += g.validate_preemption_policy("spec.preemptionPolicy", spec.preemption_policy)
    claim_names = {claim.name for claim in spec.resource_claims}
    errs += g.validate_claim_statuses("status.resourceClaimStatuses", pg.status.resource_claim_statuses, claim_names)
    errs += validate_topology_annotations(pg.metadata.annotations)
    return errs
