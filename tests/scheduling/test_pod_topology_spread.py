"""PodTopologySpread: filter masks and scores worked by hand from kube-scheduler's rules.

Cluster used by most cases (``web`` marks pods labelled app=web already on a node)::

    zone a: a1, a2      zone b: b1      no zone label: c0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.models import Node, Pod, PodGroup, TopologySpreadConstraint
from phalanx.cluster.pods import PodInfo
from phalanx.cluster.state import ClusterState
from phalanx.scheduling.config import parse_config
from phalanx.scheduling.framework import CycleState
from phalanx.scheduling.plugins.pod_topology_spread import (
    REASON,
    REASON_MISSING_LABEL,
    PodTopologySpread,
    PodTopologySpreadArgs,
)
from phalanx.scheduling.scheduler import Scheduler

from builders import PodBuilder, make_group, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"matchLabels": {"app": "web"}}
NODES = ["a1", "a2", "b1", "c0"]


def cluster(existing: dict[str, list[PodBuilder]], tainted: str = "") -> ClusterState:
    nodes = []
    for name in NODES:
        b = make_node(name)
        if name[0] != "c":
            b.label(ZONE, name[0])
        if name == tainted:
            b.taint("dedicated", "x")
        nodes.append(b.obj())
    state = ClusterState(nodes)
    for node, pods in existing.items():
        for pb in pods:
            pi = PodInfo.of(pb.obj(), 0)
            state.add_bound(pi, state.table.index[node])
    return state


def web(name: str, **labels: str) -> PodBuilder:
    return make_pod(name).labels(app="web", **labels)


def pod_info(b: PodBuilder) -> PodInfo:
    return PodInfo.of(b.obj(), 0)


@dataclass
class FilterCase:
    id: str
    existing: dict[str, list[PodBuilder]]
    pod: PodBuilder
    mask: list[bool]  # a1, a2, b1, c0
    reasons: dict[str, int] = field(default_factory=lambda: {REASON_MISSING_LABEL: 1})
    tainted: str = ""


FILTER_CASES = [
    FilterCase(
        # a: 1, b: 0, minimum 0; a: 1 + 1 - 0 = 2 > 1; b: 0 + 1 - 0 = 1
        "zone-skew",
        {"a1": [web("w1")]},
        web("p").spread(ZONE, 1, labelSelector=WEB),
        [False, False, True, False],
        {REASON: 2, REASON_MISSING_LABEL: 1},
    ),
    FilterCase(
        # a: 1, b: 1, minimum 1: 1 + 1 - 1 = 1 everywhere
        "balanced-domains-pass",
        {"a1": [web("w1")], "b1": [web("w2")]},
        web("p").spread(ZONE, 1, labelSelector=WEB),
        [True, True, True, False],
    ),
    FilterCase(
        # two domains < minDomains 3: the global minimum is 0, so 1 + 1 - 0 = 2 > 1 everywhere
        "min-domains",
        {"a1": [web("w1")], "b1": [web("w2")]},
        web("p").spread(ZONE, 1, labelSelector=WEB, minDomains=3),
        [False, False, False, False],
        {REASON: 3, REASON_MISSING_LABEL: 1},
    ),
    FilterCase(
        # the pod does not match its own selector: no self-match, a: 1 + 0 - 0 = 1
        "no-self-match",
        {"a1": [web("w1")]},
        make_pod("p").labels(app="other").spread(ZONE, 1, labelSelector=WEB),
        [True, True, True, False],
    ),
    FilterCase(
        # hostname: a1 holds 2, minimum 0 over four hosts: a1 2 + 1 > 2
        "hostname-max-skew-2",
        {"a1": [web("w1"), web("w2")], "a2": [web("w3")]},
        web("p").spread(HOST, 2, labelSelector=WEB),
        [False, True, True, True],
        {REASON: 1},
    ),
    FilterCase(
        # nodeAffinityPolicy Honor (default): only zone a counts, minimum 1: 1 + 1 - 1 = 1 passes
        "node-affinity-policy-honor",
        {"a1": [web("w1")]},
        web("p").selector(**{ZONE: "a"}).spread(ZONE, 1, labelSelector=WEB),
        [True, True, True, False],
    ),
    FilterCase(
        # nodeAffinityPolicy Ignore: zone b counts too, minimum 0: a fails
        "node-affinity-policy-ignore",
        {"a1": [web("w1")]},
        web("p").selector(**{ZONE: "a"}).spread(ZONE, 1, labelSelector=WEB, nodeAffinityPolicy="Ignore"),
        [False, False, True, False],
        {REASON: 2, REASON_MISSING_LABEL: 1},
    ),
    FilterCase(
        # nodeTaintsPolicy Honor: b1's untolerated taint removes domain b, minimum 1 (zone a)
        "node-taints-policy-honor",
        {"a1": [web("w1")]},
        web("p").spread(ZONE, 1, labelSelector=WEB, nodeTaintsPolicy="Honor"),
        [True, True, True, False],
        tainted="b1",
    ),
    FilterCase(
        # nodeTaintsPolicy Ignore (default): b1 still counts, minimum 0
        "node-taints-policy-ignore",
        {"a1": [web("w1")]},
        web("p").spread(ZONE, 1, labelSelector=WEB),
        [False, False, True, False],
        {REASON: 2, REASON_MISSING_LABEL: 1},
        tainted="b1",
    ),
    FilterCase(
        # matchLabelKeys [version]: the selector becomes app=web,version=v2; the v1 pod does not count
        "match-label-keys",
        {"a1": [web("w1", version="v1")]},
        web("p", version="v2").spread(ZONE, 1, labelSelector=WEB, matchLabelKeys=["version"]),
        [True, True, True, False],
    ),
    FilterCase(
        # pods being deleted and pods of other namespaces are not counted
        "terminating-and-other-namespace",
        {"a1": [web("w1").terminating(), make_pod("w2", "other").labels(app="web")]},
        web("p").spread(ZONE, 1, labelSelector=WEB),
        [True, True, True, False],
    ),
    FilterCase(
        # a nil labelSelector matches nothing: counts are all 0 and the pod does not self-match
        "nil-selector",
        {"a1": [web("w1")]},
        web("p").spread(ZONE, 1),
        [True, True, True, False],
    ),
    FilterCase(
        # the first failing constraint names the reason: c0 misses the zone label, a1 fails the hostname skew
        "first-failing-constraint",
        {"a1": [web("w1"), web("w2")]},
        web("p").spread(HOST, 1, labelSelector=WEB).spread(ZONE, 3, labelSelector=WEB),
        [False, True, True, False],
        {REASON: 1, REASON_MISSING_LABEL: 1},
    ),
    FilterCase(
        # ScheduleAnyway constraints do not filter
        "schedule-anyway-does-not-filter",
        {"a1": [web("w1"), web("w2")]},
        web("p").spread(ZONE, 1, "ScheduleAnyway", labelSelector=WEB),
        [True, True, True, True],
        {},
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: c.id)
def test_filter(case: FilterCase) -> None:
    state = cluster(case.existing, case.tainted)
    plugin, pod = PodTopologySpread(), pod_info(case.pod)
    mask = plugin.filter(CycleState(), pod, state.table)
    assert mask.tolist() == case.mask
    rejected = np.flatnonzero(~mask)
    assert dict(plugin.reasons(CycleState(), pod, state.table, rejected)) == case.reasons


def test_filter_sees_assumed_pods_and_forgets_them() -> None:
    state = cluster({})
    plugin = PodTopologySpread()
    first = pod_info(web("m0").spread(ZONE, 1, labelSelector=WEB))
    state.assume(first, state.table.index["a1"])
    second = pod_info(web("m1").spread(ZONE, 1, labelSelector=WEB))
    assert plugin.filter(CycleState(), second, state.table).tolist() == [False, False, True, False]
    state.forget(first)
    assert plugin.filter(CycleState(), second, state.table).tolist() == [True, True, True, False]


@dataclass
class ScoreCase:
    id: str
    existing: dict[str, list[PodBuilder]]
    pod: PodBuilder
    feasible: list[str]
    normalized: list[int] | None
    args: PodTopologySpreadArgs | None = None


SCORE_CASES = [
    ScoreCase(
        # zone, 2 domains: weight ln(4) = 1.386; a: 2 * 1.386 + 0 = 2.77 -> 3, b: 0 -> 0; (3 + 0 - s) * 100 / 3
        "zone",
        {"a1": [web("w1"), web("w2")]},
        web("p").spread(ZONE, 1, "ScheduleAnyway", labelSelector=WEB),
        ["a1", "a2", "b1"],
        [0, 0, 100],
    ),
    ScoreCase(
        # hostname over 3 feasible nodes: ln(5) = 1.609; a1: 2 * 1.609 = 3.22 -> 3, others 0
        "hostname",
        {"a1": [web("w1"), web("w2")]},
        web("p").spread(HOST, 1, "ScheduleAnyway", labelSelector=WEB),
        ["a1", "a2", "b1"],
        [0, 100, 100],
    ),
    ScoreCase(
        # both: a1 2.77 + 3.22 = 5.99 -> 6, a2 2.77 -> 3, b1 0: (6 + 0 - s) * 100 / 6
        "zone-and-hostname",
        {"a1": [web("w1"), web("w2")]},
        web("p")
        .spread(ZONE, 1, "ScheduleAnyway", labelSelector=WEB)
        .spread(HOST, 1, "ScheduleAnyway", labelSelector=WEB),
        ["a1", "a2", "b1"],
        [0, 50, 100],
    ),
    ScoreCase(
        # c0 lacks the zone label: PreScore ignores it (score 0) and it is not a domain
        "node-without-label-ignored",
        {"a1": [web("w1"), web("w2")]},
        web("p").spread(ZONE, 1, "ScheduleAnyway", labelSelector=WEB),
        ["a1", "a2", "b1", "c0"],
        [0, 0, 100, 0],
    ),
    ScoreCase(
        # only feasible nodes make domains: with a1 alone, one domain (ln 3) and maxSkew 3 adds 2 -> max == min
        "domains-from-feasible-nodes",
        {"a1": [web("w1")]},
        web("p").spread(ZONE, 3, "ScheduleAnyway", labelSelector=WEB),
        ["a1"],
        [100],
    ),
    ScoreCase(
        # system defaults for a ReplicaSet's pod (its labels as selector), missing labels not ignored:
        # a1: host 2 * ln5 + 2 + zone 2 * ln4 + 4 = 11.99 -> 12; a2: 2 + 6.77 -> 9; b1: 2 + 4 = 6;
        # (12 + 6 - s) * 100 / 12
        "system-defaults",
        {"a1": [web("w1"), web("w2")]},
        web("p").owner("ReplicaSet"),
        ["a1", "a2", "b1"],
        [50, 75, 100],
    ),
    ScoreCase("system-defaults-need-an-owner", {"a1": [web("w1")]}, web("p"), ["a1", "a2", "b1"], None),
    ScoreCase(
        # List defaulting with no constraints turns the defaults off
        "list-defaulting-empty",
        {"a1": [web("w1")]},
        web("p").owner("ReplicaSet"),
        ["a1", "a2", "b1"],
        None,
        PodTopologySpreadArgs([], "List"),
    ),
    ScoreCase(
        # List defaulting: zone maxSkew 1 with the pod's labels; a: 2 * ln4 = 2.77 -> 3, b: 0
        "list-defaulting",
        {"a1": [web("w1"), web("w2")]},
        web("p").owner("StatefulSet"),
        ["a1", "a2", "b1"],
        [0, 0, 100],
        PodTopologySpreadArgs(
            [TopologySpreadConstraint(max_skew=1, topology_key=ZONE, when_unsatisfiable="ScheduleAnyway")], "List"
        ),
    ),
    ScoreCase(
        "hard-constraints-only-skip-scoring",
        {"a1": [web("w1")]},
        web("p").spread(ZONE, 1, labelSelector=WEB),
        ["a1", "a2", "b1"],
        None,
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.id)
def test_score(case: ScoreCase) -> None:
    state = cluster(case.existing)
    plugin, pod = PodTopologySpread(case.args), pod_info(case.pod)
    rows = np.array([state.table.index[n] for n in case.feasible])
    raw = plugin.score(CycleState(), pod, state.table, rows)
    if case.normalized is None:
        assert raw is None
        return
    assert raw is not None
    assert plugin.normalize(raw).tolist() == case.normalized


def test_all_scores_zero_normalise_to_max() -> None:
    state = cluster({})
    plugin, pod = PodTopologySpread(), pod_info(web("p").spread(ZONE, 1, "ScheduleAnyway", labelSelector=WEB))
    raw = plugin.score(CycleState(), pod, state.table, np.arange(3))
    assert raw is not None and raw.tolist() == [0, 0, 0]
    assert plugin.normalize(raw).tolist() == [100, 100, 100]


def _config(args: dict[str, Any]) -> Any:
    raw = {
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": args}]}],
    }
    return parse_config(raw).profiles[0].args["PodTopologySpread"]


def test_config_args() -> None:
    args = _config(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}],
        }
    )
    assert args.defaulting_type == "List"
    assert args.default_constraints[0].max_skew == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"defaultingType": "Other"}, 'defaultingType: Unsupported value: "Other"'),
        (
            {"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
            'when .defaultingType is "System"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
                ],
            },
            "must not define a selector",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE}]},
            "maxSkew: Invalid value: 0",
        ),
    ],
)
def test_config_args_errors(args: dict[str, Any], message: str) -> None:
    from phalanx.api.errors import InputError

    with pytest.raises(InputError, match="pluginConfig") as exc:
        _config(args)
    assert message in str(exc.value)


# --- property: DoNotSchedule spread never exceeds maxSkew ---------------------------------------------------------


@st.composite
def spread_clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[PodGroup], int]:
    """Random zoned nodes (some without a zone), and pending app=web pods, solo and in gangs, that all carry the
    same DoNotSchedule zone constraint; no pod runs yet, so every placement had to respect the skew."""
    max_skew = draw(st.integers(1, 3))
    nodes = []
    for i in range(draw(st.integers(1, 7))):
        b = make_node(f"n{i}").allocatable(cpu=str(draw(st.integers(1, 6))), memory="32Gi")
        zone = draw(st.sampled_from(["a", "b", "c", None]))
        if zone:
            b.label(ZONE, zone)
        nodes.append(b.obj())

    def pod(name: str) -> PodBuilder:
        b = web(name).requests(cpu=f"{draw(st.integers(1, 4)) * 500}m")
        return b.spread(ZONE, max_skew, labelSelector=WEB, **({"minDomains": 3} if draw(st.booleans()) else {}))

    pods, groups = [], []
    for g in range(draw(st.integers(0, 3))):
        size = draw(st.integers(1, 5))
        groups.append(make_group(f"g{g}", draw(st.integers(1, size))))
        pods += [pod(f"g{g}-{i}").group(f"g{g}").obj() for i in range(size)]
    pods += [pod(f"solo-{j}").obj() for j in range(draw(st.integers(0, 10)))]
    return nodes, pods, groups, max_skew


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spread_clusters())
def test_placed_pods_never_exceed_max_skew(case: tuple[list[Node], list[Pod], list[PodGroup], int]) -> None:
    nodes, pods, groups, max_skew = case
    s = Scheduler()
    s.load(nodes, pods, groups)
    s.run()
    zones = {n.metadata.name: n.metadata.labels.get(ZONE) for n in nodes}
    per_zone = {z: 0 for z in zones.values() if z}
    for key, row in s.state.placement.items():
        zone = zones[s.state.table.names[row]]
        assert zone is not None, f"{key} placed on a node without the zone label"
        per_zone[zone] += 1
    if per_zone:
        assert max(per_zone.values()) - min(per_zone.values()) <= max_skew, per_zone
