"""``serve`` feeds Node watch events to the engine (add_node, update_node, delete_node) instead of rebuilding it:
a new node takes waiting pods, a cordon stops placements, a deleted node leaves the engine with its pods."""

from __future__ import annotations

from collections.abc import Callable

from kube.apiserver import APIServer
from kube.conftest import Instance, node, pod


def test_node_events_reach_the_engine_without_a_rebuild(apiserver: APIServer, start: Callable[..., Instance]) -> None:
    st = apiserver.store
    st.create("nodes", node("n0", cpu="2"))
    inst = start()
    st.create("pods", pod("a", cpu="2"))
    assert st.wait_for(lambda: st.bindings.get("default/a") == ["n0"])
    controller = inst.server.controller
    engine = controller.engine

    cordoned = {**node("n1", cpu="4"), "spec": {"unschedulable": True}}
    st.create("nodes", cordoned)
    assert st.wait_for(lambda: "n1" in engine.state.table.index)
    st.create("pods", pod("b", cpu="2"))
    assert st.wait_for(lambda: engine.recorder.outcomes.get("default/b") is not None)
    assert "default/b" not in st.bindings  # n0 is full and n1 is cordoned

    st.update("nodes", {**st.get("nodes", "n1"), "spec": {}})  # uncordon: NodeUpdate wakes the pod
    assert st.wait_for(lambda: st.bindings.get("default/b") == ["n1"])

    st.delete("nodes", "n0")
    assert st.wait_for(lambda: "n0" not in engine.state.table.index)
    assert "default/a" not in engine.state.placement
    assert controller.engine is engine  # the same engine throughout: no rebuild
