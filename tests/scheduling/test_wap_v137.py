"""v1.37's workload-aware preemption (``--compat v1.37``, ``Release.wap_single_run``): the group algorithm runs
once with every potential victim gone, a unit is reprieved only if each member still passes Filter on the node
that run chose, and groups with scheduling constraints are preempted for too (v1.36 refuses them). phalanx's mode
keeps v1.36's re-run (``reprieve-by-rerun``; scenario ``wap-reprieve-by-rerun``)."""

from __future__ import annotations

import msgspec

from phalanx.api.models import PodGroup
from phalanx.scheduling.config import SchedulerConfig, with_mode
from phalanx.scheduling.outcome import OutcomeLog
from phalanx.scheduling.scheduler import Scheduler

from builders import make_node, make_pod


def _rack_gang(compat: str) -> Scheduler:
    """Racks a and b of two 8-GPU nodes; one node of each rack runs a low-priority pod. train: 2 x 8 GPUs in one
    rack, priority 1000."""
    group = msgspec.convert(
        {
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {
                "priority": 1000,
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "rack"}]},
            },
        },
        PodGroup,
    )
    nodes = [
        make_node(f"{rack}{i}").labels(rack=rack).allocatable(cpu="64", **{"nvidia.com/gpu": "8"}).obj()
        for rack in "ab"
        for i in (1, 2)
    ]
    busy = [
        make_pod(name).request("nvidia.com/gpu", "8").node(node).priority(prio).phase("Running").obj()
        for name, node, prio in (("analytics", "a2", 50), ("notebook", "b2", 10))
    ]
    members = [
        make_pod(f"train-{i}").request("nvidia.com/gpu", "8").group("train").priority(1000).obj() for i in (0, 1)
    ]
    s = Scheduler(with_mode(SchedulerConfig(), compat))
    s.load(nodes, [*busy, *members], [group])
    s.run()
    return s


def test_v1_37_preempts_for_a_rack_constrained_gang_in_the_rack_its_single_run_chose() -> None:
    s = _rack_gang("v1.37")
    evicted = {k for k, o in s.recorder.outcomes.items() if o.phase == "Evicted"}
    assert len(evicted) == 1  # one rack's victim: the run placed the gang in one rack, the other victim is reprieved
    rack = "a" if evicted == {"default/analytics"} else "b"
    placed = {s.recorder.outcomes[f"default/train-{i}"].node for i in (0, 1)}
    assert placed == {f"{rack}1", f"{rack}2"}


def test_v1_36_refuses_workload_aware_preemption_for_a_constrained_gang() -> None:
    s = _rack_gang("v1.36")
    assert not any(o.phase == "Evicted" for o in s.recorder.outcomes.values())
    condition = s.groups.conditions["default/train"]
    assert condition.status == "False"
    assert condition.message.endswith(
        "workload aware preemption is not supported for pod groups with scheduling constraints"
    )


def test_rechecking_only_the_returned_units_nodes_gives_the_full_recheck_result(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The single-run reprieve re-checks only the members on a returned unit's nodes when every filter involved is
    node-local (placement.per_node_only, passed in as ``per_node``); on a gang-preemption shape with several units
    per node it must choose exactly the victims and nominations of a full re-check of every member."""
    from phalanx.scheduling.cycle import group_preemption

    reprieve = group_preemption.reprieve_on_fixed_nodes

    def never_local(ctx, units, run, fits, per_node):  # type: ignore[no-untyped-def]
        return reprieve(ctx, units, run, fits, lambda pi: False)

    def run(local: bool) -> dict[str, tuple[str, str | None, str | None]]:
        if not local:
            monkeypatch.setattr(group_preemption, "reprieve_on_fixed_nodes", never_local)
        nodes = [make_node(f"n{i}").allocatable(cpu="4").obj() for i in range(6)]
        low = [
            make_pod(f"low-{i}").requests(cpu="400m").node(f"n{i % 6}").priority(i % 3).phase("Running").obj()
            for i in range(54)
        ]
        gang = msgspec.convert(
            {
                "metadata": {"name": "g", "namespace": "default"},
                "spec": {"priority": 100, "schedulingPolicy": {"gang": {"minCount": 8}}},
            },
            PodGroup,
        )
        members = [make_pod(f"g-{i}").requests(cpu="700m").group("g").priority(100).obj() for i in range(8)]
        s = Scheduler(with_mode(SchedulerConfig(), "v1.37"))
        s.load(nodes, [*low, *members], [gang])
        s.run()
        monkeypatch.undo()
        return {k: (o.phase, o.node, o.nominated_node) for k, o in s.recorder.outcomes.items()}

    fast, full = run(True), run(False)
    assert any(phase == "Evicted" for phase, _, _ in fast.values())
    assert fast == full


def test_a_recorder_that_does_not_explain_gets_the_same_victims_without_the_v1_37_comparison(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """phalanx's mode names ``reprieve-by-rerun`` by also running v1.37's single-run reprieve; serve's and
    simulate's recorders ignore rule names, so that second run is skipped for them and nothing else changes."""
    from phalanx.scheduling.cycle import group_preemption
    from phalanx.scheduling.recorder import BaseRecorder, Recorders

    class Evictions(BaseRecorder):
        def __init__(self) -> None:
            self.names: list[str] = []

        def evicted(self, eviction) -> None:  # type: ignore[no-untyped-def,override]
            self.names.append(eviction.name)

    calls: list[str] = []
    single_run = group_preemption._single_run

    def counted(c, intent, priority):  # type: ignore[no-untyped-def]
        calls.append(c.group.key)
        return single_run(c, intent, priority)

    monkeypatch.setattr(group_preemption, "_single_run", counted)
    nodes = [
        make_node("big").allocatable(cpu="16").obj(),
        make_node("small").allocatable(cpu="8").obj(),
    ]
    busy = [
        make_pod("analytics").requests(cpu="16").node("big").priority(50).phase("Running").obj(),
        make_pod("notebook").requests(cpu="8").node("small").priority(10).phase("Running").obj(),
    ]
    group = msgspec.convert(
        {
            "metadata": {"name": "urgent", "namespace": "default"},
            "spec": {"priority": 1000, "schedulingPolicy": {"gang": {"minCount": 1}}},
        },
        PodGroup,
    )
    urgent = make_pod("urgent-0").requests(cpu="8").group("urgent").priority(1000).obj()

    def run(recorder: BaseRecorder) -> Scheduler:
        s = Scheduler(SchedulerConfig(), recorder=recorder)
        s.load(nodes, [*busy, urgent], [group])
        s.run()
        return s

    quiet = Evictions()
    run(quiet)
    assert quiet.names == ["notebook"] and calls == []  # phalanx's victim, and no second run
    log = OutcomeLog()
    loud = Evictions()
    run(Recorders([loud, log]))
    assert loud.names == ["notebook"] and calls == ["default/urgent"]
    assert log.rules["default/urgent-0"] == {"reprieve-by-rerun"}


def test_units_alike_in_importance_are_reprieved_in_a_seeded_order() -> None:
    """kube-scheduler collects workload-aware preemption's victim units from a map, so units alike in priority,
    kind, size and start time are reprieved in a random order, and that order picks the victims (random-1-0207).
    Seed 0 takes them by name; other seeds draw other orders, so the tie shows across seeds."""

    def victims(seed: int) -> set[str]:
        nodes = [make_node("n0").allocatable(cpu="6").obj(), make_node("n1").allocatable(cpu="4").obj()]
        running = [
            make_pod(name).requests(cpu="4").node(node).priority(1).phase("Running").obj()
            for name, node in (("a", "n0"), ("b", "n1"))
        ]
        group = msgspec.convert(
            {
                "metadata": {"name": "g", "namespace": "default"},
                "spec": {"priority": 100, "schedulingPolicy": {"gang": {"minCount": 1}}},
            },
            PodGroup,
        )
        member = make_pod("g-0").requests(cpu="4").group("g").priority(100).obj()
        s = Scheduler(SchedulerConfig(), seed=seed)
        s.load(nodes, [*running, member], [group])
        s.run()
        assert s.recorder.outcomes["default/g-0"].phase == "Scheduled"
        return {k for k, o in s.recorder.outcomes.items() if o.phase == "Evicted"}

    assert victims(0) == {"default/b"}  # a, first by name, is reprieved: the member then goes to n1
    assert {frozenset(victims(seed)) for seed in range(8)} == {frozenset({"default/a"}), frozenset({"default/b"})}
