"""``phalanx serve`` against a v1.37 API (``scheduling.k8s.io/v1beta1`` and ``v1alpha3``, ``resource.k8s.io/v1``
DeviceTaintRules) through the test API server, and elastic gangs: a live PodGroup's ``minCount`` changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kube.apiserver import APIServer, Store
from kube.conftest import Instance, node, pod
from kube.test_serve_dra import GPU_CLASS, ONE_GPU, gpu_slice
from phalanx.snapshot.schedule import schedule_snapshot

V137 = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3")


def v1beta1_gang(name: str, min_count: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec},
    }


def conditions(st: Store, group: str, res: str = "podgroups") -> list[tuple[str, str, str]]:
    pg = st.get(res, f"default/{group}") or {}
    return [(c["type"], c["status"], c["reason"]) for c in (pg.get("status") or {}).get("conditions") or []]


def set_min_count(st: Store, group: str, min_count: int) -> None:
    pg = st.get("podgroups", f"default/{group}")
    assert pg is not None
    spec = {**pg["spec"], "schedulingPolicy": {"gang": {"minCount": min_count}}}
    st.update("podgroups", {**pg, "metadata": {**pg["metadata"], "generation": 2}, "spec": spec})


def test_v137_server_is_watched_in_v1beta1_and_v1alpha3_and_gets_v137_conditions(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.served_groups = V137
    st.create("nodes", node("n0", cpu="4"))
    st.create("podgroups", v1beta1_gang("listed", 2, preemptionPolicy="Never", disruptionMode={"all": {}}))
    for i in range(2):
        st.create("pods", pod(f"l{i}", "listed"))
    inst = start()
    # Listed (items without apiVersion: decoded in the watched version) and watched objects alike.
    assert st.wait_for(lambda: conditions(st, "listed") == [("PodGroupInitiallyScheduled", "True", "Scheduled")])
    st.create("podgroups", v1beta1_gang("watched", 2))
    for i in range(2):
        st.create("pods", pod(f"w{i}", "watched"))
    assert st.wait_for(lambda: conditions(st, "watched") == [("PodGroupInitiallyScheduled", "True", "Scheduled")])
    assert st.wait_for(lambda: len(st.bindings) == 4)
    ctl = inst.server.controller
    assert ctl.apis == {
        "podgroups": "scheduling.k8s.io/v1beta1",
        "workloads": "scheduling.k8s.io/v1beta1",
        "compositepodgroups": "scheduling.k8s.io/v1alpha3",
    }
    assert ctl.engine is not None
    spec = ctl.engine.groups.get("default/listed").pod_group.spec  # v1.37 fields reach the engine
    assert spec is not None and spec.preemption_policy == "Never" and spec.disruption_mode.all is not None


def test_composite_pod_groups_reach_the_engine_and_follow_the_watch(
    apiserver: APIServer, start: Callable[..., Instance], tmp_path: Path
) -> None:
    st = apiserver.store
    st.served_groups = V137
    st.create("nodes", node("n0"))

    def composite(name: str, groups: int) -> dict[str, Any]:
        spec = {
            "workloadRef": {"workloadName": "serving", "templateName": name},
            "schedulingPolicy": {"gang": {"minGroupCount": groups}},
        }
        return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}

    st.create("compositepodgroups", composite("inference", 3))
    inst = start()
    ctl = inst.server.controller

    def delivered(engine: Any) -> dict[str, Any]:
        return {c.key: c for c in engine.composite_statuses()} if engine is not None else {}

    assert st.wait_for(lambda: "default/inference" in delivered(ctl.engine))
    engine = ctl.engine
    assert delivered(engine)["default/inference"].min_group_count == 3
    # The same object as `schedule` delivers it from a snapshot.
    snapshot = tmp_path / "snapshot.yaml"
    doc = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", **composite("inference", 3)}
    snapshot.write_text(json.dumps(doc))
    scheduled, _, _ = schedule_snapshot([str(snapshot)])
    assert scheduled.composite_statuses() == engine.composite_statuses()
    st.delete("compositepodgroups", "default/inference")
    assert st.wait_for(lambda: "default/inference" not in delivered(engine))
    assert ctl.engine is engine  # events, not rebuilds


def test_v136_server_keeps_v1alpha2_and_watches_no_composite_pod_groups(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store  # serves scheduling.k8s.io/v1alpha2 only, like v1.36
    st.create("nodes", node("n0", cpu="4"))
    st.create("podgroups", {"metadata": {"name": "g", "namespace": "default"}, "spec": v1beta1_gang("g", 2)["spec"]})
    for i in range(2):
        st.create("pods", pod(f"p{i}", "g"))
    inst = start()
    assert st.wait_for(lambda: conditions(st, "g") == [("PodGroupScheduled", "True", "Scheduled")])
    assert inst.server.controller.apis["podgroups"] == "scheduling.k8s.io/v1alpha2"


def test_min_count_decrease_schedules_a_gang_that_did_not_fit(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.served_groups = V137
    st.create("nodes", node("n0", cpu="4"))
    st.create("podgroups", v1beta1_gang("g", 3))
    for i in range(3):
        st.create("pods", pod(f"p{i}", "g", cpu="2"))
    start()
    assert st.wait_for(lambda: conditions(st, "g") == [("PodGroupInitiallyScheduled", "False", "Unschedulable")])
    assert st.bindings == {}
    set_min_count(st, "g", 2)  # elastic gang: two members are enough now
    assert st.wait_for(lambda: len(st.bindings) == 2)
    assert st.wait_for(lambda: conditions(st, "g") == [("PodGroupInitiallyScheduled", "True", "Scheduled")])
    assert st.get("podgroups", "default/g")["status"]["conditions"][0]["observedGeneration"] == 2


def test_min_count_decrease_releases_a_gang_waiting_for_its_members(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.served_groups = V137
    st.create("nodes", node("n0", cpu="8"))
    st.create("podgroups", v1beta1_gang("g", 4))
    for i in range(2):
        st.create("pods", pod(f"p{i}", "g"))
    start()
    assert not st.wait_for(lambda: bool(st.bindings), timeout=0.5)  # gated: 2 of its 4 pods exist
    set_min_count(st, "g", 2)
    assert st.wait_for(lambda: set(st.bindings) == {"default/p0", "default/p1"})


def _tainted_device_rule(effect: str = "NoSchedule") -> dict[str, Any]:
    spec = {
        "deviceSelector": {"driver": GPU_CLASS["metadata"]["name"], "pool": "n0", "device": "gpu-0"},
        "taint": {"key": "example.com/broken", "value": "ecc", "effect": effect},
    }
    return {"metadata": {"name": "broken-gpu"}, "spec": spec}


def test_device_taint_rules_are_watched_and_taint_the_devices_they_select(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("deviceclasses", GPU_CLASS)
    st.create("nodes", node("n0"))
    st.create("resourceslices", gpu_slice("n0"))
    st.create("devicetaintrules", _tainted_device_rule())
    for name in ("a", "b"):
        st.create("resourceclaims", {"metadata": {"name": name, "namespace": "default"}, "spec": ONE_GPU})
        p = pod(name)
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
        st.create("pods", p)
    inst = start()
    assert st.wait_for(lambda: inst.server.controller.engine is not None)
    engine = inst.server.controller.engine
    assert st.wait_for(lambda: "default/a" in engine.recorder.outcomes and "default/b" in engine.recorder.outcomes)
    assert not st.wait_for(lambda: bool(st.bindings), timeout=0.5)  # the only GPU is tainted
    st.delete("devicetaintrules", "broken-gpu")
    assert st.wait_for(lambda: len(st.bindings) == 1)  # one of the two gets the GPU once the rule is gone
    assert inst.server.controller.engine is engine  # the rule's deletion was an event, no rebuild


def test_composite_tree_binds_nothing_until_its_root_is_satisfied(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    """A CompositePodGroup with two child gangs and room for one: the root's minGroupCount 2 is not met, so nothing
    is bound, not even the child that fits on its own; a node arriving makes room for both, and the whole tree binds
    with v1.37's condition on each child. (v1.37.2 makes a CompositePodGroup's schedulingPolicy immutable, unlike a
    PodGroup's minCount.)"""
    st = apiserver.store
    st.served_groups = V137
    for n in ("n0", "n1"):
        st.create("nodes", node(n, cpu="2"))
    root = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "metadata": {"name": "root", "namespace": "default"},
        "spec": {
            "workloadRef": {"workloadName": "serving", "templateName": "root"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        },
    }
    st.create("compositepodgroups", root)
    for child in ("prefill", "decode"):
        ref = {"workloadName": "serving", "templateName": child}
        st.create("podgroups", v1beta1_gang(child, 2, workloadRef=ref, parentCompositePodGroupName="root"))
        for i in range(2):
            st.create("pods", pod(f"{child}-{i}", child, cpu="2"))
    start()
    unschedulable = [("PodGroupInitiallyScheduled", "False", "Unschedulable")]
    assert st.wait_for(lambda: conditions(st, "prefill") == unschedulable and conditions(st, "decode") == unschedulable)
    assert st.bindings == {}
    for n in ("n2", "n3"):
        st.create("nodes", node(n, cpu="2"))
    assert st.wait_for(lambda: len(st.bindings) == 4)
    scheduled = [("PodGroupInitiallyScheduled", "True", "Scheduled")]
    ok = st.wait_for(lambda: conditions(st, "prefill") == scheduled and conditions(st, "decode") == scheduled)
    assert ok, (conditions(st, "prefill"), conditions(st, "decode"))
