"""Node events in the engine (add_node, update_node, delete_node), as the simulator and ``serve`` feed them:

- a new node wakes the pods waiting for room; a cordon or taint stops new placements; a deleted node takes its
  pods with it, and every row the state keeps stays right;
- property: after any sequence of node and pod events, the engine is the one a fresh ``load`` of the same nodes and
  pods gives: same accounting, nothing left that could schedule, and the same decisions for new pods.
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.models import Node, Pod, PodGroup
from phalanx.scheduling.cycle.members import bound_members
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _node(name: str, cpu: str = "4") -> Node:
    return make_node(name).allocatable(cpu=cpu).obj()


def _placed(s: Scheduler) -> dict[str, str]:
    return {key: s.state.table.names[row] for key, row in s.state.placement.items()}


def test_pending_pods_schedule_after_add_node() -> None:
    s = Scheduler()
    s.load([_node("n1")], [make_pod(f"p{i}").requests(cpu="3").obj() for i in range(3)])
    assert s.run() == 1
    s.add_node(_node("n0"))  # sorts before n1: n1's row moves
    s.add_node(_node("n2"))
    assert s.run() == 2
    assert sorted(_placed(s).values()) == ["n0", "n1", "n2"]
    assert s.state.table.pod_count.tolist() == [1, 1, 1]
    assert s.state.table.requested[:, s.state.table.resources.column["cpu"]].tolist() == [3000] * 3


def test_bound_pods_of_a_missing_node_are_accounted_when_it_appears() -> None:
    s = Scheduler()
    s.load([_node("n0")], [make_pod("running").requests(cpu="3").node("n1").obj()])
    assert s.is_bound("default/running") and not s.state.placement
    s.add_node(_node("n1"))
    assert _placed(s) == {"default/running": "n1"}
    s.add_pod(make_pod("p").requests(cpu="3").obj())
    s.add_pod(make_pod("q").requests(cpu="3").obj())
    assert s.run() == 1  # n1 is full: only n0 takes one


def test_cordon_and_taint_stop_new_placements_and_lifting_them_wakes_pods() -> None:
    s = Scheduler()
    s.load([_node("n0"), _node("n1")], [make_pod("a").requests(cpu="3").node("n0").obj()])
    s.update_node(make_node("n1").allocatable(cpu="4").unschedulable().obj())
    s.add_pod(make_pod("p").requests(cpu="3").obj())
    assert s.run() == 0
    assert "unschedulable" in s.recorder.outcomes["default/p"].message
    s.update_node(make_node("n1").allocatable(cpu="4").taint("maintenance").obj())
    assert s.run() == 0
    assert "1 node(s) had untolerated taint(s)" in s.recorder.outcomes["default/p"].message
    s.update_node(_node("n1"))  # NodeUpdate: the pod is tried again
    assert s.run() == 1
    assert _placed(s)["default/p"] == "n1"


def test_growing_allocatable_is_a_node_update_that_helps() -> None:
    s = Scheduler()
    s.load([_node("n0", "2")], [make_pod("p").requests(cpu="3").obj()])
    assert s.run() == 0
    s.update_node(make_node("n0").allocatable(cpu="2").label("unrelated", "x").obj())
    assert s.run() == 0
    s.update_node(_node("n0", "4"))
    assert s.run() == 1


def test_irrelevant_node_update_requeues_nothing() -> None:
    s = Scheduler()
    s.load([_node("n0", "2")], [make_pod("p").requests(cpu="3").obj()])
    s.run()
    generation = s.state.table.generation
    changed = make_node("n0").allocatable(cpu="2").obj()
    changed.metadata.annotations["note"] = "x"
    s.update_node(changed)
    assert s.state.table.generation == generation
    assert "default/p" in s.queue.unschedulable and len(s.queue) == 0


def test_delete_node_removes_the_node_and_its_pods() -> None:
    s = Scheduler()
    pods = [make_pod("a").requests(cpu="1").node("n0").obj(), make_pod("b").requests(cpu="1").node("n1").obj()]
    pods.append(make_pod("c").requests(cpu="1").node("n2").pod_affinity("podAntiAffinity", "zone").obj())
    s.load([_node("n0"), _node("n1"), _node("n2")], pods)
    gone = s.delete_node("n1")
    assert [pi.key for pi in gone] == ["default/b"]
    assert s.state.table.names == ["n0", "n2"] and s.state.table.index == {"n0": 0, "n2": 1}
    assert _placed(s) == {"default/a": "n0", "default/c": "n2"}
    assert "default/b" not in s.pods and "default/b" not in s.recorder.outcomes
    assert [sorted(p) for p in s.state.node_pods] == [["default/a"], ["default/c"]]
    (group,) = s.state.table.affinity_groups.values()
    assert group.count.tolist() == [0, 1]
    assert s.delete_node("n1") == []  # already gone: nothing happens
    s.delete_pod("default/b")  # the API server's later delete of the pod is harmless


def test_gang_member_on_a_deleted_node_no_longer_counts() -> None:
    s = Scheduler()
    members = [make_pod(f"m{i}").requests(cpu="3").group("g").node(f"n{i}").obj() for i in range(2)]
    s.load([_node("n0"), _node("n1")], members, [make_group("g", 2)])
    assert bound_members(s, s.groups.groups["default/g"]) == 2
    s.delete_node("n1")
    assert bound_members(s, s.groups.groups["default/g"]) == 1


# --- property: node events give the engine a fresh load would give ---------------------------------------------


def _pod_builder(draw: st.DrawFn, name: str) -> Any:
    b = make_pod(name).requests(cpu=f"{draw(st.integers(1, 6)) * 500}m", memory=f"{draw(st.integers(1, 4))}Gi")
    b.created(f"2026-01-01T00:00:{draw(st.integers(0, 9)):02d}Z")
    if draw(st.integers(0, 3)) == 0:
        b.request("nvidia.com/gpu", draw(st.sampled_from([1, 4])))
    if draw(st.integers(0, 4)) == 0:
        b.selector(zone=draw(st.sampled_from(["a", "b"])))
    if draw(st.booleans()):
        b.toleration(key="dedicated", operator="Exists")
    if draw(st.integers(0, 5)) == 0:
        b.labels(app="web").pod_affinity("podAntiAffinity", "zone", labelSelector={"matchLabels": {"app": "web"}})
    return b


def _node_version(draw: st.DrawFn, name: str) -> Node:
    b = make_node(name).allocatable(cpu=str(draw(st.integers(1, 8))), memory=f"{draw(st.integers(2, 16))}Gi")
    if draw(st.booleans()):
        b.resource("nvidia.com/gpu", draw(st.sampled_from([4, 8])))
    if draw(st.booleans()):
        b.label("zone", draw(st.sampled_from(["a", "b"])))
    if draw(st.integers(0, 4)) == 0:
        b.taint("dedicated", "x")
    if draw(st.integers(0, 5)) == 0:
        b.unschedulable()
    return b.obj()


Event = tuple[str, Any]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[PodGroup], list[Event], list[Pod]]:
    names = [f"n{i}" for i in range(7)]
    first = [_node_version(draw, n) for n in names if draw(st.booleans())]
    pods = [_pod_builder(draw, f"p{i}").obj() for i in range(draw(st.integers(0, 6)))]
    if draw(st.booleans()):
        # a pod already running on a node that may not exist yet
        pods.append(_pod_builder(draw, "running").node(draw(st.sampled_from(names))).obj())
    groups = [make_group("g", 2)]
    events: list[Event] = []
    for serial in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["add", "update", "delete", "pods", "gang", "run"]))
        if kind in ("add", "update"):
            events.append((kind, _node_version(draw, draw(st.sampled_from(names)))))
        elif kind == "delete":
            events.append((kind, draw(st.sampled_from(names))))
        elif kind == "pods":
            events.append((kind, [_pod_builder(draw, f"e{serial}-{i}").obj() for i in range(draw(st.integers(1, 3)))]))
        elif kind == "gang":
            template = _pod_builder(draw, "t").group("g").d
            gang = [msgspec.convert({**template, "metadata": {"name": f"g{serial}-{i}"}}, Pod) for i in range(2)]
            events.append(("pods", gang))
        else:
            events.append(("run", None))
    probe = [_pod_builder(draw, f"probe-{i}").obj() for i in range(4)]
    return first, pods, groups, events, probe


def _apply(s: Scheduler, nodes: dict[str, Node], kind: str, arg: Any) -> None:
    if kind in ("add", "update"):
        nodes[arg.metadata.name] = arg
        (s.add_node if kind == "add" else s.update_node)(arg)
    elif kind == "delete":
        nodes.pop(arg, None)
        s.delete_node(arg)
    elif kind == "pods":
        for pod in arg:
            s.add_pod(pod)
    else:
        s.run()


def _as_snapshot(s: Scheduler) -> list[Pod]:
    """The pods as the API would show them now: placed ones with their node, pending ones as they came."""
    out = []
    for key, pi in sorted(s.pods.items()):
        row = s.state.placement.get(key)
        pod = pi.pod
        if row is not None and not pod.spec.node_name:
            pod = msgspec.structs.replace(
                pod, spec=msgspec.structs.replace(pod.spec, node_name=s.state.table.names[row])
            )
        out.append(pod)
    return out


def _accounting(s: Scheduler) -> dict[str, Any]:
    t = s.state.table
    # Column order depends on which resources were seen first; compare by name, leaving out all-zero columns.
    cols = [
        (name, c)
        for name, c in sorted(t.resources.column.items())
        if t.allocatable[:, c].any() or t.requested[:, c].any()
    ]
    return {
        "names": list(t.names),
        "allocatable": {name: t.allocatable[:, c].tolist() for name, c in cols},
        "max_pods": t.max_pods.tolist(),
        "requested": {name: t.requested[:, c].tolist() for name, c in cols},
        "nonzero": t.nonzero_requested.tolist(),
        "pods": t.pod_count.tolist(),
        "node_pods": [sorted(p) for p in s.state.node_pods],
        "placed": _placed(s),
        "affinity": {k: g.count.tolist() for k, g in sorted(t.affinity_groups.items())},
        "unschedulable": t.unschedulable.tolist(),
    }


@SETTINGS
@given(histories())
def test_node_events_equal_a_fresh_load(
    history: tuple[list[Node], list[Pod], list[PodGroup], list[Event], list[Pod]],
) -> None:
    first, pods, groups, events, probe = history
    live = Scheduler(seed=7)
    live.load(first, pods, groups)
    nodes = {n.metadata.name: n for n in first}
    live.run()
    for kind, arg in events:
        _apply(live, nodes, kind, arg)
    live.run()

    fresh = Scheduler(seed=7)
    fresh.load(sorted(nodes.values(), key=lambda n: n.metadata.name), _as_snapshot(live), groups)
    assert fresh.run() == 0  # the queueing hints woke every pod a node event could help
    assert _accounting(live) == _accounting(fresh)

    for pod in probe:
        live.add_pod(pod)
        fresh.add_pod(pod)
    assert live.run() == fresh.run()
    assert _placed(live) == _placed(fresh)
