"""v1.37 queues a PodGroup (or a CompositePodGroup tree, from its root) as one entity, and a member held by its own
PreEnqueue (scheduling gates, a missing ResourceClaim) holds the whole entity: no cycle, no condition, until it is
released. v1.36 queues members one by one (``Release.gated_member_holds_group``; scenario ``scheduling-gates``)."""

from __future__ import annotations

import pytest
from test_composite_trees import cpg, engine, members, pg, phases

from phalanx.api.models import Pod
from phalanx.scheduling.config import SchedulerConfig, with_mode
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod


def _member(name: str, gated: bool = False) -> Pod:
    pod = make_pod(name).requests(cpu="1").group("g").obj()
    if gated:
        pod.spec.scheduling_gates = [{"name": "example.com/quota"}]
    return pod


def _engine(compat: str | None) -> Scheduler:
    s = Scheduler(with_mode(SchedulerConfig(), compat))
    s.load([make_node("n").allocatable(cpu="8").obj()], [], [make_group("g", 2)])
    return s


@pytest.mark.parametrize("compat", [None, "v1.37"])
def test_a_member_gated_after_the_other_was_queued_holds_it_until_released(compat: str | None) -> None:
    s = _engine(compat)
    s.add_pod(_member("g-0"))  # active: nothing is gated yet
    s.add_pod(_member("g-1", gated=True))
    assert s.run() == 0
    held = s.recorder.outcomes["default/g-0"]
    assert (held.phase, held.reason) == ("Waiting", "WaitingForGroupMember")
    assert held.message.startswith('waiting for pod group member "default/g-1": Scheduling is blocked')
    assert "default/g" not in s.groups.conditions  # no cycle ran
    s.update_pod(_member("g-1"))  # the gate is removed: the whole group is released
    assert s.run() == 2
    assert s.groups.conditions["default/g"].status == "True"


def test_v1_36_runs_the_other_members_cycle_without_the_gated_one() -> None:
    s = _engine("v1.36")
    s.add_pod(_member("g-1", gated=True))
    s.add_pod(_member("g-0"))
    assert s.run() == 0
    assert s.recorder.outcomes["default/g-0"].phase == "Unschedulable"
    condition = s.groups.conditions["default/g"]
    assert (condition.status, condition.reason) == ("False", "Unschedulable")


def test_a_gated_member_of_one_podgroup_holds_the_whole_tree() -> None:
    """The entity is the tree's root: a gated pod of PodGroup b holds PodGroup a's members too."""
    pods = [*members("a", 2), *members("b", 2)]
    pods[3].spec.scheduling_gates = [{"name": "example.com/quota"}]
    groups = [pg("a", 2, "root"), pg("b", 1, "root")]
    nodes = [make_node("n").allocatable(cpu="8").obj()]
    _, log = engine(nodes, groups, [cpg("root", 1)], pods)
    assert phases(log) == {"a-0": "Waiting", "a-1": "Waiting", "b-0": "Waiting", "b-1": "Waiting"}
    assert log.outcomes["default/a-0"].message.startswith('waiting for pod group member "default/b-1"')
