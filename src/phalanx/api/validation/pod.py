"""Pod validation: the parts of ``ValidatePodCreate`` the scheduler depends on.

Containers (names, ports, resources), tolerations, node and pod affinity, topology spread, priority, scheduling
gates, the PodGroup link and pod-level resource claims. Fields phalanx never reads (images, probes, volumes,
security) are not checked.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f
from phalanx.api.validation.affinity import validate_node_affinity
from phalanx.api.validation.meta import validate_labels, validate_object_meta
from phalanx.api.validation.node import validate_taint_effect
from phalanx.api.validation.resources import validate_container_resources, validate_overhead
from phalanx.api.validation.spread import validate_pod_affinity, validate_topology_spread_constraints

__all__ = ["PREEMPTION_POLICIES", "validate_pod", "validate_preemption_policy"]

PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_CONTAINER_RESTART_POLICIES = ("Always", "Never", "OnFailure")


def validate_pod(pod: m.Pod) -> list[FieldError]:
    """Every problem with a Pod, as kube-apiserver reports them on create (status as on its update)."""
    errs = validate_object_meta(pod.metadata, namespaced=True) + _validate_spec(pod.spec)
    return errs + _validate_claim_statuses(pod.status.resource_claim_statuses, _claim_names(pod.spec))


def _validate_spec(spec: m.PodSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    if not spec.containers:
        errs.append(FieldError.required("spec.containers"))
    seen: set[str] = set()
    claims = _claim_names(spec)
    errs += _validate_containers(spec.containers, "spec.containers", seen, spec.host_network, init=False, claims=claims)
    errs += _validate_containers(
        spec.init_containers, "spec.initContainers", seen, spec.host_network, init=True, claims=claims
    )
    errs += _host_port_conflicts(spec.containers)
    errs += validate_overhead(spec.overhead, "spec.overhead")
    errs += _validate_pod_resources(spec.resources, claims)
    errs += validate_labels(spec.node_selector, "spec.nodeSelector")
    errs += _validate_affinity(spec.affinity)
    errs += _validate_tolerations(spec.tolerations)
    errs += validate_topology_spread_constraints(spec.topology_spread_constraints)
    errs += _validate_placement(spec)
    if spec.priority_class_name:
        errs += f.dns_subdomain("spec.priorityClassName", spec.priority_class_name)
    errs += f.int32("spec.priority", spec.priority)
    errs += validate_preemption_policy("spec.preemptionPolicy", spec.preemption_policy)
    errs += _validate_scheduling_group(spec.scheduling_group)
    errs += _validate_scheduling_gates(spec.scheduling_gates)
    errs += _validate_resource_claims(spec.resource_claims)
    return errs


_POD_LEVEL_RESOURCES = ["cpu", "memory"]


def _validate_pod_resources(res: m.ResourceRequirements | None, claims: set[str]) -> list[FieldError]:
    """Pod-level resources (PodLevelResources): cpu, memory and hugepages only, with the container rules."""
    if res is None:
        return []
    errs: list[FieldError] = []
    for kind, values in (("requests", res.requests), ("limits", res.limits)):
        for name in values:
            if name not in _POD_LEVEL_RESOURCES and not name.startswith("hugepages-"):
                path = f"spec.resources.{kind}[{name}]"
                errs.append(FieldError.unsupported(path, name, [*_POD_LEVEL_RESOURCES, "hugepages-*"]))
    errs += validate_container_resources(res, "spec.resources")
    return errs + _validate_claim_refs(res.claims, "spec.resources.claims", claims)


def validate_preemption_policy(path: str, policy: str | None) -> list[FieldError]:
    if policy == "":
        return [FieldError.required(path)]
    return f.enum(path, policy, PREEMPTION_POLICIES)


# --- containers ------------------------------------------------------------------------------------------------


def _validate_containers(
    containers: list[m.Container], path: str, seen: set[str], host_network: bool, init: bool, claims: set[str]
) -> list[FieldError]:
    """Containers of one list; ``seen`` carries names across lists, since they share one namespace."""
    errs: list[FieldError] = []
    for i, ctr in enumerate(containers):
        at = f"{path}[{i}]"
        errs += f.required(f"{at}.name", ctr.name, f.dns_label)
        if ctr.name and ctr.name in seen:
            errs.append(FieldError.duplicate(f"{at}.name", ctr.name))
        seen.add(ctr.name)
        errs += _validate_ports(ctr.ports, f"{at}.ports", host_network)
        errs += validate_container_resources(ctr.resources, f"{at}.resources")
        errs += _validate_claim_refs(ctr.resources.claims, f"{at}.resources.claims", claims)
        errs += _validate_restart_policy(ctr.restart_policy, f"{at}.restartPolicy", init)
    return errs


def _validate_restart_policy(policy: str | None, path: str, init: bool) -> list[FieldError]:
    if policy is None:
        return []
    # An init container may only be a sidecar (Always); regular containers accept ContainerRestartRules' values.
    return f.enum(path, policy, ["Always"] if init else _CONTAINER_RESTART_POLICIES)


def _validate_ports(ports: list[m.ContainerPort], path: str, host_network: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        at = f"{path}[{i}]"
        if port.name:
            msgs = _port_name_problems(port.name)
            if msgs:
                errs += [FieldError.invalid(f"{at}.name", port.name, msg) for msg in msgs]
            elif port.name in names:
                errs.append(FieldError.duplicate(f"{at}.name", port.name))
            names.add(port.name)
        if port.container_port == 0:
            errs.append(FieldError.required(f"{at}.containerPort"))
        elif not 1 <= port.container_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.containerPort", port.container_port, _PORT_RANGE))
        if port.host_port != 0 and not 1 <= port.host_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.hostPort", port.host_port, _PORT_RANGE))
        if not port.protocol:
            errs.append(FieldError.required(f"{at}.protocol"))
        else:
            errs += f.enum(f"{at}.protocol", port.protocol, _PROTOCOLS)
        if host_network and port.host_port not in (0, port.container_port):
            detail = "must match `hostPort` when `hostNetwork` is true"
            errs.append(FieldError.invalid(f"{at}.containerPort", port.container_port, detail))
    return errs


def _port_name_problems(name: str) -> list[str]:
    msgs = []
    if len(name) > 15:
        msgs.append("must be no more than 15 characters")
    if not re.fullmatch(r"[-a-z0-9]+", name):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in name:
        msgs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        msgs.append("must not begin or end with a hyphen")
    return msgs


def _host_port_conflicts(containers: list[m.Container]) -> list[FieldError]:
    errs: list[FieldError] = []
    used: set[str] = set()
    for ci, ctr in enumerate(containers):
        for pi, port in enumerate(ctr.ports):
            if port.host_port == 0:
                continue
            ident = f"{port.host_ip}/{port.protocol}/{port.host_port}"
            if ident in used:
                errs.append(FieldError.duplicate(f"spec.containers[{ci}].ports[{pi}].hostPort", ident))
            used.add(ident)
    return errs


# --- placement -------------------------------------------------------------------------------------------------


def _validate_tolerations(tolerations: list[m.Toleration]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, tol in enumerate(tolerations):
        at = f"spec.tolerations[{i}]"
        if tol.key:
            errs += f.qualified_name(f"{at}.key", tol.key)
        elif tol.operator != "Exists":
            detail = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
            errs.append(FieldError.invalid(f"{at}.operator", tol.operator, detail))
        errs += f.int64(f"{at}.tolerationSeconds", tol.toleration_seconds)
        if tol.toleration_seconds is not None and tol.effect != "NoExecute":
            detail = "effect must be 'NoExecute' when `tolerationSeconds` is set"
            errs.append(FieldError.invalid(f"{at}.effect", tol.effect, detail))
        if tol.operator in ("Equal", ""):
            # kube-apiserver reports a bad value on the operator's path.
            errs += f.joined_label_value(f"{at}.operator", tol.value)
        elif tol.operator == "Exists":
            if tol.value:
                detail = "value must be empty when `operator` is 'Exists'"
                errs.append(FieldError.invalid(f"{at}.operator", f.shown(tol), detail))
        else:
            errs.append(FieldError.unsupported(f"{at}.operator", tol.operator, ["Equal", "Exists"]))
        errs += validate_taint_effect(f"{at}.effect", tol.effect, allow_empty=True)
    return errs


def _validate_affinity(affinity: m.Affinity | None) -> list[FieldError]:
    if affinity is None:
        return []
    errs: list[FieldError] = []
    if affinity.node_affinity is not None:
        errs += validate_node_affinity(affinity.node_affinity, "spec.affinity.nodeAffinity")
    if affinity.pod_affinity is not None:
        errs += validate_pod_affinity(affinity.pod_affinity, "spec.affinity.podAffinity")
    if affinity.pod_anti_affinity is not None:
        errs += validate_pod_affinity(affinity.pod_anti_affinity, "spec.affinity.podAntiAffinity")
    return errs


def _validate_placement(spec: m.PodSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    if spec.node_name:
        errs += f.dns_subdomain("spec.nodeName", spec.node_name)
        if spec.scheduling_gates:
            detail = "cannot be set until all schedulingGates have been cleared"
            errs.append(FieldError.forbidden("spec.nodeName", detail))
    if spec.scheduler_name:
        errs += f.dns_subdomain("spec.schedulerName", spec.scheduler_name)
    return errs


def _validate_scheduling_group(group: m.PodSchedulingGroup | None) -> list[FieldError]:
    if group is None:
        return []
    path = "spec.schedulingGroup"
    errs = f.union(path, {"podGroupName": group.pod_group_name is not None})
    if group.pod_group_name is not None:
        errs += f.required(f"{path}.podGroupName", group.pod_group_name, f.dns_subdomain)
    return errs


def _validate_scheduling_gates(gates: list[m.PodSchedulingGate]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        errs += f.qualified_name(f"spec.schedulingGates[{i}].name", gate.name)
        if gate.name in seen:
            errs.append(FieldError.duplicate(f"spec.schedulingGates[{i}]", gate.name))
        seen.add(gate.name)
    return errs


class _PodResourceClaim(msgspec.Struct, rename="camel", kw_only=True):
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


def _validate_resource_claims(raw: list[dict[str, Any]]) -> list[FieldError]:
    claims, errs = f.decode("spec.resourceClaims", raw, list[_PodResourceClaim])
    seen: set[str] = set()
    for i, claim in enumerate(claims or []):
        at = f"spec.resourceClaims[{i}]"
        errs += f.required(f"{at}.name", claim.name, f.dns_label)
        if claim.name and claim.name in seen:
            errs.append(FieldError.duplicate(f"{at}.name", claim.name))
        seen.add(claim.name)
        sources = {
            "resourceClaimName": claim.resource_claim_name,
            "resourceClaimTemplateName": claim.resource_claim_template_name,
        }
        if all(v is None for v in sources.values()):
            detail = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            errs.append(FieldError.invalid(at, "", detail))
        elif all(v is not None for v in sources.values()):
            detail = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            errs.append(FieldError.invalid(at, "", detail))
        for k, v in sources.items():
            if v is not None:
                errs += f.dns_subdomain(f"{at}.{k}", v)
    return errs


def _claim_names(spec: m.PodSpec) -> set[str]:
    """The names of ``spec.resourceClaims`` (kept as written; entries of the wrong shape have no name)."""
    return {c["name"] for c in spec.resource_claims if isinstance(c, dict) and isinstance(c.get("name"), str)}


def _validate_claim_refs(refs: list[m.ResourceClaimRef], path: str, claims: set[str]) -> list[FieldError]:
    """``resources.claims``: each names a pod claim (optionally one request of it), no (name, request) twice."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        at = f"{path}[{i}]"
        if not ref.name:
            errs.append(FieldError.required(at))
            continue
        key = ref.name
        if ref.request:
            errs += f.dns_label(f"{at}.request", ref.request)
            key += "/" + ref.request
        if key in seen:
            errs.append(FieldError.duplicate(at, key))
        seen.add(key)
        if ref.name not in claims:
            listed = ": " + ", ".join(sorted(claims)) if claims else " which is empty"
            detail = "must be one of the names in pod.spec.resourceClaims" + listed
            errs.append(FieldError(at, f'Not found: "{ref.name}": {detail}'))
    return errs


def _validate_claim_statuses(statuses: list[m.PodResourceClaimStatus], claims: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, status in enumerate(statuses):
        at = f"status.resourceClaimStatuses[{i}].name"
        if status.name not in claims:
            detail = "must match the name of an entry in `spec.resourceClaims`"
            errs.append(FieldError.invalid(at, status.name, detail))
        if status.name in seen:
            errs.append(FieldError.duplicate(at, status.name))
        seen.add(status.name)
        if status.resource_claim_name is not None:
            # kube-apiserver reports a bad generated name on the entry's name field.
            errs += f.dns_subdomain(at, status.resource_claim_name)
    return errs
