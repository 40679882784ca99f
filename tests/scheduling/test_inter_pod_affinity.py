"""InterPodAffinity: filter masks and scores worked by hand from kube-scheduler's rules.

Cluster used by every case (pods listed per node already run there)::

    zone a: a1, a2      zone b: b1      no zone label: c0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.errors import InputError
from phalanx.api.models import Node, Pod, PodGroup
from phalanx.cluster.pods import PodInfo
from phalanx.cluster.state import ClusterState
from phalanx.scheduling.config import parse_config
from phalanx.scheduling.framework import CycleState
from phalanx.scheduling.plugins.inter_pod_affinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from phalanx.scheduling.scheduler import Scheduler

from builders import PodBuilder, make_group, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DB = {"matchLabels": {"app": "db"}}
WEB = {"matchLabels": {"app": "web"}}
NODES = ["a1", "a2", "b1", "c0"]


def cluster(existing: dict[str, list[PodBuilder]], namespaces: dict[str, dict[str, str]] | None = None) -> ClusterState:
    nodes = [make_node(n).label(ZONE, n[0]).obj() if n[0] != "c" else make_node(n).obj() for n in NODES]
    state = ClusterState(nodes)
    state.table.namespace_labels = namespaces or {}
    for node, pods in existing.items():
        for pb in pods:
            state.add_bound(PodInfo.of(pb.obj(), 0), state.table.index[node])
    return state


def db(name: str = "db", namespace: str = "default") -> PodBuilder:
    return make_pod(name, namespace).labels(app="db")


def web(name: str = "p", **labels: str) -> PodBuilder:
    return make_pod(name).labels(app="web", **labels)


@dataclass
class FilterCase:
    id: str
    existing: dict[str, list[PodBuilder]]
    pod: PodBuilder
    mask: list[bool]  # a1, a2, b1, c0
    reasons: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] | None = None


FILTER_CASES = [
    FilterCase(
        "affinity-zone",
        {"a1": [db()]},
        web().pod_affinity("podAffinity", ZONE, labelSelector=DB),
        [True, True, False, False],
        {REASON_AFFINITY: 2},
    ),
    FilterCase(
        # no db pod anywhere and the pod is not a db pod: nowhere
        "affinity-no-match-anywhere",
        {"a1": [web("w")]},
        web().pod_affinity("podAffinity", ZONE, labelSelector=DB),
        [False, False, False, False],
        {REASON_AFFINITY: 4},
    ),
    FilterCase(
        # the first pod of a group with affinity to itself may start anywhere the topology label exists
        "affinity-first-pod",
        {},
        db("p").pod_affinity("podAffinity", ZONE, labelSelector=DB),
        [True, True, True, False],
        {REASON_AFFINITY: 1},
    ),
    FilterCase(
        # a matching pod must match every required term: the db pod is not on a "role: primary" pod
        "affinity-all-terms",
        {"a1": [db()], "b1": [make_pod("x").labels(role="primary")]},
        web()
        .pod_affinity("podAffinity", ZONE, labelSelector=DB)
        .pod_affinity("podAffinity", HOST, labelSelector={"matchLabels": {"role": "primary"}}),
        [False, False, False, False],
        {REASON_AFFINITY: 4},
    ),
    FilterCase(
        "affinity-other-namespace-not-seen",
        {"a1": [db(namespace="data")]},
        web().pod_affinity("podAffinity", ZONE, labelSelector=DB),
        [False, False, False, False],
        {REASON_AFFINITY: 4},
    ),
    FilterCase(
        "affinity-namespaces-list",
        {"a1": [db(namespace="data")]},
        web().pod_affinity("podAffinity", ZONE, labelSelector=DB, namespaces=["data"]),
        [True, True, False, False],
        {REASON_AFFINITY: 2},
    ),
    FilterCase(
        # without Namespace objects a namespace has only its kubernetes.io/metadata.name label
        "affinity-namespace-selector-by-name",
        {"b1": [db(namespace="data")]},
        web().pod_affinity(
            "podAffinity",
            ZONE,
            labelSelector=DB,
            namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "data"}},
        ),
        [False, False, True, False],
        {REASON_AFFINITY: 3},
    ),
    FilterCase(
        "affinity-namespace-selector-from-namespace-objects",
        {"b1": [db(namespace="data")]},
        web().pod_affinity("podAffinity", ZONE, labelSelector=DB, namespaceSelector={"matchLabels": {"team": "x"}}),
        [False, False, True, False],
        {REASON_AFFINITY: 3},
        {"data": {"team": "x"}},
    ),
    FilterCase(
        # an empty namespaceSelector selects every namespace
        "affinity-empty-namespace-selector",
        {"a2": [db(namespace="data")]},
        web().pod_affinity("podAffinity", ZONE, labelSelector=DB, namespaceSelector={}),
        [True, True, False, False],
        {REASON_AFFINITY: 2},
    ),
    FilterCase(
        "anti-affinity-hostname",
        {"a1": [db()]},
        web().pod_affinity("podAntiAffinity", HOST, labelSelector=DB),
        [False, True, True, True],
        {REASON_ANTI_AFFINITY: 1},
    ),
    FilterCase(
        # a node without the topology label cannot share a domain with anyone
        "anti-affinity-zone",
        {"a1": [db()]},
        web().pod_affinity("podAntiAffinity", ZONE, labelSelector=DB),
        [False, False, True, True],
        {REASON_ANTI_AFFINITY: 2},
    ),
    FilterCase(
        # matchLabelKeys [version] adds version=v2: only the v2 pod on b1 repels
        "anti-affinity-match-label-keys",
        {"a1": [web("w1", version="v1")], "b1": [web("w2", version="v2")]},
        web(version="v2").pod_affinity("podAntiAffinity", HOST, labelSelector=WEB, matchLabelKeys=["version"]),
        [True, True, False, True],
        {REASON_ANTI_AFFINITY: 1},
    ),
    FilterCase(
        # mismatchLabelKeys [version] adds version NotIn [v2]: only the v1 pod on a1 repels
        "anti-affinity-mismatch-label-keys",
        {"a1": [web("w1", version="v1")], "b1": [web("w2", version="v2")]},
        web(version="v2").pod_affinity("podAntiAffinity", HOST, labelSelector=WEB, mismatchLabelKeys=["version"]),
        [False, True, True, True],
        {REASON_ANTI_AFFINITY: 1},
    ),
    FilterCase(
        "existing-pods-anti-affinity",
        {"a1": [db().pod_affinity("podAntiAffinity", ZONE, labelSelector=WEB)]},
        web(),
        [False, False, True, True],
        {REASON_EXISTING_ANTI_AFFINITY: 2},
    ),
    FilterCase(
        # the existing pod's term covers only its own namespace
        "existing-pods-anti-affinity-other-namespace",
        {"a1": [db(namespace="data").pod_affinity("podAntiAffinity", ZONE, labelSelector=WEB)]},
        web(),
        [True, True, True, True],
    ),
    FilterCase(
        # the first failing check names the reason: affinity, then anti-affinity, then existing pods' anti-affinity
        "reason-order",
        {
            "a1": [db()],
            "a2": [db("db2").pod_affinity("podAntiAffinity", HOST, labelSelector=WEB)],
            "b1": [make_pod("cache").labels(app="cache")],
        },
        web()
        .pod_affinity("podAffinity", ZONE, labelSelector=DB)
        .pod_affinity("podAntiAffinity", HOST, labelSelector={"matchLabels": {"app": "cache"}}),
        [True, False, False, False],
        {REASON_AFFINITY: 2, REASON_EXISTING_ANTI_AFFINITY: 1},
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: c.id)
def test_filter(case: FilterCase) -> None:
    state = cluster(case.existing, case.namespaces)
    plugin, pod = InterPodAffinity(), PodInfo.of(case.pod.obj(), 0)
    mask = plugin.filter(CycleState(), pod, state.table)
    assert mask.tolist() == case.mask
    assert dict(plugin.reasons(CycleState(), pod, state.table, np.flatnonzero(~mask))) == case.reasons


def test_anti_affinity_sees_assumed_pods() -> None:
    state = cluster({})
    plugin = InterPodAffinity()
    first = PodInfo.of(db("m0").pod_affinity("podAntiAffinity", HOST, labelSelector=DB).obj(), 0)
    state.assume(first, state.table.index["b1"])
    second = PodInfo.of(db("m1").pod_affinity("podAntiAffinity", HOST, labelSelector=DB).obj(), 0)
    assert plugin.filter(CycleState(), second, state.table).tolist() == [True, True, False, True]
    state.forget(first)
    assert plugin.filter(CycleState(), second, state.table).tolist() == [True, True, True, True]


@dataclass
class ScoreCase:
    id: str
    existing: dict[str, list[PodBuilder]]
    pod: PodBuilder
    raw: list[int] | None  # a1, a2, b1, c0
    normalized: list[int] | None
    args: InterPodAffinityArgs | None = None


SCORE_CASES = [
    ScoreCase(
        "preferred-affinity-zone",
        {"a1": [db()]},
        web().pod_affinity("podAffinity", ZONE, 10, labelSelector=DB),
        [10, 10, 0, 0],
        [100, 100, 0, 0],
    ),
    ScoreCase(
        # two db pods in zone a: the weight counts per matching pod
        "preferred-affinity-counts-pods",
        {"a1": [db("d1")], "a2": [db("d2")], "b1": [db("d3")]},
        web().pod_affinity("podAffinity", ZONE, 10, labelSelector=DB),
        [20, 20, 10, 0],
        [100, 100, 50, 0],
    ),
    ScoreCase(
        "preferred-anti-affinity-hostname",
        {"a1": [db()]},
        web().pod_affinity("podAntiAffinity", HOST, 10, labelSelector=DB),
        [-10, 0, 0, 0],
        [0, 100, 100, 100],
    ),
    ScoreCase(
        # 30 * (a) - 10 * (host): a1 20, a2 30; (s - min) * 100 / (max - min) truncated: a1 66
        "affinity-and-anti-affinity",
        {"a1": [db()]},
        web()
        .pod_affinity("podAffinity", ZONE, 30, labelSelector=DB)
        .pod_affinity("podAntiAffinity", HOST, 10, labelSelector=DB),
        [20, 30, 0, 0],
        [66, 100, 0, 0],
    ),
    ScoreCase(
        # an existing pod's required affinity to web pods attracts them with hardPodAffinityWeight (1)
        "existing-required-affinity-hard-weight",
        {"b1": [db().pod_affinity("podAffinity", ZONE, labelSelector=WEB)]},
        web(),
        [0, 0, 1, 0],
        [0, 0, 100, 0],
    ),
    ScoreCase(
        "hard-weight-zero",
        {"b1": [db().pod_affinity("podAffinity", ZONE, labelSelector=WEB)]},
        web(),
        None,
        None,
        InterPodAffinityArgs(hard_pod_affinity_weight=0),
    ),
    ScoreCase(
        "existing-preferred-anti-affinity",
        {"a1": [db().pod_affinity("podAntiAffinity", HOST, 5, labelSelector=WEB)]},
        web(),
        [-5, 0, 0, 0],
        [0, 100, 100, 100],
    ),
    ScoreCase(
        "existing-preferred-affinity",
        {"a1": [db().pod_affinity("podAffinity", ZONE, 5, labelSelector=WEB)]},
        web(),
        [5, 5, 0, 0],
        [100, 100, 0, 0],
    ),
    ScoreCase(
        "ignore-preferred-terms-of-existing-pods",
        {"a1": [db().pod_affinity("podAffinity", ZONE, 5, labelSelector=WEB)]},
        web(),
        None,
        None,
        InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True),
    ),
    ScoreCase("no-terms-anywhere", {"a1": [db()]}, web(), None, None),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.id)
def test_score(case: ScoreCase) -> None:
    state = cluster(case.existing)
    plugin, pod = InterPodAffinity(case.args), PodInfo.of(case.pod.obj(), 0)
    raw = plugin.score(CycleState(), pod, state.table, np.arange(4))
    if case.raw is None:
        assert raw is None
        return
    assert raw is not None
    assert raw.tolist() == case.raw
    assert plugin.normalize(raw).tolist() == case.normalized


def test_equal_scores_normalise_to_zero() -> None:
    assert InterPodAffinity().normalize(np.array([7, 7, 7])).tolist() == [0, 0, 0]


def _config(args: dict[str, Any]) -> Any:
    raw = {
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [{"name": "InterPodAffinity", "args": args}]}],
    }
    return parse_config(raw).profiles[0].args["InterPodAffinity"]


def test_config_args() -> None:
    args = _config({"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True})
    assert args == InterPodAffinityArgs(5, True)


def test_config_args_weight_out_of_range() -> None:
    with pytest.raises(InputError, match=r"hardPodAffinityWeight: Invalid value: 101"):
        _config({"hardPodAffinityWeight": 101})


# --- property: required anti-affinity is never violated, required affinity always satisfied ------------------------


@st.composite
def affinity_clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[PodGroup]]:
    """Random zoned nodes; pending app=db pods (solo and in gangs) that repel each other per hostname, and app=web
    pods that require a db pod in their zone."""
    nodes = []
    for i in range(draw(st.integers(1, 6))):
        b = make_node(f"n{i}").allocatable(cpu=str(draw(st.integers(1, 4))), memory="32Gi")
        if zone := draw(st.sampled_from(["a", "b", None])):
            b.label(ZONE, zone)
        nodes.append(b.obj())

    def pod(name: str) -> PodBuilder:
        cpu = f"{draw(st.integers(1, 3)) * 500}m"
        if draw(st.booleans()):
            return db(name).requests(cpu=cpu).pod_affinity("podAntiAffinity", HOST, labelSelector=DB)
        return web(name).requests(cpu=cpu).pod_affinity("podAffinity", ZONE, labelSelector=DB)

    pods, groups = [], []
    for g in range(draw(st.integers(0, 2))):
        size = draw(st.integers(1, 4))
        groups.append(make_group(f"g{g}", draw(st.integers(1, size))))
        pods += [pod(f"g{g}-{i}").group(f"g{g}").obj() for i in range(size)]
    pods += [pod(f"solo-{j}").obj() for j in range(draw(st.integers(0, 8)))]
    return nodes, pods, groups


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(affinity_clusters())
def test_required_terms_hold_for_every_placed_pod(case: tuple[list[Node], list[Pod], list[PodGroup]]) -> None:
    nodes, pods, groups = case
    s = Scheduler()
    s.load(nodes, pods, groups)
    s.run()
    zone_of = {n.metadata.name: n.metadata.labels.get(ZONE) for n in nodes}
    placed = {key: s.state.table.names[row] for key, row in s.state.placement.items()}
    app = {f"default/{p.metadata.name}": p.metadata.labels["app"] for p in pods}
    db_nodes = [node for key, node in placed.items() if app[key] == "db"]
    assert len(db_nodes) == len(set(db_nodes)), "two db pods share a node"
    db_zones = {zone_of[node] for node in db_nodes}
    for key, node in placed.items():
        if app[key] == "web":
            assert zone_of[node] is not None and zone_of[node] in db_zones, f"{key} on {node} has no db pod in its zone"
