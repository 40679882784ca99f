"""phalanx's Job controller against the real kube-controller-manager of each version: a Job is created in the test
control plane, the real controller makes its Workload, PodGroup and pods, and phalanx's ``reconcile_job`` of the same
Job (as the API server stored it, UID included) must make the same objects: names, owners, and the scheduling
fields. v1.37.2 runs phase 2 (spec.scheduling); v1.36.3 phase 1 (gang-shaped Indexed Jobs only)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from realcluster import Cluster, wait_for

from phalanx.api import models as m
from phalanx.api.scheduling_convert import decode
from phalanx.controllers.job import JobControllerOptions, reconcile_job

TEMPLATE = {
    "spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "registry.example.com/w:1"}]},
}
V137_JOBS: dict[str, dict[str, Any]] = {
    "plain": {"parallelism": 3, "completions": 3, "completionMode": "Indexed"},
    "gang": {
        "parallelism": 4,
        "completions": 4,
        "completionMode": "Indexed",
        "scheduling": {
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
            "disruptionMode": {"all": {}},
        },
    },
    "elastic": {"parallelism": 4, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}},
}


def _owners(meta: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (r["apiVersion"], r["kind"], r["name"], r["uid"], bool(r.get("controller")), bool(r.get("blockOwnerDeletion")))
        for r in meta.get("ownerReferences") or []
    ]


def _owners_of(obj: Any) -> list[tuple[Any, ...]]:
    return _owners(msgspec.to_builtins(obj.metadata))


def _create_job(cluster: Cluster, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {**spec, "template": TEMPLATE}}
    job: dict[str, Any] = cluster.cp.request("POST", f"/apis/batch/v1/namespaces/{cluster.ns}/jobs", body)
    return job


def _listed(cluster: Cluster, resource: str) -> list[dict[str, Any]]:
    api = cluster.scheduling if resource in ("workloads", "podgroups") else "/api/v1"
    items: list[dict[str, Any]] = cluster.cp.get(f"{api}/namespaces/{cluster.ns}/{resource}")["items"]
    return items


def _real_objects(cluster: Cluster, job: dict[str, Any], version: str) -> tuple[Any, Any, list[dict[str, Any]]]:
    uid = job["metadata"]["uid"]

    def owned(resource: str) -> list[dict[str, Any]]:
        return [
            o
            for o in _listed(cluster, resource)
            if uid in {r["uid"] for r in o["metadata"].get("ownerReferences") or []}
        ]

    (wl,) = wait_for("the real controller's Workload", lambda: owned("workloads"))
    (pg,) = wait_for("its PodGroup", lambda: owned("podgroups"))
    pods = wait_for("its pods", lambda: owned("pods"))
    stamp = {"apiVersion": f"scheduling.k8s.io/{version}"}
    return decode({**wl, **stamp, "kind": "Workload"}), decode({**pg, **stamp, "kind": "PodGroup"}), pods


def _compare(cluster: Cluster, job_doc: dict[str, Any], options: JobControllerOptions) -> None:
    job = msgspec.convert(job_doc, m.Job)
    real_wl, real_pg, real_pods = _real_objects(cluster, job_doc, cluster.cp.kube.scheduling_api)
    ours = reconcile_job(job, [], [], [], options)
    assert ours.workload is not None and ours.pod_group is not None
    assert ours.workload.metadata.name == real_wl.metadata.name
    assert ours.pod_group.metadata.name == real_pg.metadata.name
    assert ours.workload.spec == real_wl.spec
    # The PodGroup's owners name the Workload by the UID the server gave it: compare with the real Workload's.
    wl_uid = real_wl.metadata.uid
    want = [o if o[1] != "Workload" else (*o[:3], wl_uid, *o[4:]) for o in _owners_of(ours.pod_group)]
    assert want == _owners_of(real_pg)
    assert _owners_of(ours.workload) == _owners_of(real_wl)
    real_spec = msgspec.structs.replace(real_pg.spec, priority=None, preemption_policy=None)  # admission's fields
    assert ours.pod_group.spec == real_spec
    groups = {(p["spec"].get("schedulingGroup") or {}).get("podGroupName") for p in real_pods}
    assert groups == {p.spec.scheduling_group.pod_group_name for p in ours.pods if p.spec.scheduling_group}


@pytest.mark.parametrize("name", sorted(V137_JOBS))
def test_v137_job_controller(cluster: Cluster, name: str) -> None:
    if cluster.cp.kube.minor != "1.37":
        pytest.skip("phase 2 (spec.scheduling) is v1.37's")
    _compare(cluster, _create_job(cluster, name, V137_JOBS[name]), JobControllerOptions.for_version("1.37.2"))


def test_v136_job_controller(cluster: Cluster) -> None:
    if cluster.cp.kube.minor != "1.36":
        pytest.skip("phase 1 is v1.36's")
    spec = {"parallelism": 3, "completions": 3, "completionMode": "Indexed"}
    _compare(cluster, _create_job(cluster, "gang", spec), JobControllerOptions.for_version("1.36.3"))
