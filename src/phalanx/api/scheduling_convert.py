"""Conversions between the served versions of ``scheduling.k8s.io`` and the internal model of
:mod:`phalanx.api.scheduling`, with each version's defaults, so nothing outside ``phalanx.api`` sees a version.

- ``v1beta1`` and ``v1alpha3`` (v1.37) have the internal shape: decoding is a rename of the scheduled condition
  (``PodGroupInitiallyScheduled`` -> ``PodGroupScheduled``) and the v1.37 defaults (a PodGroup's or
  CompositePodGroup's ``disruptionMode`` becomes ``{single: {}}``).
- ``v1alpha2`` (v1.36, and phalanx's ``scheduling.phalanx.dev/v1alpha2`` CRDs for older clusters) names the template
  with ``podGroupTemplateRef.workload{workloadName, podGroupTemplateName}`` and spells ``disruptionMode`` ``Pod`` or
  ``PodGroup``; both convert losslessly both ways for what v1alpha2 can say (v1.36 defaults ``disruptionMode: Pod``).

A value v1alpha2 validation rejects (an unknown ``disruptionMode``) is converted to nothing: the problem is reported
from the v1alpha2 object before the internal one is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from phalanx.api import scheduling as s
from phalanx.api import scheduling_v1alpha2 as v1alpha2
from phalanx.api.meta import Condition

__all__ = [
    "CRD_VERSION",
    "SCHEDULING_KINDS",
    "V137_VERSIONS",
    "condition_type",
    "decode",
    "pod_group_from_v1alpha2",
    "pod_group_to_v1alpha2",
    "to_internal",
    "workload_from_v1alpha2",
    "workload_to_v1alpha2",
]

CRD_VERSION = "scheduling.phalanx.dev/v1alpha2"  # deploy/crds/: the v1alpha2 schema for clusters before v1.36
V137_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3")
_V1ALPHA2_VERSIONS = (v1alpha2.API_VERSION, CRD_VERSION)

# The scheduled condition of each kind in the versions that renamed it, and the engine's name for it.
_V137_CONDITIONS = {
    "PodGroup": ("PodGroupInitiallyScheduled", s.POD_GROUP_SCHEDULED),
    "CompositePodGroup": ("CompositePodGroupInitiallyScheduled", s.COMPOSITE_POD_GROUP_SCHEDULED),
}
_SINGLE = s.DisruptionMode(single=s.SingleDisruptionMode())
_ALL = s.DisruptionMode(all=s.AllDisruptionMode())


def condition_type(api_version: str, kind: str = "PodGroup") -> str:
    """The name, in ``api_version``, of the scheduled condition the engine calls ``PodGroupScheduled``."""
    wire, internal = _V137_CONDITIONS.get(kind, (s.POD_GROUP_SCHEDULED, s.POD_GROUP_SCHEDULED))
    return wire if api_version in V137_VERSIONS else internal


def _renamed(conditions: list[Condition], old: str, new: str) -> list[Condition]:
    return [msgspec.structs.replace(c, type=new) if c.type == old else c for c in conditions]


# --- v1.37 (v1beta1, v1alpha3) ----------------------------------------------------------------------------------


def _v137_pod_group(pg: s.PodGroup) -> s.PodGroup:
    spec = pg.spec or s.PodGroupSpec()
    if spec.disruption_mode is None:
        spec = msgspec.structs.replace(spec, disruption_mode=_SINGLE)
    wire, internal = _V137_CONDITIONS["PodGroup"]
    status = msgspec.structs.replace(pg.status, conditions=_renamed(pg.status.conditions, wire, internal))
    return msgspec.structs.replace(pg, api_version=s.HUB_VERSION, spec=spec, status=status)


def _v137_composite(cpg: s.CompositePodGroup) -> s.CompositePodGroup:
    spec = cpg.spec or s.CompositePodGroupSpec()
    if spec.disruption_mode is None:
        spec = msgspec.structs.replace(spec, disruption_mode=_SINGLE)
    wire, internal = _V137_CONDITIONS["CompositePodGroup"]
    status = msgspec.structs.replace(cpg.status, conditions=_renamed(cpg.status.conditions, wire, internal))
    return msgspec.structs.replace(cpg, spec=spec, status=status)


def _v137_workload(w: s.Workload) -> s.Workload:
    return msgspec.structs.replace(w, api_version=s.HUB_VERSION)


# --- v1alpha2 ---------------------------------------------------------------------------------------------------


def _mode_from_v1alpha2(mode: str | None) -> s.DisruptionMode | None:
    return {"Pod": _SINGLE, "PodGroup": _ALL}.get(mode) if mode is not None else None


def _mode_to_v1alpha2(mode: s.DisruptionMode | None) -> str | None:
    if mode is None:
        return None
    return "PodGroup" if s.disrupts_together(mode) else "Pod"


def _template_from_v1alpha2(t: v1alpha2.PodGroupTemplate) -> s.PodGroupTemplate:
    return s.PodGroupTemplate(
        name=t.name,
        scheduling_policy=t.scheduling_policy,
        scheduling_constraints=t.scheduling_constraints,
        resource_claims=t.resource_claims,
        disruption_mode=_mode_from_v1alpha2(t.disruption_mode),
        priority_class_name=t.priority_class_name,
        priority=t.priority,
    )


def workload_from_v1alpha2(w: v1alpha2.Workload) -> s.Workload:
    spec = None
    if w.spec is not None:
        templates = [_template_from_v1alpha2(t) for t in w.spec.pod_group_templates]
        spec = s.WorkloadSpec(controller_ref=w.spec.controller_ref, pod_group_templates=templates)
    return s.Workload(metadata=w.metadata, spec=spec)


def workload_to_v1alpha2(w: s.Workload) -> v1alpha2.Workload:
    """The Workload in v1.36's shape; composite templates, priorities' preemptionPolicy and the like are lost."""
    spec = None
    if w.spec is not None:
        templates = [
            v1alpha2.PodGroupTemplate(
                name=t.name,
                scheduling_policy=t.scheduling_policy,
                scheduling_constraints=t.scheduling_constraints,
                resource_claims=t.resource_claims,
                disruption_mode=_mode_to_v1alpha2(t.disruption_mode),
                priority_class_name=t.priority_class_name,
                priority=t.priority,
            )
            for t in w.spec.pod_group_templates
        ]
        spec = v1alpha2.WorkloadSpec(controller_ref=w.spec.controller_ref, pod_group_templates=templates)
    return v1alpha2.Workload(metadata=w.metadata, spec=spec)


def pod_group_from_v1alpha2(pg: v1alpha2.PodGroup) -> s.PodGroup:
    spec = pg.spec or v1alpha2.PodGroupSpec()
    ref = spec.pod_group_template_ref.workload if spec.pod_group_template_ref is not None else None
    workload_ref = None
    if ref is not None:
        workload_ref = s.WorkloadReference(workload_name=ref.workload_name, template_name=ref.pod_group_template_name)
    internal = s.PodGroupSpec(
        workload_ref=workload_ref,
        scheduling_policy=spec.scheduling_policy,
        scheduling_constraints=spec.scheduling_constraints,
        resource_claims=spec.resource_claims,
        disruption_mode=_mode_from_v1alpha2(spec.disruption_mode or "Pod"),  # v1alpha2 defaults it to Pod
        priority_class_name=spec.priority_class_name,
        priority=spec.priority,
    )
    status = s.PodGroupStatus(
        conditions=pg.status.conditions, resource_claim_statuses=pg.status.resource_claim_statuses
    )
    return s.PodGroup(metadata=pg.metadata, spec=internal if pg.spec is not None else None, status=status)


def pod_group_to_v1alpha2(pg: s.PodGroup) -> v1alpha2.PodGroup:
    """The PodGroup in v1.36's shape (preemptionPolicy and the parent composite group are lost)."""
    spec = None
    if pg.spec is not None:
        ref = pg.spec.workload_ref
        template_ref = None
        if ref is not None:
            workload = v1alpha2.WorkloadPodGroupTemplateReference(
                workload_name=ref.workload_name, pod_group_template_name=ref.template_name
            )
            template_ref = v1alpha2.PodGroupTemplateReference(workload=workload)
        spec = v1alpha2.PodGroupSpec(
            pod_group_template_ref=template_ref,
            scheduling_policy=pg.spec.scheduling_policy,
            scheduling_constraints=pg.spec.scheduling_constraints,
            resource_claims=pg.spec.resource_claims,
            disruption_mode=_mode_to_v1alpha2(pg.spec.disruption_mode),
            priority_class_name=pg.spec.priority_class_name,
            priority=pg.spec.priority,
        )
    status = v1alpha2.PodGroupStatus(
        conditions=pg.status.conditions, resource_claim_statuses=pg.status.resource_claim_statuses
    )
    return v1alpha2.PodGroup(metadata=pg.metadata, spec=spec, status=status)


# --- the registry the loader and the watch use ------------------------------------------------------------------

ToInternal = Callable[[Any], msgspec.Struct]

# (apiVersion, kind) -> (the model the version decodes into, its conversion to the internal model).
SCHEDULING_KINDS: dict[tuple[str, str], tuple[type[msgspec.Struct], ToInternal]] = {
    **{(v, "Workload"): (v1alpha2.Workload, workload_from_v1alpha2) for v in _V1ALPHA2_VERSIONS},
    **{(v, "PodGroup"): (v1alpha2.PodGroup, pod_group_from_v1alpha2) for v in _V1ALPHA2_VERSIONS},
    **{(v, "Workload"): (s.Workload, _v137_workload) for v in V137_VERSIONS},
    **{(v, "PodGroup"): (s.PodGroup, _v137_pod_group) for v in V137_VERSIONS},
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"): (s.CompositePodGroup, _v137_composite),
}


def to_internal(versioned: msgspec.Struct, api_version: str) -> msgspec.Struct:
    """The internal object for one decoded with the model ``SCHEDULING_KINDS`` names for its version."""
    kind: str = versioned.kind  # type: ignore[attr-defined]
    _, convert = SCHEDULING_KINDS[(api_version, kind)]
    return convert(versioned)


def decode(obj: dict[str, Any]) -> msgspec.Struct:
    """A Workload, PodGroup or CompositePodGroup of any served version, as the internal object.

    Raises :class:`msgspec.ValidationError` (with the field's path) for a field of the wrong type and
    :class:`KeyError` for a version or kind that is not one of ``SCHEDULING_KINDS``."""
    api_version = str(obj.get("apiVersion", ""))
    model, convert = SCHEDULING_KINDS[(api_version, str(obj.get("kind", "")))]
    return convert(msgspec.convert(obj, model))
