"""v1.37's PodGroup validation (phalanx's mode and --compat v1.37; not --compat v1.36): members must have their
group's priority and one preemption policy; the first member that breaks it fails the whole group with
SchedulerError before any cycle."""

from __future__ import annotations

from test_composite_trees import cpg, engine, members, pg

from phalanx.api.models import Pod
from phalanx.scheduling.config import SchedulerConfig, default_profile, with_mode
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod

_POLICY = "all pods in a single pod group should have the same preemption policy, got {} and {}"
_GROUP_POLICY = (
    "all pods in a single pod group should have the same preemption policy as the pod group's preemption policy, "
    "got {} and {}"
)


def _member(name: str, policy: str | None = None, created: str = "2026-01-01T10:00:00Z") -> Pod:
    pod = make_pod(name).requests(cpu="1").group("g").created(created).obj()
    pod.spec.preemption_policy = policy
    return pod


def _run(pods: list[Pod], policy: str | None = None, compat: str | None = None, min_count: int | None = 2) -> Scheduler:
    group = make_group("g", min_count)
    assert group.spec is not None
    group.spec.preemption_policy = policy
    s = Scheduler(with_mode(SchedulerConfig(), compat))
    s.load([make_node("n").allocatable(cpu="8").obj(), make_node("tiny").allocatable(cpu="1").obj()], pods, [group])
    s.run()
    return s


def test_members_with_different_preemption_policies_fail_with_the_first_members_policy_named() -> None:
    """PodGroupPreemptionPolicy off (as phalanx's profile has it): the first member's policy is the one the others
    must match. g-1 completes minCount, so it is the first member."""
    assert not with_mode(SchedulerConfig(), None).feature_gates.scheduling().pod_group_preemption_policy
    s = _run([_member("g-0"), _member("g-1", "Never", "2026-01-01T10:01:00Z")])
    message = _POLICY.format("PreemptLowerPriority", "Never")
    for key in ("default/g-0", "default/g-1"):
        out = s.recorder.outcomes[key]
        assert (out.phase, out.reason, out.message) == ("Unschedulable", "SchedulerError", message)
    condition = s.groups.conditions["default/g"]
    assert (condition.status, condition.reason, condition.message) == ("False", "SchedulerError", message)


def test_with_the_gate_on_the_pod_groups_policy_is_the_reference() -> None:
    """PodGroupPreemptionPolicy on (as --compat v1.37 has it): the PodGroup's policy, PreemptLowerPriority if unset."""
    assert with_mode(SchedulerConfig(), "v1.37").feature_gates.scheduling().pod_group_preemption_policy
    s = _run([_member("g-0"), _member("g-1")], policy="Never", compat="v1.37")
    assert s.recorder.outcomes["default/g-0"].message == _GROUP_POLICY.format("PreemptLowerPriority", "Never")
    s = _run([_member("g-0"), _member("g-1", "Never", "2026-01-01T10:01:00Z")], compat="v1.37")
    assert s.recorder.outcomes["default/g-0"].message == _GROUP_POLICY.format("Never", "PreemptLowerPriority")
    s = _run([_member("g-0", "Never"), _member("g-1", "Never")], policy="Never", compat="v1.37")
    assert {s.recorder.outcomes[k].phase for k in ("default/g-0", "default/g-1")} == {"Scheduled"}


def test_a_bound_member_with_another_priority_fails_the_pending_ones() -> None:
    """validateScheduledPods: the group's bound members are checked too."""
    bound = make_pod("g-0").requests(cpu="1").group("g").priority(7).node("n").obj()
    s = _run([bound, _member("g-1")])
    out = s.recorder.outcomes["default/g-1"]
    assert (out.phase, out.reason) == ("Unschedulable", "SchedulerError")
    assert out.message.endswith("got 7 and 0")


def test_v1_36_schedules_members_whatever_their_priorities_and_policies() -> None:
    bound = make_pod("g-0").requests(cpu="1").group("g").priority(7).node("n").obj()
    s = _run([bound, _member("g-1", "Never")], compat="v1.36")
    assert s.recorder.outcomes["default/g-1"].phase == "Scheduled"


def test_v1_36_places_members_by_priority_then_age() -> None:
    """podGroupInfoForPod: the big node goes to the high-priority driver although worker is older (basic policy:
    the group succeeds with one member)."""
    worker = make_pod("worker").requests(cpu="8").group("g").created("2026-05-01T10:00:00Z").obj()
    driver = make_pod("driver").requests(cpu="8").group("g").priority(1000).created("2026-05-01T10:05:00Z").obj()
    s = _run([worker, driver], compat="v1.36", min_count=None)
    out = s.recorder.outcomes
    assert (out["default/driver"].phase, out["default/driver"].node) == ("Scheduled", "n")
    assert out["default/worker"].phase == "Unschedulable"


def _mixed_names(compat: str | None) -> Scheduler:
    """Two profiles, so both members are in this scheduler's queue."""
    other = make_pod("g-1").requests(cpu="1").group("g").created("2026-01-01T10:01:00Z").obj()
    other.spec.scheduler_name = "other-scheduler"
    config = SchedulerConfig(profiles=[default_profile(), default_profile("other-scheduler")])
    s = Scheduler(with_mode(config, compat))
    s.load([make_node("n").allocatable(cpu="8").obj()], [_member("g-0"), other], [make_group("g", 2)])
    s.run()
    return s


def test_a_schedulername_mismatch_writes_scheduler_error_on_the_group_in_v1_37() -> None:
    """v1.37's validatePodGroup: the mismatch fails every member and the PodGroup's condition
    (handlePodGroupFailureBeforeScheduling), in phalanx's mode and under --compat v1.37."""
    message = 'all pods in a single pod group should have the same .spec.schedulerName set, got: "{}" and "{}"'
    for compat in (None, "v1.37"):
        s = _mixed_names(compat)
        out = s.recorder.outcomes["default/g-0"]
        assert (out.phase, out.reason) == ("Unschedulable", "SchedulerError")
        condition = s.groups.conditions["default/g"]
        assert (condition.status, condition.reason) == ("False", "SchedulerError")
        assert condition.message == out.message
        assert condition.message in (
            message.format("other-scheduler", "default-scheduler"),
            message.format("default-scheduler", "other-scheduler"),
        )


def test_v1_36_leaves_the_group_condition_of_a_schedulername_mismatch_untouched() -> None:
    """v1.36's frameworkForPodGroup fails the pods before podGroupCycle, which alone writes the condition."""
    s = _mixed_names("v1.36")
    assert s.recorder.outcomes["default/g-0"].reason == "SchedulerError"
    assert "default/g" not in s.groups.conditions


def test_every_pod_of_a_tree_must_have_the_root_composite_pod_groups_priority() -> None:
    """v1.37.2's validatePodGroup over a tree: each queued pod of each leaf against the root's priority; every pod
    and every PodGroup (not the CompositePodGroup) fails with the error before any placement."""
    nodes = [make_node("n").allocatable(cpu="8").obj()]
    s, log = engine(
        nodes,
        [pg("a", 1, "root"), pg("b", 1, "root")],
        [cpg("root", 2, priority=100)],
        [*members("a", 1), *members("b", 1)],
    )
    message = "all pods in a single pod group should have the same priority as the pod group's priority, got 0 and 100"
    for key in ("default/a-0", "default/b-0"):
        out = log.outcomes[key]
        assert (out.phase, out.reason, out.message) == ("Unschedulable", "SchedulerError", message)
    for group in ("default/a", "default/b"):
        condition = s.groups.conditions[group]
        assert (condition.status, condition.reason, condition.message) == ("False", "SchedulerError", message)


def test_a_tree_with_mixed_schedulernames_fails_with_v1_37s_message() -> None:
    pods = [make_pod("a-0").requests(cpu="1").group("a").obj(), make_pod("b-0").requests(cpu="1").group("b").obj()]
    pods[1].spec.scheduler_name = "other-scheduler"
    config = SchedulerConfig(profiles=[default_profile(), default_profile("other-scheduler")])
    s = Scheduler(with_mode(config, "v1.37"))
    s.load(
        [make_node("n").allocatable(cpu="8").obj()],
        pods,
        [pg("a", 1, "root"), pg("b", 1, "root")],
        composite_pod_groups=[cpg("root", 2)],
    )
    s.run()
    message = 'all pods in a single pod group should have the same .spec.schedulerName set, got: "{}" and "{}"'
    out = s.recorder.outcomes["default/a-0"]
    assert (out.phase, out.reason) == ("Unschedulable", "SchedulerError")
    assert out.message in (
        message.format("other-scheduler", "default-scheduler"),
        message.format("default-scheduler", "other-scheduler"),
    )
    assert s.groups.conditions["default/b"].reason == "SchedulerError"
