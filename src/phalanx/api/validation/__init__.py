"""kube-apiserver validation for the kinds phalanx reads, one module per kind.

``validate(inv)`` returns every problem of every object in input order, each located at its line; the per-kind
functions return :class:`~phalanx.api.errors.FieldError` lists with kube-apiserver's field paths and messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from phalanx.api import dra, names
from phalanx.api import models as m
from phalanx.api.admission import RuntimeClasses
from phalanx.api.errors import FieldError, Problem
from phalanx.api.gcpause import paused_gc
from phalanx.api.loader import Inventory, problem_at
from phalanx.api.validation.admission import admission_problems, priority_class_names
from phalanx.api.validation.device_class import validate_device_class
from phalanx.api.validation.job import validate_job
from phalanx.api.validation.meta import validate_object_meta
from phalanx.api.validation.node import validate_node
from phalanx.api.validation.pod import validate_pod
from phalanx.api.validation.pod_disruption_budget import validate_pod_disruption_budget
from phalanx.api.validation.pod_group import validate_pod_group
from phalanx.api.validation.priority_class import validate_priority_class
from phalanx.api.validation.resource_claim import validate_resource_claim, validate_resource_claim_template
from phalanx.api.validation.resource_slice import validate_resource_slice
from phalanx.api.validation.runtime_class import validate_runtime_class
from phalanx.api.validation.workload import validate_workload

__all__ = [
    "validate",
    "validate_device_class",
    "validate_job",
    "validate_node",
    "validate_object",
    "validate_pod",
    "validate_pod_disruption_budget",
    "validate_pod_group",
    "validate_priority_class",
    "validate_resource_claim",
    "validate_resource_claim_template",
    "validate_resource_slice",
    "validate_runtime_class",
    "validate_workload",
]

_VALIDATORS: dict[type[msgspec.Struct], Callable[[Any], list[FieldError]]] = {
    m.Node: validate_node,
    m.Pod: validate_pod,
    m.PriorityClass: validate_priority_class,
    m.PodDisruptionBudget: validate_pod_disruption_budget,
    m.Workload: validate_workload,
    m.PodGroup: validate_pod_group,
    m.RuntimeClass: validate_runtime_class,
    m.Job: validate_job,
    m.Namespace: lambda ns: validate_object_meta(ns.metadata, namespaced=False, name_check=names.check_dns_label),
    dra.DeviceClass: validate_device_class,
    dra.ResourceSlice: validate_resource_slice,
    dra.ResourceClaim: validate_resource_claim,
    dra.ResourceClaimTemplate: validate_resource_claim_template,
}


def validate_object(obj: msgspec.Struct) -> list[FieldError]:
    """Every problem with one decoded object of a kind phalanx reads."""
    return _VALIDATORS[type(obj)](obj)


def validate(inv: Inventory) -> list[Problem]:
    """Every problem of every object in ``inv``, in input order, each pointing at its file and line: the
    object's own, then the admission rules that need the rest of the snapshot (PriorityClass, RuntimeClass)."""
    objects = list(inv.all_objects())
    # inv.sources was filled in input order; objects without a source (generated) go last.
    position = {key: i for i, key in enumerate(inv.sources)}
    objects.sort(key=lambda obj: position.get(id(obj), len(position)))
    classes, runtime_classes = priority_class_names(inv.priority_classes), RuntimeClasses(inv.runtime_classes)
    with paused_gc():
        return [
            problem_at(inv, obj, err)
            for obj in objects
            for errs in (validate_object(obj), admission_problems(obj, classes, runtime_classes))
            for err in errs
        ]
