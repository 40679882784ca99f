"""``phalanx serve`` end to end through the test API server: the real client over loopback HTTP."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

import pytest

from kube.apiserver import APIServer, Store
from kube.conftest import Instance, condition, node, pdb, pod, pod_group


def _events(srv: APIServer, reason: str) -> list[dict]:
    return [e for e in list(srv.store.objects["events"].values()) if e["reason"] == reason]


def test_gang_members_are_bound_together(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    for i in range(2):
        st.create("nodes", node(f"n{i}", cpu="4"))
    st.create("podgroups", pod_group("g", 4))
    for i in range(4):
        st.create("pods", pod(f"p{i}", "g", cpu="2"))
    start()
    assert st.wait_for(lambda: len(st.bindings) == 4)
    assert st.wait_for(lambda: (condition(st, "g") or {}).get("status") == "True")
    assert all(len(nodes) == 1 for nodes in st.bindings.values())
    assert st.wait_for(lambda: len(_events(apiserver, "Scheduled")) == 4)


def test_gang_that_does_not_fit_binds_nobody(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="4"))
    st.create("podgroups", pod_group("g", 3))
    for i in range(3):
        st.create("pods", pod(f"p{i}", "g", cpu="2"))
    start()
    assert st.wait_for(lambda: (condition(st, "g") or {}).get("status") == "False")
    assert condition(st, "g")["reason"] == "Unschedulable"
    assert st.wait_for(lambda: len({e["regarding"]["name"] for e in _events(apiserver, "FailedScheduling")}) == 3)
    scheduled = (st.get("pods", "default/p0")["status"]["conditions"] or [{}])[0]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert st.bindings == {}


def test_pods_before_their_pod_group_and_other_schedulers(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="8"))
    for i in range(2):
        st.create("pods", pod(f"p{i}", "g"))
    st.create("pods", pod("other", scheduler="default-scheduler"))
    start()
    assert not st.wait_for(lambda: bool(st.bindings), timeout=0.5)  # waiting for their PodGroup
    st.create("podgroups", pod_group("g", 2))
    assert st.wait_for(lambda: set(st.bindings) == {"default/p0", "default/p1"})
    assert "default/other" not in st.bindings


def test_watch_cut_and_expired_resource_version(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="64"))
    inst = start()
    assert st.wait_for(lambda: inst.server.controller.ready())
    st.create("pods", pod("before"))
    assert st.wait_for(lambda: "default/before" in st.bindings)
    st.cut_watches()
    st.create("pods", pod("during"))  # written while no watch is open
    st.compact()  # and the version the reflectors resume from is gone: 410, relist
    st.cut_watches()
    st.create("pods", pod("after"))
    assert st.wait_for(lambda: {"default/during", "default/after"} <= set(st.bindings))
    assert all(len(nodes) == 1 for nodes in st.bindings.values())
    reflector = next(r for r in inst.server.controller.reflectors if r.res.plural == "pods")
    assert reflector.relists >= 2


def test_retries_on_429_500_and_409(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="8"))
    st.create("podgroups", pod_group("g", 2))
    st.fail(lambda m, p: p.endswith("/p0/binding"), 429, times=2)
    st.fail(lambda m, p: p.endswith("/p1/binding"), 500, times=2)
    st.fail(lambda m, p: m == "PATCH" and p.endswith("/podgroups/g/status"), 409, times=1)
    for i in range(2):
        st.create("pods", pod(f"p{i}", "g"))
    start()
    assert st.wait_for(lambda: len(st.bindings) == 2)
    assert st.wait_for(lambda: (condition(st, "g") or {}).get("status") == "True")
    assert st.bindings == {"default/p0": ["n0"], "default/p1": ["n0"]}


def test_member_that_cannot_be_bound_is_reported_on_its_pod_group(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="8"))
    st.create("podgroups", pod_group("g", 2))
    st.fail(lambda m, p: p.endswith("/p1/binding"), 403, times=1)  # forbidden: an answer, not retried
    for i in range(2):
        st.create("pods", pod(f"p{i}", "g"))
    start()
    assert st.wait_for(lambda: any(e["regarding"]["kind"] == "PodGroup" for e in _events(apiserver, "FailedBinding")))
    # the member is re-read and requeued: its gang's other member counts toward minCount, so it binds next time
    assert st.wait_for(lambda: len(st.bindings) == 2)


def test_killed_mid_gang_then_restarted(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="16"))
    st.create("podgroups", pod_group("g", 4))
    st.fail(lambda m, p: p.endswith("/p3/binding"), 500, times=10_000)
    for i in range(4):
        st.create("pods", pod(f"p{i}", "g"))
    first = start("a")
    assert st.wait_for(lambda: len(st.bindings) == 3)
    first.crash()  # p3's binding never went through
    st.faults.clear()
    start("b", lease_duration=0.3)
    assert st.wait_for(lambda: len(st.bindings) == 4)
    assert all(len(nodes) == 1 for nodes in st.bindings.values())  # nothing bound twice


def test_leader_failover(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="64"))
    a = start("a")
    assert st.wait_for(
        lambda: (st.get("leases", "kube-system/phalanx") or {}).get("spec", {}).get("holderIdentity") == "a"
    )
    b = start("b")
    assert b.server.controller.stop.wait(0.3) is False
    st.create("pods", pod("p0"))
    assert st.wait_for(lambda: "default/p0" in st.bindings)
    assert not b.server.elector.leading.is_set()
    a.crash()
    assert st.wait_for(lambda: b.server.elector.leading.is_set())
    st.create("pods", pod("p1"))
    assert st.wait_for(lambda: "default/p1" in st.bindings)
    lease = st.get("leases", "kube-system/phalanx")["spec"]
    assert (lease["holderIdentity"], lease["leaseTransitions"]) == ("b", 1)
    b.stop()  # graceful: the lease is released
    assert st.get("leases", "kube-system/phalanx")["spec"]["holderIdentity"] == ""


def test_health_ready_and_metrics(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0"))
    st.create("pods", pod("p0"))
    inst = start(health_port=0)
    assert st.wait_for(lambda: "default/p0" in st.bindings)
    port = inst.server.health.server_address[1]
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(f"{base}/healthz", timeout=5) as r:
        assert r.read() == b"ok"
    with urllib.request.urlopen(f"{base}/readyz", timeout=5) as r:
        assert r.status == 200
    assert st.wait_for(lambda: inst.server.metrics.get("phalanx_bindings_total", result="bound") == 1)
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as r:
        text = r.read().decode()
    assert 'scheduler_schedule_attempts_total{profile="phalanx",result="scheduled"} 1' in text
    assert "scheduler_scheduling_attempt_duration_seconds_count 1" in text
    assert 'scheduler_pending_pods{queue="active"} 0' in text


def test_older_cluster_uses_the_crd_group_and_the_pod_label(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.served_groups = ("scheduling.phalanx.dev/v1alpha2",)
    st.create("nodes", node("n0", cpu="4"))
    crd_group = {**pod_group("g", 2), "apiVersion": "scheduling.phalanx.dev/v1alpha2"}
    st.create("podgroups", crd_group)
    for i in range(3):  # minCount 2 of 3 labelled members; 2 CPUs each: only two fit, together
        p = pod(f"p{i}", cpu="2")
        p["metadata"]["labels"] = {"scheduling.phalanx.dev/pod-group": "g"}
        st.create("pods", p)
    start()
    assert st.wait_for(lambda: len(st.bindings) == 2)
    assert st.wait_for(lambda: (condition(st, "g") or {}).get("status") == "True")
    assert st.get("podgroups", "default/g")["apiVersion"] == "scheduling.phalanx.dev/v1alpha2"


def test_cluster_without_the_workload_api_still_schedules_pods(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.served_groups = ()
    st.create("nodes", node("n0"))
    st.create("pods", pod("p0"))
    inst = start()
    assert st.wait_for(lambda: "default/p0" in st.bindings)
    assert inst.server.controller.ready()


def test_generic_workload_off_schedules_members_pod_by_pod_and_watches_no_pod_groups(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    """--feature-gates GenericWorkload=false: like kube-scheduler without the gate, serve neither watches PodGroups
    nor waits for a gang: the two members that fit bind, the third does not, and no condition is written."""
    from phalanx.scheduling.config import SchedulerConfig, default_profile, with_mode

    st = apiserver.store
    st.create("nodes", node("n0", cpu="4"))
    st.create("podgroups", pod_group("g", 3))
    for i in range(3):
        st.create("pods", pod(f"p{i}", "g", cpu="2"))
    config = with_mode(SchedulerConfig([default_profile("phalanx")]), None, {"GenericWorkload": False})
    inst = start(config=config)
    assert "podgroups" not in inst.server.controller.resources and "workloads" not in inst.server.controller.resources
    assert st.wait_for(lambda: len(st.bindings) == 2)
    assert condition(st, "g") is None


def _preemption_setup(st: Store) -> None:
    st.create("nodes", node("n0", cpu="2"))
    st.create("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    low = pod("low", cpu="2")
    low["spec"]["nodeName"] = "n0"
    st.create("pods", low)
    high = pod("high", cpu="2")
    high["spec"]["priorityClassName"] = "high"
    st.create("pods", high)


@pytest.mark.parametrize("removal", ["eviction", "deletion"])
def test_preemptor_is_bound_only_after_its_victim_is_gone(
    apiserver: APIServer, start: Callable[..., Instance], removal: str
) -> None:
    st = apiserver.store
    _preemption_setup(st)
    inst = start(victim_removal=removal)
    assert st.wait_for(lambda: st.bindings.get("default/high") == ["n0"])
    assert st.requests.get("DELETE", 0) == (1 if removal == "deletion" else 0)  # else POST pods/low/eviction
    removed = "evicted" if removal == "eviction" else "deleted"
    assert st.wait_for(lambda: inst.server.metrics.get("phalanx_preemption_victims_total", result=removed) == 1)
    deleted = [(rv, o) for rv, res, etype, o in st.history if res == "pods" and etype == "DELETED"]
    assert [o["metadata"]["name"] for _, o in deleted] == ["low"]
    victim = deleted[0][1]
    cond = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["status"], cond["reason"]) == ("True", "PreemptionByScheduler")
    bound_at = next(
        rv
        for rv, res, etype, o in st.history
        if res == "pods" and o["metadata"]["name"] == "high" and o["spec"].get("nodeName")
    )
    assert deleted[0][0] < bound_at  # the victim was gone before the preemptor was bound

    def nominated() -> list[dict]:
        return [
            o
            for _, res, _, o in st.history
            if res == "pods" and o["metadata"]["name"] == "high" and o.get("status", {}).get("nominatedNodeName")
        ]

    # the nomination is written on the binder's pool, concurrently with the victim's removal
    assert st.wait_for(lambda: bool(nominated()))
    assert nominated()[0]["status"]["nominatedNodeName"] == "n0"
    assert st.wait_for(lambda: _events(apiserver, "Preempted"))


def test_preemptor_waits_while_its_victim_is_terminating(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    """A victim on a node is deleted gracefully: it keeps its node (terminating) until its kubelet finishes, and
    the preemptor is bound only after that, as against a real kube-apiserver."""
    st = apiserver.store
    st.kubelet = False
    _preemption_setup(st)
    start()
    assert st.wait_for(lambda: bool((st.get("pods", "default/low") or {}).get("metadata", {}).get("deletionTimestamp")))
    assert st.wait_for(lambda: bool((st.get("pods", "default/high") or {}).get("status", {}).get("nominatedNodeName")))
    assert "default/high" not in st.bindings  # the node is still full
    st.kubelet = True
    st.delete_pod("default/low")
    assert st.wait_for(lambda: st.bindings.get("default/high") == ["n0"])
    events = [(etype, o) for _, res, etype, o in st.history if res == "pods"]
    gone = next(i for i, (etype, o) in enumerate(events) if etype == "DELETED" and o["metadata"]["name"] == "low")
    bound = next(i for i, (_, o) in enumerate(events) if o["metadata"]["name"] == "high" and o["spec"].get("nodeName"))
    assert gone < bound  # bound only once the terminating victim was really gone


@pytest.mark.parametrize(("removal", "path"), [("eviction", "/pods/low/eviction"), ("deletion", "/pods/low")])
def test_victim_that_cannot_be_removed_keeps_its_node(
    apiserver: APIServer, start: Callable[..., Instance], removal: str, path: str
) -> None:
    st = apiserver.store
    st.fail(lambda m, p: m in ("POST", "DELETE") and p.endswith(path), 403, times=1)
    _preemption_setup(st)
    start(victim_removal=removal)
    assert st.wait_for(lambda: not any(f.times for f in st.faults))
    # the preemptor is re-read and requeued; the next attempt preempts again and succeeds
    assert st.wait_for(lambda: st.bindings.get("default/high") == ["n0"])
    assert st.get("pods", "default/low") is None
    assert st.bindings == {"default/high": ["n0"]}


def test_namespace_labels_reach_the_engine_and_node_changes_rebuild_it(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("namespaces", {"metadata": {"name": "team-a", "labels": {"tier": "gold"}}})
    st.create("nodes", node("n0", cpu="1"))
    inst = start()
    st.create("pods", pod("p0", cpu="2"))  # does not fit until a larger node appears
    assert st.wait_for(lambda: _events(apiserver, "FailedScheduling"))
    st.create("nodes", node("n1", cpu="4"))
    assert st.wait_for(lambda: st.bindings.get("default/p0") == ["n1"])
    labels = inst.server.controller.engine.state.table.namespace_labels
    assert labels["team-a"]["tier"] == "gold"


def test_v1beta1_pod_groups_are_converted_and_their_condition_keeps_its_v137_name(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.served_groups = ("scheduling.k8s.io/v1beta1",)
    st.create("nodes", node("n0", cpu="4"))
    pg = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {
            "workloadRef": {"workloadName": "w", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "disruptionMode": {"all": {}},
        },
    }
    st.create("podgroups", pg)
    for i in range(2):
        st.create("pods", pod(f"p{i}", "g"))
    start()
    assert st.wait_for(lambda: len(st.bindings) == 2)
    assert st.wait_for(lambda: bool(st.get("podgroups", "default/g").get("status", {}).get("conditions")))
    conds = st.get("podgroups", "default/g")["status"]["conditions"]
    assert [(c["type"], c["status"]) for c in conds] == [("PodGroupInitiallyScheduled", "True")]


def test_eviction_refused_by_a_budget_is_retried_later(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("poddisruptionbudgets", pdb("low", {"app": "low"}, allowed=0))
    st.create("nodes", node("n0", cpu="2"))
    st.create("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    low = pod("low", cpu="2")
    low["metadata"]["labels"] = {"app": "low"}
    low["spec"]["nodeName"] = "n0"
    st.create("pods", low)
    high = pod("high", cpu="2")
    high["spec"]["priorityClassName"] = "high"
    st.create("pods", high)
    inst = start()
    inst.server.controller.refused_backoff = 0.1
    metrics = inst.server.metrics
    # the only candidate is protected (kube-scheduler may violate a budget as a last resort; the API server refuses)
    assert st.wait_for(lambda: metrics.get("phalanx_preemption_victims_total", result="refused") >= 1)
    assert st.get("pods", "default/low") is not None and "default/high" not in st.bindings
    assert st.wait_for(lambda: _disruption_target(st, "low") == "False")  # not left claiming it is being disrupted
    budget = st.get("poddisruptionbudgets", "default/low")
    st.update("poddisruptionbudgets", {**budget, "status": {**budget["status"], "disruptionsAllowed": 1}})
    assert st.wait_for(lambda: st.bindings.get("default/high") == ["n0"])
    assert st.get("pods", "default/low") is None
    assert st.get("poddisruptionbudgets", "default/low")["status"]["disruptedPods"].keys() == {"low"}


def _disruption_target(st: Store, name: str) -> str | None:
    conds = (st.get("pods", f"default/{name}") or {}).get("status", {}).get("conditions", [])
    return next((c["status"] for c in conds if c["type"] == "DisruptionTarget"), None)


def test_writes_from_the_writer_process(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    for i in range(2):
        st.create("nodes", node(f"n{i}", cpu="4"))
    st.create("podgroups", pod_group("g", 4))
    st.fail(lambda m, p: p.endswith("/p3/binding"), 500, times=1)  # retried in the child
    for i in range(4):
        st.create("pods", pod(f"p{i}", "g", cpu="2"))
    inst = start(writer_process=True)
    assert st.wait_for(lambda: len(st.bindings) == 4)
    assert st.wait_for(lambda: (condition(st, "g") or {}).get("status") == "True")
    assert st.wait_for(lambda: len(_events(apiserver, "Scheduled")) == 4)
    assert st.wait_for(lambda: inst.server.metrics.get("phalanx_bindings_total", result="bound") == 4)
    child = inst.server.binder.child
    inst.stop()
    assert not child.is_alive()


def test_a_writer_process_that_dies_stops_the_scheduler(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0"))
    inst = start(writer_process=True)
    assert st.wait_for(lambda: inst.server.controller.ready())
    inst.server.binder.child.kill()  # as the OOM killer would
    inst.thread.join(10)
    assert not inst.thread.is_alive() and inst.server.writer_failed


def test_a_crash_kills_the_writer_process_so_nothing_more_is_written(
    apiserver: APIServer, start: Callable[..., Instance]
) -> None:
    st = apiserver.store
    st.create("nodes", node("n0"))
    inst = start(writer_process=True)
    assert st.wait_for(lambda: inst.server.controller.ready() and inst.server.binder.ready.is_set())
    child = inst.server.binder.child
    inst.crash()  # a lost lease: no draining
    assert not child.is_alive()
    st.create("pods", pod("p0"))
    assert not st.wait_for(lambda: bool(st.bindings), timeout=0.5)
