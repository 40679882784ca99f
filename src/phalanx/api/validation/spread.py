"""Pod topology spread constraints and inter-pod (anti-)affinity, kept undecoded by the models.

Both are decoded here into small typed structs, so a wrong type is a field error, then checked as
``validateTopologySpreadConstraints`` and ``validatePodAffinity`` do.
"""

from __future__ import annotations

from typing import Any

import msgspec

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation.meta import validate_label_selector

__all__ = ["validate_pod_affinity", "validate_topology_spread_constraints"]

_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_NODE_POLICIES = ("Honor", "Ignore")
_NOT_POSITIVE = "must be greater than zero"


class _Struct(msgspec.Struct, rename="camel", kw_only=True):
    pass


class _SpreadConstraint(_Struct):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: m.LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class _AffinityTerm(_Struct):
    label_selector: m.LabelSelector | None = None
    namespace_selector: m.LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""


class _WeightedTerm(_Struct):
    weight: int = 0
    pod_affinity_term: _AffinityTerm = msgspec.field(default_factory=_AffinityTerm)


class _PodAffinity(_Struct):
    required_during_scheduling_ignored_during_execution: list[_AffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[_WeightedTerm] = []


def validate_topology_spread_constraints(raw: list[dict[str, Any]]) -> list[FieldError]:
    path = "spec.topologySpreadConstraints"
    constraints, errs = f.decode(path, raw, list[_SpreadConstraint])
    if constraints is None:
        return errs
    for i, c in enumerate(constraints):
        at = f"{path}[{i}]"
        if c.max_skew <= 0:
            errs.append(FieldError.invalid(f"{at}.maxSkew", c.max_skew, _NOT_POSITIVE))
        errs += f.int32(f"{at}.maxSkew", c.max_skew)
        errs += _validate_topology_key(f"{at}.topologyKey", c.topology_key)
        errs += _validate_when_unsatisfiable(f"{at}.whenUnsatisfiable", c.when_unsatisfiable)
        # A pair repeated later is reported on the earlier constraint, as kube-apiserver does.
        if any(
            (c.topology_key, c.when_unsatisfiable) == (o.topology_key, o.when_unsatisfiable)
            for o in constraints[i + 1 :]
        ):
            pair = f"{{{c.topology_key}, {c.when_unsatisfiable}}}"
            errs.append(FieldError.duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", pair))
        errs += _validate_min_domains(f"{at}.minDomains", c)
        errs += f.enum(f"{at}.nodeAffinityPolicy", c.node_affinity_policy, _NODE_POLICIES)
        errs += f.enum(f"{at}.nodeTaintsPolicy", c.node_taints_policy, _NODE_POLICIES)
        for j, label_key in enumerate(c.match_label_keys):
            errs += f.qualified_name(f"{at}.matchLabelKeys[{j}]", label_key)
        errs += validate_label_selector(c.label_selector, f"{at}.labelSelector")
    return errs


def _validate_min_domains(path: str, c: _SpreadConstraint) -> list[FieldError]:
    if c.min_domains is None:
        return []
    errs = []
    if c.min_domains <= 0:
        errs.append(FieldError.invalid(path, c.min_domains, _NOT_POSITIVE))
    errs += f.int32(path, c.min_domains)
    if c.when_unsatisfiable != "DoNotSchedule":
        detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {c.when_unsatisfiable}"
        errs.append(FieldError.invalid(path, c.min_domains, detail))
    return errs


def _validate_topology_key(path: str, key: str) -> list[FieldError]:
    if not key:
        return [FieldError.required(path, "can not be empty")]
    return f.qualified_name(path, key)


def _validate_when_unsatisfiable(path: str, action: str) -> list[FieldError]:
    # Unset is not "Required" here: kube-apiserver lists the supported values for an empty action too.
    return [] if action in _WHEN_UNSATISFIABLE else [FieldError.unsupported(path, action, list(_WHEN_UNSATISFIABLE))]


def validate_pod_affinity(raw: dict[str, Any], path: str) -> list[FieldError]:
    """``spec.affinity.podAffinity`` or ``podAntiAffinity``: terms with a topology key and valid selectors."""
    affinity, errs = f.decode(path, raw, _PodAffinity)
    if affinity is None:
        return errs
    required = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(affinity.required_during_scheduling_ignored_during_execution):
        errs += _validate_term(term, f"{required}[{i}]")
    preferred = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, weighted in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        at = f"{preferred}[{i}]"
        if not 1 <= weighted.weight <= 100:
            errs.append(FieldError.invalid(f"{at}.weight", weighted.weight, "must be in the range 1-100"))
        errs += _validate_term(weighted.pod_affinity_term, f"{at}.podAffinityTerm")
    return errs


def _validate_term(term: _AffinityTerm, path: str) -> list[FieldError]:
    errs = validate_label_selector(term.label_selector, f"{path}.labelSelector")
    errs += validate_label_selector(term.namespace_selector, f"{path}.namespaceSelector")
    for name in term.namespaces:
        # kube-apiserver names this path "namespace", without the list index.
        errs += f.dns_label(f"{path}.namespace", name)
    errs += _validate_topology_key(f"{path}.topologyKey", term.topology_key)
    return errs
