"""Which version of the Workload API a server speaks, and the v1.37 shapes converted to the v1alpha2 model.

v1.36 serves ``scheduling.k8s.io/v1alpha2``; v1.37 moves to ``v1beta1``/``v1alpha3`` (spec §1.1): the PodGroup's
template reference becomes ``spec.workloadRef{workloadName, templateName}``, ``disruptionMode`` a struct
``{single: {}} | {all: {}}``, and the condition ``PodGroupScheduled`` is renamed ``PodGroupInitiallyScheduled``.
Clusters older than v1.36 use the ``scheduling.phalanx.dev/v1alpha2`` CRDs. Objects are converted to v1alpha2 on
the way into the engine; writes use the condition name of the version the object came in.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CANDIDATES", "condition_type", "to_v1alpha2"]

CANDIDATES = (
    ("scheduling.k8s.io", "v1alpha2"),
    ("scheduling.k8s.io", "v1beta1"),
    ("scheduling.k8s.io", "v1alpha3"),
    ("scheduling.phalanx.dev", "v1alpha2"),
)
_V137 = ("/v1beta1", "/v1alpha3")
_DISRUPTION = {"single": "Pod", "all": "PodGroup"}


def is_v137(obj: dict[str, Any]) -> bool:
    return str(obj.get("apiVersion", "")).endswith(_V137)


def condition_type(obj: dict[str, Any]) -> str:
    """The name of the scheduled condition in the object's own version."""
    return "PodGroupInitiallyScheduled" if is_v137(obj) else "PodGroupScheduled"


def to_v1alpha2(obj: dict[str, Any]) -> dict[str, Any]:
    """A PodGroup in the v1alpha2 shape (unchanged if it is one already)."""
    if not is_v137(obj):
        return obj
    spec = dict(obj.get("spec") or {})
    ref = spec.pop("workloadRef", None)
    if ref:
        workload = {"workloadName": ref.get("workloadName", ""), "podGroupTemplateName": ref.get("templateName", "")}
        spec["podGroupTemplateRef"] = {"workload": workload}
    mode = spec.get("disruptionMode")
    if isinstance(mode, dict):
        spec["disruptionMode"] = next((v for k, v in _DISRUPTION.items() if k in mode), "Pod")
    for dropped in ("preemptionPolicy", "parentCompositePodGroupName"):
        spec.pop(dropped, None)
    status = dict(obj.get("status") or {})
    status["conditions"] = [
        {**c, "type": "PodGroupScheduled"} if c.get("type") == "PodGroupInitiallyScheduled" else c
        for c in status.get("conditions") or []
    ]
    return {**obj, "apiVersion": "scheduling.k8s.io/v1alpha2", "spec": spec, "status": status}
