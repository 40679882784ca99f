"""CompositePodGroup validation (``scheduling.k8s.io/v1alpha3``, v1.37, gate CompositePodGroup taken as on).

A CompositePodGroup is one node of a workload's tree of groups: it names its parent (none for the root), the
Workload template it came from (required), and a basic or gang (``minGroupCount`` children) policy. The rules
that span several objects (cycles, depth, several Workloads in one tree) are the scheduler's, not the API server's.
"""

from __future__ import annotations

from phalanx.api import scheduling as s
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation import group_fields as g
from phalanx.api.validation.meta import validate_object_meta

__all__ = ["validate_composite_pod_group"]


def validate_composite_pod_group(cpg: s.CompositePodGroup) -> list[FieldError]:
    """Every problem with a CompositePodGroup, as kube-apiserver v1.37 reports them on create."""
    errs = validate_object_meta(cpg.metadata, namespaced=True)
    spec = cpg.spec or s.CompositePodGroupSpec()
    if spec.parent_composite_pod_group_name is not None:
        errs += f.dns_subdomain("spec.parentCompositePodGroupName", spec.parent_composite_pod_group_name)
    errs += g.validate_workload_ref("spec.workloadRef", spec.workload_ref, required=True)
    errs += g.validate_composite_policy("spec.schedulingPolicy", spec.scheduling_policy)
    errs += g.validate_constraints("spec.schedulingConstraints", spec.scheduling_constraints)
    errs += g.validate_disruption_mode("spec.disruptionMode", spec.disruption_mode)
    errs += g.validate_priority_fields("spec", spec.priority_class_name, spec.priority)
    errs += g.validate_preemption_policy("spec.preemptionPolicy", spec.preemption_policy)
    return errs
