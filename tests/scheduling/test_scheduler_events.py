"""Engine events a live front end feeds: pod updates (our own binds coming back, moves) and PodGroup deletion."""

from __future__ import annotations

from phalanx.api.models import Pod
from phalanx.scheduling.config import SchedulerConfig, default_profile
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod


def _engine() -> Scheduler:
    sched = Scheduler(SchedulerConfig([default_profile("phalanx")]))
    sched.load([make_node("n0").allocatable(cpu="4").obj(), make_node("n1").allocatable(cpu="4").obj()], [])
    return sched


def _pod(name: str, node: str = "") -> Pod:
    b = make_pod(name).requests(cpu="3")
    b.d["spec"]["schedulerName"] = "phalanx"
    return (b.node(node) if node else b).obj()


def test_update_confirming_our_bind_changes_nothing() -> None:
    sched = _engine()
    sched.add_pod(_pod("p"))
    assert sched.run() == 1
    node = sched.recorder.outcomes["default/p"].node
    pi = sched.pods["default/p"]
    sched.update_pod(_pod("p", node or ""))
    assert sched.pods["default/p"] is pi and sched.is_bound("default/p")
    assert int(sched.state.table.pod_count.sum()) == 1


def test_update_to_unbound_requeues_and_to_another_node_moves() -> None:
    sched = _engine()
    sched.add_pod(_pod("p"))
    sched.run()
    sched.update_pod(_pod("p"))  # the binding failed: the API still shows it pending
    assert not sched.is_bound("default/p")
    assert sched.run() == 1
    sched.update_pod(_pod("p", "n1"))  # someone else bound it to n1
    assert sched.state.table.names[sched.state.placement["default/p"]] == "n1"
    assert int(sched.state.table.pod_count.sum()) == 1


def test_deleted_pod_group_gates_its_pods_again() -> None:
    sched = _engine()
    sched.add_pod_group(make_group("g", 2))
    sched.delete_pod_group("default/g")
    for name in ("a", "b"):
        b = make_pod(name).requests(cpu="1").group("g")
        b.d["spec"]["schedulerName"] = "phalanx"
        sched.add_pod(b.obj())
    assert sched.run() == 0
    assert sched.recorder.outcomes["default/a"].reason == "WaitingForPodGroup"
    sched.add_pod_group(make_group("g", 2))
    assert sched.run() == 2
