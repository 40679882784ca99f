"""The admission rules kube-apiserver applies on create that need other objects of the snapshot: Priority (a
``priorityClassName`` must name a PriorityClass) and RuntimeClass (a pod's overhead and node selector must agree
with its class).

``phalanx schedule`` refuses a snapshot that breaks them, so ``validate`` reports them too, at the object's file
and line, instead of leaving the scheduler to fail without saying where. A Job's pod template and a Workload's
PodGroup templates are checked as the pods and PodGroups they become.
"""

from __future__ import annotations

from collections.abc import Iterator

from phalanx.api import models as m
from phalanx.api.admission import AdmissionError, RuntimeClasses
from phalanx.api.errors import FieldError
from phalanx.api.priority import SYSTEM_CLASSES

__all__ = ["admission_problems", "priority_class_names"]


def admission_problems(obj: object, classes: set[str], runtime_classes: RuntimeClasses) -> Iterator[FieldError]:
    """Every admission problem of ``obj``, given the PriorityClass names and RuntimeClasses of the snapshot."""
    if isinstance(obj, m.Pod):
        yield from _pod_spec(obj.metadata, obj.spec, "spec", classes, runtime_classes)
    elif isinstance(obj, m.Job):
        yield from _pod_spec(obj.metadata, obj.spec.template.spec, "spec.template.spec", classes, runtime_classes)
    elif isinstance(obj, m.PodGroup) and obj.spec is not None:
        yield from _priority_class("spec", obj.spec.priority, obj.spec.priority_class_name, classes)
    elif isinstance(obj, m.Workload) and obj.spec is not None:
        for i, template in enumerate(obj.spec.pod_group_templates):
            at = f"spec.podGroupTemplates[{i}]"
            yield from _priority_class(at, template.priority, template.priority_class_name, classes)


def priority_class_names(inv_classes: list[m.PriorityClass]) -> set[str]:
    return {pc.metadata.name for pc in inv_classes} | set(SYSTEM_CLASSES)


def _priority_class(path: str, priority: int | None, name: str, classes: set[str]) -> Iterator[FieldError]:
    # A set priority was resolved by admission already (a snapshot of a live cluster); only a bare name is.
    if priority is None and name and name not in classes:
        yield FieldError.forbidden(f"{path}.priorityClassName", f"no PriorityClass with name {name} was found")


def _pod_spec(
    meta: m.ObjectMeta, spec: m.PodSpec, path: str, classes: set[str], runtime_classes: RuntimeClasses
) -> Iterator[FieldError]:
    yield from _priority_class(path, spec.priority, spec.priority_class_name, classes)
    try:
        runtime_classes.admit(m.Pod(metadata=meta, spec=spec))
    except AdmissionError as exc:
        detail = str(exc).split(": ", 1)[-1]  # without the "pod ns/name: " the problem's prefix already says
        yield FieldError.forbidden(f"{path}.runtimeClassName", detail)
