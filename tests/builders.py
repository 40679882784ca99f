"""Builders for test objects: ``make_pod("p").requests(cpu="1").group("pg").obj()``, ``make_node("n")...``."""

from __future__ import annotations

from typing import Any

import msgspec

from phalanx.api.models import Node, Pod, PodGroup, PriorityClass


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self.d: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "resources": {"requests": {}}}]},
        }

    @property
    def spec(self) -> dict[str, Any]:
        return self.d["spec"]  # type: ignore[no-any-return]

    def requests(self, **res: str | int) -> PodBuilder:
        self.spec["containers"][0]["resources"]["requests"].update({k.replace("_", "/"): v for k, v in res.items()})
        return self

    def request(self, name: str, value: str | int) -> PodBuilder:
        self.spec["containers"][0]["resources"]["requests"][name] = value
        return self

    def container(self, name: str, restart_policy: str | None = None, init: bool = False, **res: str) -> PodBuilder:
        c: dict[str, Any] = {"name": name, "resources": {"requests": dict(res)}}
        if restart_policy:
            c["restartPolicy"] = restart_policy
        self.spec.setdefault("initContainers" if init else "containers", []).append(c)
        return self

    def overhead(self, **res: str) -> PodBuilder:
        self.spec["overhead"] = dict(res)
        return self

    def group(self, name: str) -> PodBuilder:
        self.spec["schedulingGroup"] = {"podGroupName": name}
        return self

    def node(self, name: str) -> PodBuilder:
        self.spec["nodeName"] = name
        return self

    def priority(self, value: int) -> PodBuilder:
        self.spec["priority"] = value
        return self

    def created(self, ts: str) -> PodBuilder:
        self.d["metadata"]["creationTimestamp"] = ts
        return self

    def selector(self, **labels: str) -> PodBuilder:
        self.spec["nodeSelector"] = labels
        return self

    def toleration(self, **t: Any) -> PodBuilder:
        self.spec.setdefault("tolerations", []).append(t)
        return self

    def affinity(
        self, required: list[dict[str, Any]] | None = None, preferred: list[dict[str, Any]] | None = None
    ) -> PodBuilder:
        na: dict[str, Any] = {}
        if required is not None:
            na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
        if preferred is not None:
            na["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
        self.spec["affinity"] = {"nodeAffinity": na}
        return self

    def labels(self, **labels: str) -> PodBuilder:
        self.d["metadata"].setdefault("labels", {}).update(labels)
        return self

    def owner(self, kind: str, name: str = "owner") -> PodBuilder:
        ref = {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": name, "controller": True}
        self.d["metadata"].setdefault("ownerReferences", []).append(ref)
        return self

    def spread(self, key: str, max_skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> PodBuilder:
        """A topology spread constraint; ``extra`` holds the other fields in their API spelling (labelSelector...)."""
        c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
        self.spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def pod_affinity(self, kind: str, key: str, weight: int = 0, **term: Any) -> PodBuilder:
        """A podAffinity or podAntiAffinity term (``kind``), required unless ``weight`` is given; ``term`` holds its
        other fields in their API spelling (labelSelector, namespaces, namespaceSelector, matchLabelKeys...)."""
        body = {"topologyKey": key, **term}
        section = self.spec.setdefault("affinity", {}).setdefault(kind, {})
        if weight:
            entry = {"weight": weight, "podAffinityTerm": body}
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(entry)
        else:
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(body)
        return self

    def terminating(self) -> PodBuilder:
        self.d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> PodBuilder:
        p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        self.spec["containers"][0].setdefault("ports", []).append(p)
        return self

    def scheduler(self, name: str) -> PodBuilder:
        self.spec["schedulerName"] = name
        return self

    def phase(self, phase: str) -> PodBuilder:
        self.d["status"] = {"phase": phase}
        return self

    def obj(self) -> Pod:
        return msgspec.convert(self.d, Pod)


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self.d: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
        }

    def allocatable(self, **res: str | int) -> NodeBuilder:
        self.d["status"]["allocatable"].update({k.replace("_", "/"): v for k, v in res.items()})
        return self

    def resource(self, name: str, value: str | int) -> NodeBuilder:
        self.d["status"]["allocatable"][name] = value
        return self

    def labels(self, **labels: str) -> NodeBuilder:
        self.d["metadata"]["labels"].update(labels)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self.d["metadata"]["labels"][key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self.d["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def unschedulable(self) -> NodeBuilder:
        self.d["spec"]["unschedulable"] = True
        return self

    def obj(self) -> Node:
        return msgspec.convert(self.d, Node)


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_group(name: str, min_count: int | None = None, namespace: str = "default") -> PodGroup:
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"schedulingPolicy": policy}}, PodGroup
    )


def make_priority_class(name: str, value: int, global_default: bool = False) -> PriorityClass:
    return msgspec.convert({"metadata": {"name": name}, "value": value, "globalDefault": global_default}, PriorityClass)
