"""A gang that failed is retried whole when capacity frees up (no member is stranded; spec §8.13)."""

from __future__ import annotations

from phalanx.api.meta import Condition
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod


def test_failed_gang_retries_with_every_member_after_a_deletion() -> None:
    s = Scheduler()
    nodes = [make_node(f"n{i}").allocatable(cpu="4").obj() for i in range(2)]
    blocker = make_pod("blocker").requests(cpu="4").obj()
    members = [make_pod(f"g-{i}").requests(cpu="4").group("g").obj() for i in range(2)]
    s.load(nodes, [blocker, *members], [make_group("g", 2)])
    s.run()
    assert {k: s.recorder.outcomes[k].phase for k in ("default/g-0", "default/g-1")} == {
        "default/g-0": "Unschedulable",
        "default/g-1": "Unschedulable",
    }
    # One member fitted and was rolled back ("waiting for minCount..."), the other was rejected by resources.
    s.delete_pod("default/blocker")
    assert s.run() == 2
    assert {s.recorder.outcomes[k].phase for k in ("default/g-0", "default/g-1")} == {"Scheduled"}


def test_an_arriving_gang_member_does_not_recheck_every_waiting_one() -> None:
    """Members gated on minCount share one gate: an arrival re-checks one of them, not all (quadratic in the
    gang's size before), and the last arrival releases every member at once."""
    s = Scheduler()
    s.load([make_node("n").allocatable(cpu="100", pods=200).obj()], [], [make_group("g", 50)])
    checks = 0
    check = s.queue._pre_enqueue

    def counting(pi):  # type: ignore[no-untyped-def]
        nonlocal checks
        checks += 1
        return check(pi)

    s.queue._pre_enqueue = counting
    for i in range(49):
        s.add_pod(make_pod(f"g-{i}").requests(cpu="1").group("g").obj())
    assert len(s.queue.gated) == 49 and len(s.queue) == 0
    assert checks <= 2 * 49  # its own check and one probe per arrival (49 * 50 / 2 before)
    s.add_pod(make_pod("g-49").requests(cpu="1").group("g").obj())
    assert not s.queue.gated and len(s.queue) == 50
    assert s.run() == 50


def test_min_count_decrease_retries_a_failed_gang_at_once() -> None:
    """Elastic gangs (v1.37): the PodGroup's new minCount is an update event; members a failed cycle left
    unschedulable are retried without any other event, and the members that fit now are bound."""
    s = Scheduler()
    members = [make_pod(f"g-{i}").requests(cpu="2").group("g").obj() for i in range(3)]
    s.load([make_node("n0").allocatable(cpu="4").obj()], members, [make_group("g", 3)])
    assert s.run() == 0
    assert s.run() == 0  # nothing changed, nothing retried
    s.add_pod_group(make_group("g", 2))
    assert s.run() == 2
    assert sorted(s.recorder.outcomes[f"default/g-{i}"].phase for i in range(3)) == [
        "Scheduled",
        "Scheduled",
        "Unschedulable",
    ]


def test_min_count_decrease_releases_members_gated_on_it() -> None:
    s = Scheduler()
    members = [make_pod(f"g-{i}").requests(cpu="1").group("g").obj() for i in range(2)]
    s.load([make_node("n0").allocatable(cpu="4").obj()], members, [make_group("g", 4)])
    assert s.run() == 0  # gated: 2 of 4 pods exist
    s.add_pod_group(make_group("g", 2))
    assert s.run() == 2


def test_a_gang_member_completing_min_count_enters_the_queue_first() -> None:
    """GangScheduling's PreEnqueue holds the first minCount - 1 members; the member that completes the quorum enters
    the active queue first and releases the others. A snapshot's load ranks them as their live arrival does, and
    the PodGroup cycle orders members by that rank (kube's InitialAttemptTimestamp)."""
    names = ["g-0", "g-1", "g-2", "g-3"]  # minCount 3: g-2 completes it, g-3 arrives after
    pods = [
        make_pod(n).requests(cpu="1").group("g").created(f"2026-01-01T10:00:0{i}Z").obj() for i, n in enumerate(names)
    ]
    live = Scheduler()
    live.load([make_node("n").allocatable(cpu="8").obj()], [], [make_group("g", 3)])
    for pod in pods:
        live.add_pod(pod)
    loaded = Scheduler()
    loaded.load([make_node("n").allocatable(cpu="8").obj()], list(reversed(pods)), [make_group("g", 3)])
    for s in (live, loaded):
        assert sorted(names, key=lambda n: s.queue.entered(f"default/{n}")) == ["g-2", "g-0", "g-1", "g-3"]


def test_a_nominated_pod_keeps_its_room_from_an_older_pod_of_its_priority() -> None:
    """kube-scheduler keeps a nominated node's room for its preemptor against pods of its priority or lower: the
    older pod of its priority that the victim's deletion woke too (it does not preempt: preemptionPolicy Never)
    sees the preemptor counted on the node while it waits (Scheduler._hold_nominated)."""
    s = Scheduler()
    victim = make_pod("victim").requests(cpu="4").priority(1).node("n").obj()
    older = make_pod("older").requests(cpu="4").priority(10).created("2026-01-01T10:00:00Z").obj()
    older.spec.preemption_policy = "Never"
    preemptor = make_pod("preemptor").requests(cpu="4").priority(10).created("2026-01-01T10:01:00Z").obj()
    s.load([make_node("n").allocatable(cpu="4").obj()], [victim, older, preemptor])
    s.run()
    out = s.recorder.outcomes
    assert (out["default/preemptor"].phase, out["default/preemptor"].node) == ("Scheduled", "n")
    assert out["default/older"].phase == "Unschedulable" and out["default/victim"].phase == "Evicted"


def test_an_updated_pending_pod_keeps_its_entry_rank() -> None:
    """A status patch coming back through a watch replaces the pod in the engine; like kube's
    InitialAttemptTimestamp, its first entry into the active queue still counts (a recreated pod starts over)."""
    s = Scheduler()
    s.load([make_node("n").allocatable(cpu="1").obj()], [], [make_group("g", 2)])
    s.add_pod(make_pod("g-0").requests(cpu="1").group("g").obj())
    quorum = make_pod("g-1").requests(cpu="1").group("g").obj()
    s.add_pod(quorum)  # completes minCount: enters first
    assert s.queue.entered("default/g-1") < s.queue.entered("default/g-0")
    s.update_pod(quorum)
    assert s.queue.entered("default/g-1") < s.queue.entered("default/g-0")
    s.delete_pod("default/g-1")
    s.add_pod(make_pod("g-1").requests(cpu="1").group("g").obj())
    assert s.queue.entered("default/g-1") > s.queue.entered("default/g-0")


def test_a_stale_update_does_not_regress_a_scheduled_condition() -> None:
    """serve: the watch event of an earlier False write can arrive after the group succeeded. The engine keeps True
    (PodGroupInitiallyScheduled is terminal), so the write it retries is True, not the stale False."""
    s = Scheduler()
    members = [make_pod(f"g-{i}").requests(cpu="2").group("g").obj() for i in range(2)]
    s.load([make_node("n0").allocatable(cpu="2").obj()], members, [make_group("g", 2)])
    assert s.run() == 0
    failed = s.condition("default/g")
    assert failed is not None and failed.status == "False"
    stale = make_group("g", 2)
    stale.status.conditions = [Condition(type="PodGroupScheduled", status="False", reason=failed.reason)]
    s.add_node(make_node("n1").allocatable(cpu="2").obj())
    assert s.run() == 2
    s.add_pod_group(stale)  # the False write's event, late
    scheduled = s.condition("default/g")
    assert scheduled is not None and (scheduled.status, scheduled.reason) == ("True", "Scheduled")


def test_a_pod_rejected_by_no_plugin_is_retried_on_the_next_event() -> None:
    """With no node at all no plugin rejects the pod, so no queueing hint names an event for it; kube-scheduler
    requeues such a pod on any event (isPodWorthRequeuing: no rejector plugins). Found by
    test_node_events_equal_a_fresh_load: the pod stayed pending after the first node came."""
    s = Scheduler()
    s.load([], [make_pod("p").requests(cpu="1").obj()], [])
    s.run()
    assert s.recorder.outcomes["default/p"].phase == "Unschedulable"
    s.add_node(make_node("n").allocatable(cpu="2").obj())
    assert s.run() == 1
    assert s.recorder.outcomes["default/p"].phase == "Scheduled"


def test_a_pod_woken_by_an_event_goes_after_the_pods_still_queued() -> None:
    """kube-scheduler requeues a pod that failed moments ago "after backoff": it waits in the backoff queue, popped
    once the active queue is empty, and does not jump back ahead of pods created after it (random-v137-1-0052:
    the pod needing a batch pod's company was retried after every plain pod, not as soon as one bound)."""
    s = Scheduler()
    batch_pods = {"labelSelector": {"matchLabels": {"app": "batch"}}}
    follower = (
        make_pod("a-follower").requests(cpu="2").pod_affinity("podAffinity", "kubernetes.io/hostname", **batch_pods)
    )
    batch = make_pod("b-batch").requests(cpu="1").labels(app="batch")
    big = make_pod("c-big").requests(cpu="3")
    node = make_node("n").allocatable(cpu="4").labels(**{"kubernetes.io/hostname": "n"}).obj()
    s.load([node], [follower.obj(), batch.obj(), big.obj()], [])
    s.run()
    # a-follower fails (no batch pod yet); b-batch binds and wakes it; c-big, still queued, goes first
    phases = {k: s.recorder.outcomes[f"default/{k}"].phase for k in ("a-follower", "b-batch", "c-big")}
    assert phases == {"a-follower": "Unschedulable", "b-batch": "Scheduled", "c-big": "Scheduled"}


def test_a_higher_priority_pod_takes_the_room_a_lower_nominated_one_made() -> None:
    """A nomination keeps the room only against pods of the nominee's priority or lower (random-1-0042): both the
    preemptor and the higher-priority pod its victim's deletion woke wait in the backoff set, and the
    higher-priority one goes first and takes the node."""
    s = Scheduler()
    victim = make_pod("victim").requests(cpu="4").priority(1).node("n").obj()
    high = make_pod("a-high").requests(cpu="4").priority(100).obj()
    high.spec.preemption_policy = "Never"
    mid = make_pod("b-mid").requests(cpu="4").priority(10).obj()
    s.load([make_node("n").allocatable(cpu="4").obj()], [victim, high, mid])
    s.run()
    out = s.recorder.outcomes
    assert out["default/victim"].phase == "Evicted"  # b-mid preempted it (a-high may not preempt)
    assert (out["default/a-high"].phase, out["default/a-high"].node) == ("Scheduled", "n")
    assert out["default/b-mid"].phase == "Unschedulable"


def test_a_nominated_pod_goes_to_its_nominated_node_when_it_fits_there() -> None:
    """kube-scheduler tries a pod's nominatedNodeName first and takes it, unscored, if it passes Filter
    (evaluateNominatedNode; random-1-0082: the preemptor went back to n1, not to the emptier n0)."""
    s = Scheduler()
    nodes = [make_node("n0").allocatable(cpu="4").obj(), make_node("n1").allocatable(cpu="4").obj()]
    busy = make_pod("busy").requests(cpu="3").node("n1").obj()
    s.load(nodes, [busy, make_pod("p").requests(cpu="1").obj()])
    pi, table, profile = s.pods["default/p"], s.state.table, s.default_profile
    n0, n1 = table.index["n0"], table.index["n1"]
    assert profile.schedule(pi, table).node == n0  # scored: the emptier node
    assert profile.schedule(pi, table, nominated=n1).node == n1  # nominated and it fits: taken unscored
    s.add_pod(make_pod("more").requests(cpu="1").node("n1").obj())  # n1 is full now
    assert profile.schedule(pi, table, nominated=n1).node == n0  # nominated but it does not fit: scored


def test_a_nominated_gang_member_goes_to_its_nominated_node_when_it_fits_there() -> None:
    """evaluateNominatedNode runs for PodGroup members too (podGroupPodSchedulingAlgorithm -> schedulePod): a
    member nominated by an earlier workload-aware preemption takes its nominated node unscored if it passes Filter
    there; the member without a nomination is scored (the emptier node)."""
    s = Scheduler()
    nodes = [make_node("n0").allocatable(cpu="8").obj(), make_node("n1").allocatable(cpu="8").obj()]
    busy = make_pod("busy").requests(cpu="4").node("n1").obj()
    members = [make_pod(f"g-{i}").requests(cpu="1").group("g").obj() for i in range(2)]
    s.load(nodes, [busy, *members], [make_group("g", 2)])
    s._nominations["default/g-1"] = "n1"  # as Scheduler.reject records a preemptor's node
    s.run()
    out = s.recorder.outcomes
    assert (out["default/g-0"].node, out["default/g-1"].node) == ("n0", "n1")


def test_async_victims_keep_their_room_for_the_pods_queued_behind_the_preemptor() -> None:
    """kube-scheduler deletes preemption victims asynchronously, so the cycles right after a preemption still see
    them (random-1-0250). ``async_victims`` models that: the victim keeps its node until the active queue drains,
    and only then its PodDelete wakes the preemptor. By default it is gone at once."""

    def run(async_victims: bool) -> dict[str, tuple[str, str | None]]:
        s = Scheduler(async_victims=async_victims)
        nodes = [make_node("n0").allocatable(cpu="2").obj(), make_node("n1").allocatable(cpu="8").obj()]
        running = [
            make_pod("small").requests(cpu="1").priority(1000).node("n0").obj(),
            make_pod("other").requests(cpu="2").priority(1000).node("n1").obj(),
            make_pod("victim").requests(cpu="4").priority(1).node("n1").obj(),
        ]
        preemptor = make_pod("preemptor").requests(cpu="3").priority(100).created("2026-01-01T10:00:00Z").obj()
        later = make_pod("later").requests(cpu="1").priority(100).created("2026-01-01T10:01:00Z").obj()
        later.spec.preemption_policy = "Never"
        s.load(nodes, [*running, preemptor, later])
        s.run()
        return {k: (o.phase, o.node) for k, o in s.recorder.outcomes.items()}

    at_once, lingering = run(False), run(True)
    for out in (at_once, lingering):
        assert out["default/victim"][0] == "Evicted"
        assert out["default/preemptor"] == ("Scheduled", "n1")
    assert at_once["default/later"] == ("Scheduled", "n1")  # the victim's room, less the nominee's, is the best
    assert lingering["default/later"] == ("Scheduled", "n0")  # n1 still holds the victim and the nominee
