"""`phalanx serve` against a real kube-apiserver and kube-controller-manager (v1.36.3 and v1.37.2): gangs, topology,
preemption through the Eviction API with budgets the real disruption controller keeps, DRA claims made by the real
resourceclaim controller, the Job integration, leader failover and an API server restart with a compacted etcd.

One `phalanx serve` process runs for the whole module (per version), as a user runs it: its own process, with the
phalanx-scheduler ServiceAccount's token, so a permission missing from deploy/01-rbac.yaml fails a test. Waits are
bounded only to catch hangs. Leader failover and the API server restart are in test_serve_failover_real.py.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from realcluster import Cluster, Kubelet, Serve, wait_for

from phalanx.testenv import ControlPlane, RequestError

pytestmark = pytest.mark.real


def settled(c: Cluster, group: str, status: str) -> dict[str, Any] | None:
    """The group's scheduled condition once phalanx has written it with ``status``."""
    cond = c.condition(group)
    return cond if cond is not None and cond["status"] == status else None


def unschedulable(c: Cluster, names: list[str]) -> bool:
    """Every pod named has been tried and marked PodScheduled=False by the scheduler."""
    pods = c.pods()
    for n in names:
        conds = (pods[n].get("status") or {}).get("conditions") or []
        if not any(x["type"] == "PodScheduled" and x["status"] == "False" for x in conds):
            return False
    return True


def test_gang_binds_nothing_until_all_fit_then_everything(cluster: Cluster, phalanx: Serve) -> None:
    c = cluster
    for i in range(4):
        c.node(f"{c.ns}-n{i}", cpu="1")
    c.pod("other", cpu="1", scheduler="phalanx")  # takes one of the four nodes: room for three
    gang = [f"w{i}" for i in range(4)]
    wait_for("the lone pod to bind", lambda: c.bound(["other"]))
    c.pod_group("train", 4)
    for name in gang:
        c.pod(name, group="train")
    wait_for("the gang to be found unschedulable", lambda: settled(c, "train", "False"))
    wait_for("every member marked unschedulable", lambda: unschedulable(c, gang))
    assert c.bound(gang) == set()

    c.node(f"{c.ns}-n4", cpu="1")
    wait_for("the whole gang to bind", lambda: c.bound(gang) == set(gang))
    placement = c.placement()
    assert len({placement[n] for n in gang}) == 4
    assert placement["other"] not in {placement[n] for n in gang}
    assert settled(c, "train", "True")


def test_v137_gang_is_watched_in_v1beta1_and_a_min_count_decrease_schedules_it(
    cluster: Cluster, phalanx: Serve
) -> None:
    """v1.37: the gang is a scheduling.k8s.io/v1beta1 PodGroup (v1alpha2 is gone), its condition is v1.37's
    PodGroupInitiallyScheduled, and gang.minCount is mutable: lowering it lets the gang that did not fit bind."""
    c = cluster
    if not c.v137:
        pytest.skip("v1.37: v1beta1 PodGroups and a mutable gang minCount")
    for i in range(2):
        c.node(f"{c.ns}-n{i}", cpu="1")
    pg = c.pod_group("elastic", 3, disruptionMode={"all": {}})
    assert pg["apiVersion"] == "scheduling.k8s.io/v1beta1"
    gang = [f"e{i}" for i in range(3)]
    for name in gang:
        c.pod(name, group="elastic")
    cond = wait_for("the gang to be found unschedulable", lambda: settled(c, "elastic", "False"))
    assert (cond["type"], cond["reason"]) == ("PodGroupInitiallyScheduled", "Unschedulable")
    assert c.bound(gang) == set()
    patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    path = f"{c.scheduling}/namespaces/{c.ns}/podgroups/elastic"
    changed = c.cp.request("PATCH", path, patch, "application/merge-patch+json")
    wait_for("two members to bind", lambda: len(c.bound(gang)) == 2)
    cond = wait_for("the gang's condition", lambda: settled(c, "elastic", "True"))
    assert (cond["type"], cond["reason"]) == ("PodGroupInitiallyScheduled", "Scheduled")
    # v1.37.2's PodGroup strategy sets no metadata.generation: observedGeneration is 0, omitted, as kube-scheduler's.
    assert cond.get("observedGeneration", 0) == changed["metadata"].get("generation", 0)
    assert not any(x["type"] == "PodGroupScheduled" for x in c.group("elastic")["status"]["conditions"])
    log = phalanx.log.read_text()
    assert "podgroups: watching scheduling.k8s.io/v1beta1" in log
    assert "compositepodgroups: watching scheduling.k8s.io/v1alpha3" in log  # served, and allowed by deploy/ RBAC


def test_v137_composite_pod_group_tree_binds_once_its_root_is_satisfied(cluster: Cluster, phalanx: Serve) -> None:
    """v1.37: a v1alpha3 CompositePodGroup over two v1beta1 child gangs. With room for one child only, its
    minGroupCount 2 binds nothing, not even the child that fits; two more nodes make room and the whole tree binds."""
    c = cluster
    if not c.v137:
        pytest.skip("v1.37: CompositePodGroup (scheduling.k8s.io/v1alpha3)")
    for i in range(2):
        c.node(f"{c.ns}-n{i}", cpu="1")
    root = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "root", "namespace": c.ns},
        "spec": {
            "workloadRef": {"workloadName": "serving", "templateName": "root"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        },
    }
    c.create(f"/apis/scheduling.k8s.io/v1alpha3/namespaces/{c.ns}/compositepodgroups", root)
    members = {"prefill": ["p0", "p1"], "decode": ["d0", "d1"]}
    for child, names in members.items():
        ref = {"workloadName": "serving", "templateName": child}
        c.pod_group(child, 2, workloadRef=ref, parentCompositePodGroupName="root")
        for name in names:
            c.pod(name, group=child)  # 1 cpu each: two nodes hold one child, not both
    every = [n for names in members.values() for n in names]
    for child in members:
        cond = wait_for(f"{child} to be found unschedulable", lambda child=child: settled(c, child, "False"))
        assert (cond["type"], cond["reason"]) == ("PodGroupInitiallyScheduled", "Unschedulable")
    assert c.bound(every) == set()
    for i in range(2, 4):
        c.node(f"{c.ns}-n{i}", cpu="1")
    wait_for("the whole tree to bind", lambda: c.bound(every) == set(every))
    for child in members:
        assert wait_for(f"{child}'s condition", lambda child=child: settled(c, child, "True"))["reason"] == "Scheduled"


def test_two_gangs_competing_for_one_room(cluster: Cluster, phalanx: Serve) -> None:
    c = cluster
    for i in range(4):
        c.node(f"{c.ns}-n{i}", cpu="1")
    members = {g: [f"{g}-{i}" for i in range(3)] for g in ("a", "b")}
    for g in members:
        c.pod_group(g, 3)
    for g, names in members.items():
        for n in names:
            c.pod(n, group=g)
    wait_for("one gang bound", lambda: any(c.bound(ns) == set(ns) for ns in members.values()))
    winner = next(g for g, ns in members.items() if c.bound(ns) == set(ns))
    loser = "b" if winner == "a" else "a"
    wait_for("the other gang to be found unschedulable", lambda: settled(c, loser, "False"))
    wait_for("its members marked unschedulable", lambda: unschedulable(c, members[loser]))
    assert c.bound(members[loser]) == set()
    assert settled(c, winner, "True")


def test_gang_lands_in_one_rack(cluster: Cluster, phalanx: Serve) -> None:
    c = cluster
    rack = "topology.kubernetes.io/rack"
    # Rack a has the most free room in total, but no single node order keeps a gang of four together unless
    # the topology constraint is honoured: the nodes of both racks interleave by name.
    for i in range(6):
        c.node(f"{c.ns}-n{i}", cpu="2", labels={rack: "a" if i % 2 == 0 else "b"})
    names = [f"w{i}" for i in range(4)]
    c.pod_group("train", 4, topology=rack)
    for n in names:
        c.pod(n, group="train")
    wait_for("the gang to bind", lambda: c.bound(names) == set(names))
    nodes = {c.cp.get(f"/api/v1/nodes/{node}")["metadata"]["labels"][rack] for node in c.placement().values()}
    assert len(nodes) == 1


def priority_classes(cp: ControlPlane) -> None:
    for name, value in (("e2e-low", 10), ("e2e-high", 1000)):
        if not cp.exists(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"):
            cp.request(
                "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": name}, "value": value}
            )


def budget(c: Cluster, name: str, app: str, min_available: int) -> None:
    # minAvailable as a number: the disruption controller counts bare pods for it (maxUnavailable and percentages
    # need the pods' controller to know how many are expected, and give bare pods no disruptions at all).
    body = {
        "metadata": {"name": name, "namespace": c.ns},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }
    c.create(f"/apis/policy/v1/namespaces/{c.ns}/poddisruptionbudgets", body)


def allowed(c: Cluster, name: str) -> int | None:
    """status.disruptionsAllowed as the real disruption controller computed it (None before its first pass)."""
    pdb = c.cp.get(f"/apis/policy/v1/namespaces/{c.ns}/poddisruptionbudgets/{name}")
    status = pdb.get("status") or {}
    if status.get("observedGeneration") != pdb["metadata"]["generation"]:
        return None
    return int(status.get("disruptionsAllowed", 0))


def test_preemption_goes_through_eviction_and_budgets(cluster: Cluster, phalanx: Serve) -> None:
    c = cluster
    priority_classes(c.cp)
    c.node(f"{c.ns}-n0", cpu="1")
    c.node(f"{c.ns}-n1", cpu="1")
    kubelet = Kubelet(c, run=True)
    try:
        c.pod("guarded", priority_class="e2e-low", labels={"app": "guarded"})
        c.pod("free", priority_class="e2e-low", labels={"app": "free"})
        wait_for("both low pods to bind", lambda: c.bound(["guarded", "free"]) == {"guarded", "free"})
        budget(c, "keep-guarded", "guarded", 1)
        wait_for("the disruption controller to count the guarded pod", lambda: allowed(c, "keep-guarded") == 0)
        guarded_node = c.placement()["guarded"]

        # One preemptor: the victim without a budget goes, the guarded one stays.
        c.pod("urgent", priority_class="e2e-high")
        wait_for("the preemptor to bind", lambda: c.bound(["urgent"]))
        pods = c.pods()
        assert "free" not in pods
        assert pods["guarded"]["spec"]["nodeName"] == guarded_node
        assert pods["urgent"]["spec"]["nodeName"] != guarded_node

        # A second preemptor can only take the guarded pod's node: the Eviction API refuses (429).
        c.pod("urgent-2", priority_class="e2e-high")
        wait_for("the refused eviction", lambda: refused(c))
        assert "guarded" in c.pods() and not c.bound(["urgent-2"])

        # Once the budget allows it, the retried eviction succeeds and the preemptor binds.
        c.cp.request(
            "PATCH",
            f"/apis/policy/v1/namespaces/{c.ns}/poddisruptionbudgets/keep-guarded",
            {"spec": {"minAvailable": 0}},
            "application/merge-patch+json",
        )
        wait_for("the second preemptor to bind", lambda: c.bound(["urgent-2"]), timeout=90)
        assert "guarded" not in c.pods()
        assert c.placement()["urgent-2"] == guarded_node
    finally:
        kubelet.close()


def refused(c: Cluster) -> bool:
    """phalanx marked the guarded victim as not disrupted, quoting the API server's refusal (a 429 from the
    Eviction API because of the budget)."""
    conds = (c.pods()["guarded"].get("status") or {}).get("conditions") or []
    return any(
        x["type"] == "DisruptionTarget" and x["status"] == "False" and "disruption budget" in x.get("message", "")
        for x in conds
    )


# --- DRA ---------------------------------------------------------------------------------------------------------

DRIVER = "gpu.e2e.phalanx.dev"


def gpu_objects(c: Cluster, nodes: list[str], per_node: int) -> None:
    """A DeviceClass for the driver and one ResourceSlice per node, as a DRA driver's kubelet plugin publishes."""
    if not c.cp.exists(f"/apis/resource.k8s.io/v1/deviceclasses/{DRIVER}"):
        cls = {
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
        }
        c.create("/apis/resource.k8s.io/v1/deviceclasses", cls)
    for node in nodes:
        devices = [
            {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}, "capacity": {"memory": {"value": "80Gi"}}}
            for i in range(per_node)
        ]
        body = {
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
        c.create("/apis/resource.k8s.io/v1/resourceslices", body)


def claim_template(c: Cluster, name: str, count: int) -> None:
    body = {
        "metadata": {"name": name, "namespace": c.ns},
        "spec": {
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": count}}]}}
        },
    }
    c.create(f"/apis/resource.k8s.io/v1/namespaces/{c.ns}/resourceclaimtemplates", body)


def claims(c: Cluster) -> dict[str, dict[str, Any]]:
    items = c.cp.get(f"/apis/resource.k8s.io/v1/namespaces/{c.ns}/resourceclaims")["items"]
    return {x["metadata"]["name"]: x for x in items}


def delete_slices(c: Cluster) -> None:
    for node in c.nodes:
        with contextlib.suppress(RequestError):  # best effort: cluster-scoped, outlives the namespace
            c.cp.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{node}-{DRIVER}")


def test_dra_claims_from_templates_are_allocated_in_prebind(cluster: Cluster, phalanx: Serve) -> None:
    c = cluster
    nodes = [f"{c.ns}-n{i}" for i in range(2)]
    for n in nodes:
        c.node(n, cpu="8")
    gpu_objects(c, nodes, per_node=2)
    claim_template(c, "two-gpus", 2)
    try:
        names = ["a", "b", "c"]
        for n in names:
            c.pod(n, claims=[{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}])
        # Two nodes with two GPUs each: two pods run, the third waits for GPUs.
        wait_for("two pods to bind", lambda: len(c.bound(names)) == 2)
        wait_for("the third marked unschedulable", lambda: unschedulable(c, sorted(set(names) - c.bound(names))))
        made = claims(c)
        pods = c.pods()
        for n in c.bound(names):
            status = pods[n]["status"]["resourceClaimStatuses"]
            claim = made[status[0]["resourceClaimName"]]
            alloc = claim["status"]["allocation"]
            results = alloc["devices"]["results"]
            assert {r["pool"] for r in results} == {pods[n]["spec"]["nodeName"]}
            assert len({r["device"] for r in results}) == 2
            assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pods[n]["metadata"]["uid"]]
            assert alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
                pods[n]["spec"]["nodeName"]
            ]
    finally:
        delete_slices(c)


def test_device_taint_rule_keeps_its_device_from_claims_until_deleted(cluster: Cluster, phalanx: Serve) -> None:
    """v1.37: a resource.k8s.io/v1 DeviceTaintRule taints the only GPU (NoSchedule), so the pod that claims it
    waits; serve watches the rule and, once it is deleted, allocates the GPU and binds the pod."""
    c = cluster
    if not c.v137:
        pytest.skip("v1.37: DeviceTaintRule in resource.k8s.io/v1")
    node = f"{c.ns}-n0"
    c.node(node, cpu="8")
    gpu_objects(c, [node], per_node=1)
    claim_template(c, "one-gpu", 1)
    rule = f"{c.ns}-broken-gpu"
    body = {
        "metadata": {"name": rule},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "pool": node, "device": "gpu-0"},
            "taint": {"key": "e2e.phalanx.dev/broken", "value": "ecc", "effect": "NoSchedule"},
        },
    }
    c.create("/apis/resource.k8s.io/v1/devicetaintrules", body)
    try:
        c.pod("p", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
        wait_for("the pod marked unschedulable", lambda: unschedulable(c, ["p"]))
        assert c.bound(["p"]) == set()
        c.cp.request("DELETE", f"/apis/resource.k8s.io/v1/devicetaintrules/{rule}")
        wait_for("the pod to bind once the rule is gone", lambda: c.bound(["p"]) == {"p"})
    finally:
        with contextlib.suppress(RequestError):
            c.cp.request("DELETE", f"/apis/resource.k8s.io/v1/devicetaintrules/{rule}")
        delete_slices(c)


def test_dra_pod_group_claim_is_shared_by_the_gang(cluster: Cluster, phalanx: Serve) -> None:
    c = cluster
    nodes = [f"{c.ns}-n{i}" for i in range(2)]
    for n in nodes:
        c.node(n, cpu="8")
    gpu_objects(c, nodes, per_node=2)
    claim_template(c, "one-gpu", 1)
    members = ["w0", "w1"]
    try:
        c.pod_group("train", 2, resourceClaims=[{"name": "shared", "resourceClaimTemplateName": "one-gpu"}])
        wait_for("the controller to make the PodGroup's claim", lambda: claims(c))
        for n in members:
            c.pod(n, group="train", claims=[{"name": "shared", "resourceClaimTemplateName": "one-gpu"}])
        wait_for("the gang to bind", lambda: c.bound(members) == set(members))
        made = claims(c)
        assert len(made) == 1, sorted(made)  # the members use the group's claim, none of their own
        claim = next(iter(made.values()))
        reserved = claim["status"]["reservedFor"]
        assert [(r["apiGroup"], r["resource"], r["name"]) for r in reserved] == [
            ("scheduling.k8s.io", "podgroups", "train")
        ]
        node = claim["status"]["allocation"]["devices"]["results"][0]["pool"]
        assert set(c.placement().values()) == {node}  # node-local device: every member on its node
    finally:
        delete_slices(c)


# --- Job integration ---------------------------------------------------------------------------------------------


def job(name: str, ns: str, scheduling: dict[str, Any] | None = None) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "1"}}}
    spec: dict[str, Any] = {
        "parallelism": 3,
        "completions": 3,
        "completionMode": "Indexed",
        "template": {"spec": {"schedulerName": "phalanx", "restartPolicy": "Never", "containers": [container]}},
    }
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_indexed_job_is_gang_scheduled_through_the_workload_the_controller_makes(
    cluster: Cluster, phalanx: Serve
) -> None:
    """v1.36 (phase 1): an Indexed Job with completions == parallelism > 1 gets a gang Workload and PodGroup.
    v1.37 (phase 2): the Job says so in spec.scheduling (gang minCount defaults to parallelism)."""
    c = cluster
    for i in range(3):
        c.node(f"{c.ns}-n{i}", cpu="1")
    c.create(
        f"/apis/batch/v1/namespaces/{c.ns}/jobs",
        job("train", c.ns, {"schedulingPolicy": {"gang": {}}} if c.v137 else None),
    )
    pods = wait_for("the Job's three pods", lambda: len(c.pods()) == 3 and c.pods())
    groups = {(p["spec"].get("schedulingGroup") or {}).get("podGroupName") for p in pods.values()}
    assert len(groups) == 1 and None not in groups, groups
    group = groups.pop()
    pg = c.group(group)
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert [o["kind"] for o in pg["metadata"]["ownerReferences"]] == ["Job", "Workload"]
    wait_for("the whole Job to bind", lambda: len(c.bound()) == 3)
    assert settled(c, group, "True")


def test_job_that_asks_for_no_gang_is_scheduled_pod_by_pod(cluster: Cluster, phalanx: Serve) -> None:
    """A Job that asks for no gang: v1.36 makes no Workload for a NonIndexed Job; v1.37 gives every Job a Workload
    and a basic PodGroup unless spec.scheduling asks for a gang. Either way its pods are scheduled one by one:
    two of three fit here, and two bind."""
    c = cluster
    for i in range(2):
        c.node(f"{c.ns}-n{i}", cpu="1")
    body = job("plain", c.ns)
    body["spec"]["completionMode"] = "NonIndexed"
    c.create(f"/apis/batch/v1/namespaces/{c.ns}/jobs", body)
    pods = wait_for("the Job's three pods", lambda: len(c.pods()) == 3 and c.pods())
    groups = {(p["spec"].get("schedulingGroup") or {}).get("podGroupName") for p in pods.values()}
    if c.v137:
        assert len(groups) == 1 and None not in groups, groups
        group = groups.pop()
        assert c.group(group)["spec"]["schedulingPolicy"] == {"basic": {}}
    else:
        assert groups == {None}
    wait_for("two of the three pods to bind", lambda: len(c.bound()) == 2)
    wait_for("the third marked unschedulable", lambda: unschedulable(c, sorted(set(pods) - c.bound())))
    if c.v137:
        assert settled(c, group, "True")  # basic: one placed pod is enough
