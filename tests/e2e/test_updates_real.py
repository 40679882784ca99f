"""phalanx's v1.37 update rules (api/validation/updates.py) against kube-apiserver v1.37.2: the same PodGroup
updates are refused, or accepted, with the same field errors."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from realcluster import Cluster

from phalanx.api import scheduling as s
from phalanx.api.validation import validate_pod_group
from phalanx.api.validation.updates import validate_pod_group_update, validate_workload_update
from phalanx.testenv import RequestError

BASE: dict[str, Any] = {
    "workloadRef": {"workloadName": "w", "templateName": "t"},
    "schedulingPolicy": {"gang": {"minCount": 4}},
}
CHANGES: list[dict[str, Any]] = [
    {"schedulingPolicy": {"gang": {"minCount": 2}}},
    {"disruptionMode": {"single": {}}},
    {"disruptionMode": {"all": {}}},
    {"schedulingPolicy": {"basic": {}}},
    {"workloadRef": {"workloadName": "w", "templateName": "u"}},
    {"parentCompositePodGroupName": "root"},
    {"resourceClaims": [{"name": "imex", "resourceClaimTemplateName": "t"}]},
]


def _server_errors(cluster: Cluster, live: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    path = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{cluster.ns}/podgroups/{live['metadata']['name']}"
    body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": live["metadata"], "spec": spec}
    try:
        cluster.cp.request("PUT", path, body)
    except RequestError as exc:
        assert exc.code == 422, exc.status
        return sorted(f"{c['field']}: {c['message']}" for c in exc.status["details"]["causes"])
    return []


@pytest.mark.parametrize("change", CHANGES, ids=[next(iter(c)) + str(i) for i, c in enumerate(CHANGES)])
def test_pg_update(cluster: Cluster, change: dict[str, Any]) -> None:
    """The update is made to the object as the server stored it (its defaults and admission's fields included)."""
    if cluster.cp.kube.minor != "1.37":
        pytest.skip("v1.37's update rules (v1.36 PodGroups are v1alpha2)")
    name = "pg"
    body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name}, "spec": BASE}
    live = cluster.cp.request("POST", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{cluster.ns}/podgroups", body)
    server = _server_errors(cluster, live, live["spec"] | change)
    old = msgspec.convert({"spec": live["spec"]}, s.PodGroup)
    new = msgspec.convert({"spec": live["spec"] | change}, s.PodGroup)
    assert sorted(f"{e.path}: {e.message}" for e in validate_pod_group_update(old, new)) == server


def _template(name: str, count: int, **more: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": count}}, **more}


WORKLOAD_CHANGES: list[list[dict[str, Any]]] = [
    [_template("a", 8), _template("b", 1)],  # elastic: accepted
    [_template("a", 4), _template("c", 2)],  # b removed, c added
    [_template("a", 4, disruptionMode={"all": {}}), _template("b", 2)],
]


@pytest.mark.parametrize("templates", WORKLOAD_CHANGES, ids=["min-count", "add-remove", "disruption-mode"])
def test_wl_update(cluster: Cluster, templates: list[dict[str, Any]]) -> None:
    if cluster.cp.kube.minor != "1.37":
        pytest.skip("v1.37's update rules (v1.36 Workloads are v1alpha2)")
    base = {"podGroupTemplates": [_template("a", 4), _template("b", 2)]}
    body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"}, "spec": base}
    collection = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{cluster.ns}/workloads"
    live = cluster.cp.request("POST", collection, body)
    spec = live["spec"] | {"podGroupTemplates": templates}
    try:
        cluster.cp.request("PUT", f"{collection}/w", {**body, "metadata": live["metadata"], "spec": spec})
        server: list[str] = []
    except RequestError as exc:
        server = sorted(f"{c['field']}: {c['message']}" for c in exc.status["details"]["causes"])
    old = msgspec.convert({"spec": live["spec"]}, s.Workload)
    new = msgspec.convert({"spec": spec}, s.Workload)
    assert sorted(f"{e.path}: {e.message}" for e in validate_workload_update(old, new)) == server


def test_basic_pg_all(cluster: Cluster) -> None:
    """KEP-5710 forbids `all` with the basic policy, but kube-apiserver v1.37.2 enforces it only on a Job's
    spec.scheduling (the workloadbuilder): a PodGroup may say it, and phalanx's validation accepts it too."""
    if cluster.cp.kube.minor != "1.37":
        pytest.skip("v1beta1")
    spec = {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}
    body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "basic"}, "spec": spec}
    live = cluster.cp.request("POST", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{cluster.ns}/podgroups", body)
    assert live["spec"]["disruptionMode"] == {"all": {}}
    assert (
        validate_pod_group(msgspec.convert(body | {"metadata": {"name": "basic", "namespace": "ml"}}, s.PodGroup)) == []
    )
