"""Filter plugins against kube-scheduler's documented behaviour, one table per plugin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pytest

from phalanx.api.models import Taint, Toleration
from phalanx.cluster.pods import PodInfo
from phalanx.cluster.state import ClusterState
from phalanx.scheduling.framework import CycleState
from phalanx.scheduling.plugins.node_affinity import NodeAffinity
from phalanx.scheduling.plugins.node_name import NodeName
from phalanx.scheduling.plugins.node_ports import NodePorts
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from phalanx.scheduling.plugins.node_unschedulable import NodeUnschedulable
from phalanx.scheduling.plugins.taint_toleration import TaintToleration, tolerates
from phalanx.scheduling.reasons import InsufficientResource

from builders import make_node, make_pod


def info(pod: Any, state: ClusterState | None = None) -> PodInfo:
    pi = PodInfo.of(pod, 0)
    if state is not None:
        state.attach(pi)
    return pi


# --- TaintToleration -------------------------------------------------------------------------------------------


@dataclass
class TolCase:
    id: str
    toleration: dict[str, Any]
    taint: dict[str, str]
    tolerates: bool


TOLERATION_CASES = [
    TolCase("equal-match", {"key": "k", "operator": "Equal", "value": "v"}, {"key": "k", "value": "v"}, True),
    TolCase("empty-operator-is-equal", {"key": "k", "value": "v"}, {"key": "k", "value": "v"}, True),
    TolCase("equal-value-differs", {"key": "k", "value": "x"}, {"key": "k", "value": "v"}, False),
    TolCase("exists-any-value", {"key": "k", "operator": "Exists"}, {"key": "k", "value": "v"}, True),
    TolCase("empty-key-exists-tolerates-all", {"operator": "Exists"}, {"key": "any", "value": "v"}, True),
    TolCase("effect-must-match", {"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k"}, False),
    TolCase("empty-effect-matches-all", {"key": "k", "operator": "Exists"}, {"key": "k", "effect": "NoExecute"}, True),
    TolCase("key-differs", {"key": "other", "operator": "Exists"}, {"key": "k"}, False),
    TolCase("unknown-operator", {"key": "k", "operator": "Gt", "value": "1"}, {"key": "k", "value": "2"}, False),
]


@pytest.mark.parametrize("case", TOLERATION_CASES, ids=lambda c: c.id)
def test_tolerates(case: TolCase) -> None:
    taint = msgspec.convert({"effect": "NoSchedule", **case.taint}, Taint)
    assert tolerates(msgspec.convert(case.toleration, Toleration), taint) is case.tolerates


def test_taint_filter_only_hard_effects_and_score_counts_prefer_no_schedule() -> None:
    state = ClusterState(
        [
            make_node("clean").obj(),
            make_node("hard").taint("gpu", "true", "NoSchedule").obj(),
            make_node("exec").taint("gpu", "true", "NoExecute").obj(),
            make_node("soft1").taint("a", effect="PreferNoSchedule").obj(),
            make_node("soft2").taint("a", effect="PreferNoSchedule").taint("b", effect="PreferNoSchedule").obj(),
        ]
    )
    plugin = TaintToleration()
    pi = info(make_pod("p").obj())
    mask = plugin.filter(CycleState(), pi, state.table)
    names = state.table.names
    assert [n for n, ok in zip(names, mask, strict=True) if not ok] == ["exec", "hard"]
    rows = np.flatnonzero(mask)
    raw = plugin.score(CycleState(), pi, state.table, rows)
    assert raw is not None
    scores = dict(zip([names[r] for r in rows], plugin.normalize(raw).tolist(), strict=True))
    # DefaultNormalizeScore(reverse): 100 - 100*count/max
    assert scores == {"clean": 100, "soft1": 50, "soft2": 0}


def test_taint_reason_is_v136_text() -> None:
    state = ClusterState([make_node("n").taint("k", "v").obj()])
    pi = info(make_pod("p").obj())
    reasons = TaintToleration().reasons(CycleState(), pi, state.table, np.array([0]))
    assert {r.message: n for r, n in reasons.items()} == {"node(s) had untolerated taint(s)": 1}
    assert all(r.unresolvable for r in reasons)  # preemption cannot remove a taint


# --- NodeUnschedulable and NodeName ------------------------------------------------------------------------------


def test_unschedulable_node_needs_toleration() -> None:
    state = ClusterState([make_node("a").unschedulable().obj(), make_node("b").obj()])
    plain = info(make_pod("p").obj())
    tolerant = info(make_pod("t").toleration(key="node.kubernetes.io/unschedulable", operator="Exists").obj())
    assert NodeUnschedulable().filter(CycleState(), plain, state.table).tolist() == [False, True]
    assert NodeUnschedulable().filter(CycleState(), tolerant, state.table).tolist() == [True, True]


def test_node_name_filter() -> None:
    state = ClusterState([make_node("a").obj(), make_node("b").obj()])
    pi = info(make_pod("p").node("b").obj())
    assert NodeName().filter(CycleState(), pi, state.table).tolist() == [False, True]


# --- NodeAffinity ------------------------------------------------------------------------------------------------


@dataclass
class AffCase:
    id: str
    requirement: dict[str, Any]
    matches: list[str]


NODES_FOR_AFFINITY = {
    "n1": {"zone": "a", "gpus": "8"},
    "n2": {"zone": "b", "gpus": "4"},
    "n3": {"zone": "c"},
    "n4": {"gpus": "many"},
}

AFFINITY_CASES = [
    AffCase("in", {"key": "zone", "operator": "In", "values": ["a", "b"]}, ["n1", "n2"]),
    AffCase("not-in-matches-missing-label", {"key": "zone", "operator": "NotIn", "values": ["a"]}, ["n2", "n3", "n4"]),
    AffCase("exists", {"key": "gpus", "operator": "Exists"}, ["n1", "n2", "n4"]),
    AffCase("does-not-exist", {"key": "gpus", "operator": "DoesNotExist"}, ["n3"]),
    AffCase("gt-needs-integer-label", {"key": "gpus", "operator": "Gt", "values": ["4"]}, ["n1"]),
    AffCase("lt", {"key": "gpus", "operator": "Lt", "values": ["8"]}, ["n2"]),
    AffCase("in-unknown-value", {"key": "zone", "operator": "In", "values": ["z"]}, []),
]


def affinity_state() -> ClusterState:
    nodes = []
    for name, labels in NODES_FOR_AFFINITY.items():
        b = make_node(name)
        for k, v in labels.items():
            b.label(k, v)
        nodes.append(b.obj())
    return ClusterState(nodes)


@pytest.mark.parametrize("case", AFFINITY_CASES, ids=lambda c: c.id)
def test_node_affinity_operators(case: AffCase) -> None:
    state = affinity_state()
    pod = make_pod("p").affinity(required=[{"matchExpressions": [case.requirement]}]).obj()
    mask = NodeAffinity().filter(CycleState(), info(pod), state.table)
    assert [n for n, ok in zip(state.table.names, mask, strict=True) if ok] == case.matches


def test_node_affinity_terms_are_ored_and_expressions_anded() -> None:
    state = affinity_state()
    terms = [
        {
            "matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]},
                {"key": "gpus", "operator": "Lt", "values": ["5"]},
            ]
        },
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]},
        {},  # an empty term matches nothing
    ]
    mask = NodeAffinity().filter(CycleState(), info(make_pod("p").affinity(required=terms).obj()), state.table)
    assert [n for n, ok in zip(state.table.names, mask, strict=True) if ok] == ["n3"]


def test_node_selector_and_affinity_both_apply() -> None:
    state = affinity_state()
    pod = (
        make_pod("p")
        .selector(zone="a")
        .affinity(required=[{"matchExpressions": [{"key": "gpus", "operator": "Exists"}]}])
        .obj()
    )
    mask = NodeAffinity().filter(CycleState(), info(pod), state.table)
    assert mask.tolist() == [True, False, False, False]


def test_preferred_affinity_scores_sum_of_weights_normalised() -> None:
    state = affinity_state()
    preferred = [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"weight": 30, "preference": {"matchExpressions": [{"key": "gpus", "operator": "Exists"}]}},
    ]
    pi = info(make_pod("p").affinity(preferred=preferred).obj())
    plugin = NodeAffinity()
    rows = np.arange(4)
    raw = plugin.score(CycleState(), pi, state.table, rows)
    assert raw is not None
    assert raw.tolist() == [40, 30, 0, 30]
    assert plugin.normalize(raw).tolist() == [100, 75, 0, 75]
    assert plugin.score(CycleState(), info(make_pod("q").obj()), state.table, rows) is None


# --- NodePorts -----------------------------------------------------------------------------------------------------


def test_host_port_conflicts_by_protocol_port_and_ip() -> None:
    state = ClusterState([make_node("a").obj(), make_node("b").obj(), make_node("c").obj()])
    state.add_bound(info(make_pod("x").host_port(80).obj(), state), 0)
    state.add_bound(info(make_pod("y").host_port(80, "UDP").obj(), state), 1)
    state.add_bound(info(make_pod("z").host_port(80, host_ip="10.0.0.1").obj(), state), 2)
    plugin = NodePorts()
    tcp80 = info(make_pod("p").host_port(80).obj())
    assert plugin.filter(CycleState(), tcp80, state.table).tolist() == [False, True, False]
    other_ip = info(make_pod("q").host_port(80, host_ip="10.0.0.2").obj())
    assert plugin.filter(CycleState(), other_ip, state.table).tolist() == [False, True, True]


# --- NodeResourcesFit ----------------------------------------------------------------------------------------------


def fit_state() -> ClusterState:
    return ClusterState(
        [
            make_node("small").allocatable(cpu="1", memory="1Gi", pods="2").obj(),
            make_node("gpu").allocatable(cpu="8", memory="8Gi").resource("nvidia.com/gpu", 4).obj(),
        ]
    )


def test_fit_reports_every_insufficient_resource_per_node() -> None:
    state = fit_state()
    pi = info(make_pod("p").requests(cpu="2", memory="2Gi").request("nvidia.com/gpu", 8).obj(), state)
    plugin = NodeResourcesFit()
    assert plugin.filter(CycleState(), pi, state.table).tolist() == [False, False]
    reasons = plugin.reasons(CycleState(), pi, state.table, np.array([0, 1]))
    assert {r.message: n for r, n in reasons.items()} == {
        "Insufficient cpu": 1,
        "Insufficient memory": 1,
        "Insufficient nvidia.com/gpu": 2,
    }
    # Records, not strings: what was asked, used and there, on the first node short of it ("small", row 1).
    gpu = next(r for r in reasons if isinstance(r, InsufficientResource) and r.resource == "nvidia.com/gpu")
    assert (gpu.requested, gpu.used, gpu.capacity) == (8, 0, 4)
    cpu = next(r for r in reasons if isinstance(r, InsufficientResource) and r.resource == "cpu")
    assert (cpu.requested, cpu.used, cpu.capacity) == (2000, 0, 1000)
    assert not any(r.unresolvable for r in reasons)


def test_fit_counts_pods_and_sees_assumed_pods() -> None:
    state = fit_state()
    plugin = NodeResourcesFit()
    small = state.table.index["small"]
    assert state.table.names == ["gpu", "small"]
    for i in range(2):
        state.assume(info(make_pod(f"x{i}").obj(), state), small)
    pi = info(make_pod("p").obj(), state)
    assert plugin.filter(CycleState(), pi, state.table).tolist() == [True, False]
    reasons = plugin.reasons(CycleState(), pi, state.table, np.array([small]))
    assert reasons == {InsufficientResource("pods"): 1}
    assert [(r.message, r.used, r.capacity) for r in reasons] == [("Too many pods", 2, 2)]
    state.forget(state.pods["default/x0"])
    assert plugin.filter(CycleState(), pi, state.table).tolist() == [True, True]


def test_ignored_extended_resources_are_not_checked() -> None:
    state = fit_state()
    pi = info(make_pod("p").request("example.com/foo", 1).obj(), state)
    assert NodeResourcesFit().filter(CycleState(), pi, state.table).tolist() == [False, False]
    ignoring = NodeResourcesFit(NodeResourcesFitArgs(ignored_resource_groups=["example.com"]))
    assert ignoring.filter(CycleState(), pi, state.table).tolist() == [True, True]
