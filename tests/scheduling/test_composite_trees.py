"""CompositePodGroup trees (v1.37, KEP-6012): a tree is scheduled as one unit from its root, binds only when the
root is satisfied, is resolved top-down over topology, and a malformed tree is Invalid everywhere."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.models import CompositePodGroup, Node, Pod, PodGroup
from phalanx.scheduling.config import SchedulerConfig, with_mode
from phalanx.scheduling.outcome import OutcomeLog
from phalanx.scheduling.rules import RULES, Rules
from phalanx.scheduling.scheduler import Scheduler

from builders import make_node, make_pod

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GREEDY = Rules(**{**{f: getattr(RULES, f) for f in RULES.__slots__}, "composite_min_first_backtracking": False})


def cpg(name: str, min_group: int | None = None, parent: str | None = None, **spec: Any) -> CompositePodGroup:
    policy = {"gang": {"minGroupCount": min_group}} if min_group else {"basic": {}}
    body: dict[str, Any] = {"workloadRef": {"workloadName": "w", "templateName": name}, "schedulingPolicy": policy}
    if parent:
        body["parentCompositePodGroupName"] = parent
    body.update(spec)
    return msgspec.convert({"metadata": {"name": name, "namespace": "default"}, "spec": body}, CompositePodGroup)


def pg(name: str, min_count: int | None, parent: str | None, **spec: Any) -> PodGroup:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    body: dict[str, Any] = {"workloadRef": {"workloadName": "w", "templateName": name}, "schedulingPolicy": policy}
    if parent:
        body["parentCompositePodGroupName"] = parent
    body.update(spec)
    return msgspec.convert({"metadata": {"name": name, "namespace": "default"}, "spec": body}, PodGroup)


def rack(key: str) -> dict[str, Any]:
    return {"schedulingConstraints": {"topology": [{"key": key}]}}


def members(group: str, n: int, cpu: str = "1") -> list[Pod]:
    return [make_pod(f"{group}-{i}").group(group).requests(cpu=cpu).obj() for i in range(n)]


def engine(
    nodes: list[Node],
    groups: list[PodGroup],
    composites: list[CompositePodGroup],
    pods: list[Pod],
    compat: str | None = None,
    rules: Rules | None = None,
) -> tuple[Scheduler, OutcomeLog]:
    log = OutcomeLog()
    config = with_mode(SchedulerConfig(), compat)
    s = Scheduler(config, recorder=log, rules=rules)
    s.load(nodes, pods, groups, composite_pod_groups=composites)
    s.run()
    return s, log


def phases(log: OutcomeLog) -> dict[str, str]:
    return {k.partition("/")[2]: o.phase for k, o in sorted(log.outcomes.items())}


def nodes_of(log: OutcomeLog, prefix: str) -> set[str | None]:
    return {o.node for k, o in log.outcomes.items() if k.partition("/")[2].startswith(prefix)}


def test_a_fitting_child_waits_for_its_unsatisfied_sibling_and_binds_with_it() -> None:
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    groups = [pg("a", 2, "root"), pg("b", 2, "root")]
    pods = members("a", 2) + members("b", 1)
    s, log = engine(nodes, groups, [cpg("root", 2)], pods)
    assert set(phases(log).values()) == {"Waiting"}  # b has 1 of its 2 pods: the tree is not admissible
    s.add_pod(make_pod("b-1").group("b").requests(cpu="1").obj())
    s.run()
    assert set(phases(log).values()) == {"Scheduled"}
    assert s.composite_statuses()[0].condition is not None
    assert s.composite_statuses()[0].condition.status == "True"
    assert s.composite_statuses()[0].satisfied == 2


def test_compat_v136_knows_no_trees_and_schedules_each_pod_group_on_its_own() -> None:
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    groups = [pg("fits", 2, "root"), pg("too-big", 2, "root")]
    pods = members("fits", 2) + members("too-big", 2, cpu="8")
    _, tree = engine(nodes, groups, [cpg("root", 2)], pods, compat="v1.37")
    _, flat = engine(nodes, groups, [cpg("root", 2)], pods, compat="v1.36")
    assert phases(tree)["fits-0"] == "Unschedulable"
    assert phases(flat)["fits-0"] == "Scheduled"


def test_a_basic_composite_pod_group_binds_the_children_that_fit() -> None:
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    groups = [pg("fits", 2, "root"), pg("too-big", 2, "root")]
    pods = members("fits", 2) + members("too-big", 2, cpu="8")
    s, log = engine(nodes, groups, [cpg("root")], pods)
    assert phases(log) == {"fits-0": "Scheduled", "fits-1": "Scheduled"} | {
        "too-big-0": "Unschedulable",
        "too-big-1": "Unschedulable",
    }
    condition = s.condition("default/too-big")
    assert condition is not None and (condition.status, condition.reason) == ("False", "Unschedulable")


@pytest.mark.parametrize("rules", [RULES, GREEDY], ids=["phalanx", "greedy"])
def test_a_three_level_tree_binds_when_every_level_is_satisfied(rules: Rules) -> None:
    nodes = [make_node(f"n{i}").allocatable(cpu="2").obj() for i in range(3)]
    composites = [cpg("root", 2), cpg("mid", 1, parent="root")]
    groups = [pg("leaf1", 2, "mid"), pg("leaf2", 2, "root")]
    s, log = engine(nodes, groups, composites, members("leaf1", 2) + members("leaf2", 2), rules=rules)
    assert set(phases(log).values()) == {"Scheduled"}
    statuses = {c.name: c.condition.status if c.condition else None for c in s.composite_statuses()}
    assert statuses == {"mid": "True", "root": "True"}


@pytest.mark.parametrize("rules", [RULES, GREEDY], ids=["phalanx", "greedy"])
def test_children_are_confined_to_the_domain_their_parent_takes(rules: Rules) -> None:
    # block b1: rack r1 (2 slots)          block b2: racks r3, r4 (2 slots each)
    # root (one block) needs both children, each in one rack: only b2 holds them.
    nodes = [make_node(f"r1-{i}").labels(block="b1", rack="r1").allocatable(cpu="1").obj() for i in range(2)]
    nodes += [make_node(f"r3-{i}").labels(block="b2", rack="r3").allocatable(cpu="1").obj() for i in range(2)]
    nodes += [make_node(f"r4-{i}").labels(block="b2", rack="r4").allocatable(cpu="1").obj() for i in range(2)]
    composites = [cpg("root", 2, **rack("block"))]
    groups = [pg("x", 2, "root", **rack("rack")), pg("y", 2, "root", **rack("rack"))]
    _, log = engine(nodes, groups, composites, members("x", 2) + members("y", 2), rules=rules)
    assert set(phases(log).values()) == {"Scheduled"}
    x, y = nodes_of(log, "x-"), nodes_of(log, "y-")
    assert {n[:2] for n in x | y if n} == {"r3", "r4"}  # all in block b2
    assert len({n[:2] for n in x if n}) == 1 and len({n[:2] for n in y if n}) == 1  # each child in one rack


def test_bound_members_count_toward_a_leafs_min_count() -> None:
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    pods = [make_pod("a-0").group("a").requests(cpu="1").node("n1").obj(), *members("a", 2)[1:], *members("b", 1)]
    _, log = engine(nodes, [pg("a", 2, "root"), pg("b", 1, "root")], [cpg("root", 2)], pods)
    assert phases(log) == {"a-0": "Running", "a-1": "Scheduled", "b-0": "Scheduled"}


@pytest.mark.parametrize("compat", [None, "v1.37"])
def test_bound_members_pin_their_composite_pod_groups_domain(compat: str | None) -> None:
    """root (one rack) has a-0 bound in rack r1; the left-over b-0 fits only in r2, so it stays pending instead of
    leaving the tree's rack (found by the v1.37.2 differential run, random-v137-1-0023)."""
    nodes = [
        make_node("r1-0").labels(rack="r1").allocatable(cpu="4").obj(),
        make_node("r2-0").labels(rack="r2").allocatable(cpu="8").obj(),
    ]
    pods = [make_pod("a-0").group("a").requests(cpu="3").node("r1-0").obj(), *members("b", 1, cpu="2")]
    _, log = engine(nodes, [pg("a", 1, "root"), pg("b", 1, "root")], [cpg("root", 1, **rack("rack"))], pods, compat)
    assert phases(log) == {"a-0": "Running", "b-0": "Unschedulable"}


def test_a_cycle_of_parents_is_invalid_everywhere() -> None:
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    composites = [cpg("a", 1, parent="b"), cpg("b", 1, parent="a")]
    s, log = engine(nodes, [pg("leaf", 1, "a")], composites, members("leaf", 1))
    assert phases(log) == {"leaf-0": "Unschedulable"}
    assert log.outcomes["default/leaf-0"].message.startswith("invalid group hierarchy: cycle")
    leaf = s.condition("default/leaf")
    assert leaf is not None and leaf.reason == "Invalid"
    assert {c.name: c.condition.reason if c.condition else None for c in s.composite_statuses()} == {
        "a": "Invalid",
        "b": "Invalid",
    }


@pytest.mark.parametrize(("levels", "valid"), [(3, True), (4, False)])
def test_a_tree_deeper_than_four_levels_is_invalid(levels: int, valid: bool) -> None:
    # ``levels`` CompositePodGroups in a chain, then the PodGroup: 4 levels in all is the most v1.37 allows.
    composites = [cpg("c0", 1)] + [cpg(f"c{i}", 1, parent=f"c{i - 1}") for i in range(1, levels)]
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    s, log = engine(nodes, [pg("leaf", 1, f"c{levels - 1}")], composites, members("leaf", 1))
    assert phases(log) == {"leaf-0": "Scheduled" if valid else "Unschedulable"}
    leaf = s.condition("default/leaf")
    assert leaf is not None and leaf.reason == ("Scheduled" if valid else "Invalid")


def test_a_satisfied_tree_keeps_its_true_condition_when_a_later_cycle_fails() -> None:
    nodes = [make_node("n1").allocatable(cpu="2").obj()]
    s, log = engine(nodes, [pg("a", 1, "root")], [cpg("root", 1)], members("a", 1))
    s.add_pod(make_pod("a-9").group("a").requests(cpu="8").obj())
    s.run()
    assert phases(log)["a-9"] == "Unschedulable"
    root = s.composite_statuses()[0].condition
    assert root is not None and root.status == "True"


def test_the_tree_is_scheduled_whichever_member_pops_first() -> None:
    # b's pods were created first, so a member of the second child starts the cycle: same result.
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    late, early = "2026-05-01T10:00:09Z", "2026-05-01T10:00:00Z"
    pods = [make_pod(f"a-{i}").group("a").requests(cpu="1").created(late).obj() for i in range(2)]
    pods += [make_pod(f"b-{i}").group("b").requests(cpu="1").created(early).obj() for i in range(2)]
    _, log = engine(nodes, [pg("a", 2, "root"), pg("b", 2, "root")], [cpg("root", 2)], pods)
    assert set(phases(log).values()) == {"Scheduled"}


def test_a_queued_member_whose_parent_is_deleted_waits_and_schedules_when_it_returns() -> None:
    nodes = [make_node("n1").allocatable(cpu="4").obj()]
    log = OutcomeLog()
    s = Scheduler(recorder=log)
    s.load(nodes, members("a", 1), [pg("a", 1, "root")], composite_pod_groups=[cpg("root", 1)])
    s.delete_composite_pod_group("default/root")
    s.run()
    assert phases(log) == {"a-0": "Unschedulable"}
    assert "composite pod group" in log.outcomes["default/a-0"].message
    s.add_composite_pod_group(cpg("root", 1))
    s.run()
    assert phases(log) == {"a-0": "Scheduled"}


@pytest.mark.parametrize(("rules", "bound"), [(RULES, 4), (GREEDY, 0)], ids=["phalanx", "greedy"])
def test_without_topology_a_greedy_first_child_steals_its_siblings_room(rules: Rules, bound: int) -> None:
    # 4 one-cpu slots; a (minCount 2, 4 pods) goes first, b (minCount 2, 2 pods) needs 2 of them.
    nodes = [make_node(f"n{i}").allocatable(cpu="1").obj() for i in range(4)]
    groups = [pg("a", 2, "root"), pg("b", 2, "root")]
    _, log = engine(nodes, groups, [cpg("root", 2)], members("a", 4) + members("b", 2), rules=rules)
    assert sum(1 for p in phases(log).values() if p == "Scheduled") == bound
    if bound:
        assert phases(log)["b-0"] == phases(log)["b-1"] == "Scheduled"


# --- invariants over random trees -------------------------------------------------------------------------------------


@st.composite
def forests(draw: st.DrawFn) -> tuple[list[Node], list[PodGroup], list[CompositePodGroup], list[Pod]]:
    """Racked nodes and one or two trees: a root (maybe in one rack), maybe a middle CompositePodGroup, and
    PodGroups of 1-cpu or 2-cpu pods (maybe in one rack) under them."""
    nodes = [
        make_node(f"n{i}").labels(rack=f"r{i % 2}").allocatable(cpu=str(draw(st.integers(1, 4)))).obj()
        for i in range(draw(st.integers(1, 5)))
    ]
    groups: list[PodGroup] = []
    composites: list[CompositePodGroup] = []
    pods: list[Pod] = []
    for tree in range(draw(st.integers(1, 2))):
        root = f"t{tree}"
        parents = [root]
        if draw(st.booleans()):
            composites.append(cpg(f"{root}-mid", draw(st.sampled_from([None, 1])), parent=root))
            parents.append(f"{root}-mid")
        children = draw(st.integers(1, 3))
        spec = rack("rack") if draw(st.booleans()) else {}
        composites.append(cpg(root, draw(st.sampled_from([None, 1, children])), **spec))
        for c in range(children):
            name = f"{root}-g{c}"
            size = draw(st.integers(1, 3))
            pg_spec = rack("rack") if draw(st.booleans()) else {}
            groups.append(pg(name, draw(st.sampled_from([None, 1, size])), draw(st.sampled_from(parents)), **pg_spec))
            pods += members(name, size, cpu=str(draw(st.integers(1, 2))))
    return nodes, groups, composites, pods


def _satisfied(s: Scheduler, kind: str, key: str) -> bool:
    if kind == "PodGroup":
        cond = s.condition(key)
    else:
        cond = next((c.condition for c in s.composite_statuses() if c.key == key), None)
    return cond is not None and cond.status == "True"


@SETTINGS
@given(forests(), st.sampled_from([RULES, GREEDY]))
def test_a_tree_binds_only_below_a_satisfied_root_and_each_bound_group_is_satisfied(
    forest: tuple[list[Node], list[PodGroup], list[CompositePodGroup], list[Pod]], rules: Rules
) -> None:
    nodes, groups, composites, pods = forest
    s, log = engine(nodes, groups, composites, pods, rules=rules)
    table = s.node_usage()
    assert (table.requested <= table.allocatable).all()  # nothing over-committed
    for g in s.group_statuses():
        bound = sum(1 for k, o in log.outcomes.items() if o.phase == "Scheduled" and s.group_of(k) == g.key)
        if not bound:
            continue
        root = f"default/{g.name.split('-')[0]}"
        assert _satisfied(s, "CompositePodGroup", root), f"{g.name} bound under an unsatisfied root"
        assert _satisfied(s, "CompositePodGroup", f"default/{g.parent}"), f"{g.name} bound under an unsatisfied parent"
        assert _satisfied(s, "PodGroup", g.key)
        assert bound >= (g.min_count or 1)
    for c in s.composite_statuses():
        if _satisfied(s, "CompositePodGroup", c.key):
            assert c.satisfied >= (c.min_group_count or 1)


@pytest.mark.parametrize("compat", [None, "v1.37"], ids=["phalanx", "v1.37"])
def test_a_tree_that_failed_for_capacity_schedules_once_a_pod_is_deleted(compat: str | None) -> None:
    # One block of two one-slot racks, one slot taken by a blocker. The tree needs both racks: the first child
    # fits, the second is never placed, so the tree fails. Deleting the blocker must bring every member back,
    # also those of the child that was never tried (they were rejected by GangScheduling alone before).
    nodes = [make_node(f"r{i}").labels(block="b", rack=f"r{i}").allocatable(cpu="1").obj() for i in (1, 2)]
    blocker = make_pod("blocker").requests(cpu="1").node("r2").obj()
    composites = [cpg("root", 2, **rack("block"))]
    groups = [pg("x", 1, "root", **rack("rack")), pg("y", 1, "root", **rack("rack"))]
    s, log = engine(nodes, groups, composites, [blocker, *members("x", 1), *members("y", 1)], compat=compat)
    assert phases(log)["x-0"] == phases(log)["y-0"] == "Unschedulable"
    s.delete_pod("default/blocker")
    s.run()
    assert phases(log)["x-0"] == phases(log)["y-0"] == "Scheduled"
