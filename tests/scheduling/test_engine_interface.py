"""The engine's interface: events in through the front door, every decision out through the Recorder (with a
structured Rejection), read-only queries, status codes used as kube-scheduler uses them, and named rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from phalanx.api.errors import Source
from phalanx.api.loader import RawObject, decode
from phalanx.scheduling.framework import Code
from phalanx.scheduling.outcome import Eviction, GroupCondition
from phalanx.scheduling.reasons import InsufficientResource, Waiting
from phalanx.scheduling.recorder import BaseRecorder, Rejection
from phalanx.scheduling.rules import Rules
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


class Log(BaseRecorder):
    """Every decision, in order, as (event, pod or group, detail)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []
        self.rejections: dict[str, Rejection] = {}

    def observed(self, key: str, phase: str, node: str | None) -> None:
        self.events.append(("observed", key, phase))

    def waiting(self, key: str, reason: str, message: str) -> None:
        self.events.append(("waiting", key, reason))

    def bound(self, key: str, node: str) -> None:
        self.events.append(("bound", key, node))

    def unschedulable(self, key: str, rejection: Rejection) -> None:
        self.rejections[key] = rejection
        self.events.append(("unschedulable", key, rejection.reason))

    def nominated(self, key: str, node: str) -> None:
        self.events.append(("nominated", key, node))

    def evicted(self, eviction: Eviction) -> None:
        self.events.append(("evicted", f"{eviction.namespace}/{eviction.name}", eviction.preemptor_name))

    def condition_changed(self, group: str, condition: GroupCondition) -> None:
        self.events.append(("condition", group, (condition.type, condition.status)))


def test_every_decision_reaches_the_recorder_in_order() -> None:
    log = Log()
    s = Scheduler(recorder=log)
    s.load(
        [make_node("n1").allocatable(cpu="2").obj(), make_node("n2").allocatable(cpu="1").obj()],
        [
            make_pod("low").requests(cpu="2").node("n1").obj(),
            make_pod("high").requests(cpu="2").priority(100).obj(),
        ],
    )
    s.run()
    assert log.events == [
        ("observed", "default/low", "Running"),
        ("unschedulable", "default/high", "Unschedulable"),
        ("nominated", "default/high", "n1"),
        ("evicted", "default/low", "high"),
        ("bound", "default/high", "n1"),
    ]
    # The rejection is a record: the plugins whose events may help and the per-node reasons, not only text.
    rejection = log.rejections["default/high"]
    assert rejection.message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert "NodeResourcesFit" in rejection.plugins
    assert rejection.diagnosis is not None
    (reason,) = rejection.diagnosis.reasons
    assert isinstance(reason, InsufficientResource) and reason.resource == "cpu" and reason.requested == 2000


def test_queries_answer_without_exposing_state() -> None:
    s = Scheduler()
    s.load(
        [make_node("a").allocatable(cpu="4").obj(), make_node("b").allocatable(cpu="4").obj()],
        [make_pod("p").requests(cpu="3").obj(), make_pod("q").requests(cpu="3").obj()],
    )
    s.run()
    nodes = {s.bound_node("default/p"), s.bound_node("default/q")}
    assert nodes == {"a", "b"}
    usage = s.node_usage()
    cpu = usage.resources.index("cpu")
    assert usage.requested[:, cpu].tolist() == [3000, 3000]
    usage.requested[:, cpu] = 0  # a copy: the engine's table is untouched
    assert s.node_usage().requested[:, cpu].tolist() == [3000, 3000]
    assert s.pods_on(s.bound_node("default/p") or "") == ["default/p"]
    assert s.pending() == (0, 0)


def test_gang_waits_in_permit_and_gates_report_their_reason() -> None:
    log = Log()
    s = Scheduler(recorder=log)
    s.load(
        [make_node("n").allocatable(cpu="2").obj()],
        [
            make_pod("g-0").requests(cpu="2").group("g").obj(),
            make_pod("g-1").requests(cpu="2").group("g").obj(),
            make_pod("h-0").group("h").obj(),
        ],
        pod_groups=[make_group("g", 2), make_group("h", 2)],
    )
    s.run()
    placed = next(k for k in ("default/g-0", "default/g-1") if "GangScheduling" in log.rejections[k].plugins)
    assert log.rejections[placed].message == "waiting for minCount pods from a gang to be scheduled"
    assert ("condition", "default/g", ("PodGroupScheduled", "False")) in log.events
    # PreEnqueue: the gang with one of two members never reaches a cycle; its gate is a record naming the reason.
    _, status = s.queue.gated["default/h-0"]
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.plugin == "GangScheduling"
    assert status.reasons == (Waiting("WaitingForMinCount", status.message),)
    assert ("waiting", "default/h-0", "WaitingForMinCount") in log.events


def test_a_missing_claim_is_pending_not_unschedulable() -> None:
    s = Scheduler()
    pod = make_pod("p").obj()
    pod.spec.resource_claims = [{"name": "gpu", "resourceClaimName": "not-yet"}]
    s.load([make_node("n").obj()], [pod])
    s.run()
    _, status = s.queue.gated["default/p"]
    assert status.code == Code.PENDING and status.plugin == "DynamicResources"
    assert s.recorder.outcomes["default/p"].reason == "WaitingForResourceClaim"  # type: ignore[attr-defined]


def _scenario_objects(name: str) -> dict[str, list[Any]]:
    raw = yaml.safe_load((SCENARIOS / name).read_text())["objects"]
    inv = decode([RawObject(Source(name), o) for o in raw])
    return {"nodes": inv.nodes, "pods": inv.pods, "pod_groups": inv.pod_groups}


def test_rules_are_consulted_by_name() -> None:
    """largest_first_retry on (the default): the heterogeneous gang fits; off: v1.36's member order fails it."""
    objects = _scenario_objects("gang-heterogeneous-largest-first.yaml")
    for rules, phase in ((Rules(), "Scheduled"), (Rules(largest_first_retry=False), "Unschedulable")):
        s = Scheduler(rules=rules)
        s.load(objects["nodes"], objects["pods"], objects["pod_groups"])
        s.run()
        assert s.recorder.outcomes["default/big"].phase == phase  # type: ignore[attr-defined]
    assert Rules().names()[0] == "largest-first-retry"
    assert "largest-first-retry" not in Rules(largest_first_retry=False).names()
