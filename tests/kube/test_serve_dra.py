"""``phalanx serve`` with DRA through the test API server: claims written before bindings (PreBind), conflicts
re-read and retried or requeued, PodGroup claims reserved once for the group, and new ResourceSlices waking pods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kube.apiserver import APIServer, Store
from kube.conftest import Instance, node, pod, pod_group

DRIVER = "gpu.example.com"
FINALIZER = "resource.kubernetes.io/delete-protection"
GPU_CLASS = {
    "metadata": {"name": DRIVER},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}
ONE_GPU = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}


def gpu_slice(node_name: str) -> dict[str, Any]:
    pool = {"name": node_name, "generation": 1, "resourceSliceCount": 1}
    spec = {"driver": DRIVER, "nodeName": node_name, "pool": pool, "devices": [{"name": "gpu-0"}]}
    return {"metadata": {"name": f"{node_name}-gpus"}, "spec": spec}


def template_pod(st: Store, name: str) -> dict[str, Any]:
    """A pod whose claim comes from a template, as the resourceclaim controller has named it in its status."""
    p = pod(name)
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    p["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]}
    return st.create("pods", p)


def generated_claim(owner: dict[str, Any]) -> dict[str, Any]:
    md = owner["metadata"]
    ref = {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"], "controller": True}
    meta = {
        "name": f"{md['name']}-gpu",
        "namespace": "default",
        "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
        "ownerReferences": [ref],
    }
    return {"metadata": meta, "spec": ONE_GPU}


def claim(st: Store, name: str) -> dict[str, Any]:
    return st.get("resourceclaims", f"default/{name}") or {}


def devices_of(c: dict[str, Any]) -> list[str]:
    results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [f"{r['pool']}/{r['device']}" for r in results]


def first_rv(st: Store, match: Callable[[str, dict[str, Any]], bool]) -> int:
    return min(rv for rv, res, _, obj in st.history if match(res, obj))


@pytest.mark.parametrize("writer_process", [False, True], ids=["threads", "writer-process"])
def test_template_claim_is_waited_for_then_allocated_and_written_before_the_binding(
    apiserver: APIServer, start: Callable[..., Instance], writer_process: bool
) -> None:
    st = apiserver.store
    st.create("deviceclasses", GPU_CLASS)
    st.create("nodes", node("n0"))
    st.create("nodes", node("n1"))
    st.create("resourceslices", gpu_slice("n1"))
    st.create(
        "resourceclaimtemplates", {"metadata": {"name": "one-gpu", "namespace": "default"}, "spec": {"spec": ONE_GPU}}
    )
    p = template_pod(st, "p")
    start(writer_process=writer_process)
    assert not st.wait_for(lambda: bool(st.bindings), timeout=0.5)  # PreEnqueue: its claim does not exist yet
    st.create("resourceclaims", generated_claim(p))
    assert st.wait_for(lambda: st.bindings.get("default/p") == ["n1"])
    c = claim(st, "p-gpu")
    assert devices_of(c) == ["n1/gpu-0"]
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": p["metadata"]["uid"]}]
    assert FINALIZER in c["metadata"]["finalizers"]
    reserved = first_rv(st, lambda res, o: res == "resourceclaims" and bool(o.get("status", {}).get("reservedFor")))
    bound = first_rv(st, lambda res, o: res == "pods" and bool(o["spec"].get("nodeName")))
    assert reserved < bound


def _other_scheduler_takes(st: Store) -> None:
    """Another scheduler allocates the shared claim on n2's GPU for its own pod, between our read and our write."""
    other = st.get("pods", "default/other")
    c = st.get("resourceclaims", "default/shared")
    result = {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    consumer = {"resource": "pods", "name": "other", "uid": other["metadata"]["uid"]}
    status = {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}, "reservedFor": [consumer]}
    st.update("resourceclaims", {**c, "status": status})


def test_claim_allocated_by_someone_else_meanwhile_is_used_not_allocated_twice(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("deviceclasses", GPU_CLASS)
    for n in ("n1", "n2"):
        st.create("nodes", node(n))
        st.create("resourceslices", gpu_slice(n))
    busy = pod("other", cpu="3", scheduler="default-scheduler")  # n2 is the busier node: phalanx prefers n1
    busy["spec"]["nodeName"] = "n2"
    st.create("pods", busy)
    st.create("resourceclaims", {"metadata": {"name": "shared", "namespace": "default"}, "spec": ONE_GPU})
    st.before(lambda m, path: m == "PATCH" and path.endswith("/resourceclaims/shared/status"), _other_scheduler_takes)
    p = pod("p")
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    p = st.create("pods", p)
    inst = start()
    assert st.wait_for(lambda: st.bindings.get("default/p") == ["n2"])
    c = claim(st, "shared")
    assert devices_of(c) == ["n2/gpu-0"]  # the other scheduler's allocation stands; n1's GPU was never written
    assert [r["name"] for r in c["status"]["reservedFor"]] == ["other", "p"]
    assert st.bindings == {"default/p": ["n2"]}
    # the write of the allocation on n1 failed (409, then allocated elsewhere): the pod was requeued, not bound
    assert inst.server.metrics.get("phalanx_api_writes_total", kind="resource_claim", result="error") == 1


def test_conflicting_write_is_retried_on_the_fresh_claim(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("deviceclasses", GPU_CLASS)
    st.create("nodes", node("n1"))
    st.create("resourceslices", gpu_slice("n1"))
    st.create("resourceclaims", {"metadata": {"name": "shared", "namespace": "default"}, "spec": ONE_GPU})

    def relabel(s: Store) -> None:
        c = s.get("resourceclaims", "default/shared")
        s.update("resourceclaims", {**c, "metadata": {**c["metadata"], "labels": {"team": "a"}}})

    st.before(lambda m, path: m == "PATCH" and path.endswith("/resourceclaims/shared/status"), relabel)
    p = pod("p")
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    st.create("pods", p)
    inst = start()
    assert st.wait_for(lambda: st.bindings.get("default/p") == ["n1"])
    c = claim(st, "shared")
    assert devices_of(c) == ["n1/gpu-0"] and c["metadata"]["labels"] == {"team": "a"}
    assert [r["name"] for r in c["status"]["reservedFor"]] == ["p"]
    assert inst.server.metrics.get("phalanx_api_writes_total", kind="resource_claim", result="ok") == 1


def test_gang_with_a_pod_group_claim_writes_one_pod_group_reservation_before_binding(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("deviceclasses", GPU_CLASS)
    st.create("nodes", node("n0"))
    st.create("nodes", node("n1"))
    st.create("resourceslices", gpu_slice("n1"))
    st.create("resourceclaims", {"metadata": {"name": "shared", "namespace": "default"}, "spec": ONE_GPU})
    pg = pod_group("g", 2)
    pg["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "shared"}]
    pg = st.create("podgroups", pg)
    for i in range(2):
        p = pod(f"p{i}", "g")
        p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "shared"}]
        st.create("pods", p)
    start()
    assert st.wait_for(lambda: st.bindings == {"default/p0": ["n1"], "default/p1": ["n1"]})
    c = claim(st, "shared")
    group_ref = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": pg["metadata"]["uid"]}
    assert c["status"]["reservedFor"] == [group_ref]
    assert devices_of(c) == ["n1/gpu-0"]
    reserved = first_rv(st, lambda res, o: res == "resourceclaims" and bool(o.get("status", {}).get("reservedFor")))
    bound = first_rv(st, lambda res, o: res == "pods" and bool(o["spec"].get("nodeName")))
    assert reserved < bound


def test_new_node_with_gpus_makes_a_pending_pod_schedulable(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("deviceclasses", GPU_CLASS)
    st.create("nodes", node("n0"))
    p = template_pod(st, "p")
    st.create("resourceclaims", generated_claim(p))
    inst = start()
    assert st.wait_for(lambda: inst.server.controller.engine is not None)
    engine = inst.server.controller.engine
    assert st.wait_for(
        lambda: (engine.recorder.outcomes.get("default/p") or object()).__class__.__name__ == "PodOutcome"
    )
    assert not st.bindings  # no GPU anywhere
    st.create("nodes", node("n1"))
    st.create("resourceslices", gpu_slice("n1"))
    assert st.wait_for(lambda: st.bindings.get("default/p") == ["n1"])
    assert devices_of(claim(st, "p-gpu")) == ["n1/gpu-0"]
    assert inst.server.controller.engine is engine  # slices reached the engine as events, no rebuild


def test_extended_resource_served_by_dra_gets_a_claim_created_by_the_scheduler(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("deviceclasses", {**GPU_CLASS, "spec": {**GPU_CLASS["spec"], "extendedResourceName": "example.com/gpu"}})
    st.create("nodes", node("n1"))  # does not advertise example.com/gpu: DRA serves it
    st.create("resourceslices", gpu_slice("n1"))
    p = pod("p")
    p["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    p = st.create("pods", p)
    start()
    assert st.wait_for(lambda: st.bindings.get("default/p") == ["n1"])
    c = claim(st, "p-extended-resources")
    assert c["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert c["metadata"]["ownerReferences"][0]["uid"] == p["metadata"]["uid"]
    assert devices_of(c) == ["n1/gpu-0"]
    assert [r["name"] for r in c["status"]["reservedFor"]] == ["p"]
    status = st.get("pods", "default/p")["status"]["extendedResourceClaimStatus"]
    mapping = {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    assert status == {"resourceClaimName": "p-extended-resources", "requestMappings": [mapping]}


def test_claim_allocated_where_the_pod_cannot_run_is_deallocated_and_allocated_again(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("deviceclasses", GPU_CLASS)
    st.create("nodes", {**node("n2"), "spec": {"unschedulable": True}})  # cordoned, after its claim was allocated
    st.create("nodes", node("n1"))
    for n in ("n1", "n2"):
        st.create("resourceslices", gpu_slice(n))
    shared = st.create("resourceclaims", {"metadata": {"name": "shared", "namespace": "default"}, "spec": ONE_GPU})
    result = {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    st.update(
        "resourceclaims",
        {**shared, "status": {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}},
    )
    p = pod("p")
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    st.create("pods", p)
    inst = start()
    assert st.wait_for(lambda: st.bindings.get("default/p") == ["n1"])
    assert devices_of(claim(st, "shared")) == ["n1/gpu-0"]
    assert [r["name"] for r in claim(st, "shared")["status"]["reservedFor"]] == ["p"]
    # PostFilter's deallocation and the new allocation went in one write, made on the version the engine saw
    assert inst.server.metrics.get("phalanx_api_writes_total", kind="resource_claim", result="ok") == 1
    assert inst.server.metrics.get("phalanx_api_writes_total", kind="resource_claim", result="error") == 0
