"""Score plugins: exact integer scores as kube-scheduler computes them (worked by hand from its formulas)."""

from __future__ import annotations

import numpy as np
import pytest

from phalanx.cluster.pods import PodInfo
from phalanx.cluster.state import ClusterState
from phalanx.scheduling.framework import CycleState, default_normalize
from phalanx.scheduling.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from phalanx.scheduling.plugins.resource_allocation import ResourceSpec, ShapePoint, requested_to_capacity_ratio

from builders import make_node, make_pod


def two_nodes() -> tuple[ClusterState, PodInfo]:
    """busy: 4 CPU / 8Gi with 1 CPU / 2Gi used; idle: 4 CPU / 8Gi empty. The pod asks 1 CPU / 2Gi."""
    state = ClusterState(
        [
            make_node("busy").allocatable(cpu="4", memory="8Gi").obj(),
            make_node("idle").allocatable(cpu="4", memory="8Gi").obj(),
        ]
    )
    used = PodInfo.of(make_pod("used").requests(cpu="1", memory="2Gi").obj(), 0)
    state.attach(used)
    state.add_bound(used, state.table.index["busy"])
    pod = PodInfo.of(make_pod("p").requests(cpu="1", memory="2Gi").obj(), 0)
    state.attach(pod)
    return state, pod


def scores(plugin: NodeResourcesFit | NodeResourcesBalancedAllocation) -> list[int]:
    state, pod = two_nodes()
    raw = plugin.score(CycleState(), pod, state.table, np.arange(2))
    assert raw is not None
    return list(plugin.normalize(raw).tolist())


def test_least_allocated() -> None:
    # busy: (4000-2000)*100/4000 = 50 for cpu and memory; idle: (4000-1000)*100/4000 = 75
    assert scores(NodeResourcesFit()) == [50, 75]


def test_most_allocated() -> None:
    assert scores(NodeResourcesFit(NodeResourcesFitArgs(strategy="MostAllocated"))) == [50, 25]


def test_least_allocated_weights() -> None:
    # cpu weight 3, memory weight 1, on a pod asking only memory-heavy: same fractions here, so unchanged
    args = NodeResourcesFitArgs(resources=[ResourceSpec("cpu", 3), ResourceSpec("memory", 1)])
    assert scores(NodeResourcesFit(args)) == [50, 75]


def test_requested_to_capacity_ratio_packs() -> None:
    args = NodeResourcesFitArgs(strategy="RequestedToCapacityRatio", shape=[ShapePoint(0, 0), ShapePoint(100, 10)])
    assert scores(NodeResourcesFit(args)) == [50, 25]


def test_requested_to_capacity_ratio_truncates_toward_zero_like_go() -> None:
    # shape (0,10) -> (30,0) at utilisation 10: 100 + trunc(-100*10/30) = 100 - 33 = 67 (floor would give 66)
    req = np.array([[10]], dtype=np.int64)
    alloc = np.array([[100]], dtype=np.int64)
    out = requested_to_capacity_ratio(req, alloc, [1], [ShapePoint(0, 10), ShapePoint(30, 0)])
    assert out.tolist() == [67]


def test_balanced_allocation() -> None:
    # v1.36: 50 + (50 + with - without) / 2. busy: with (0.5, 0.5) 100, without (0.25, 0.25) 100 -> 75;
    # idle: with (0.25, 0.25) 100, without (0, 0) 100 -> 75. An even pod changes neither node's balance.
    assert scores(NodeResourcesBalancedAllocation()) == [75, 75]


def test_balanced_allocation_uneven() -> None:
    state = ClusterState([make_node("n").allocatable(cpu="4", memory="8Gi").obj()])
    pod = PodInfo.of(make_pod("p").requests(cpu="2", memory="2Gi").obj(), 0)
    state.attach(pod)
    raw = NodeResourcesBalancedAllocation().score(CycleState(), pod, state.table, np.arange(1))
    assert raw is not None
    # with the pod, fractions 0.5 and 0.25: std 0.125, (1 - 0.125) * 100 = 87.5 -> 87; without, 0 and 0: 100;
    # 50 + (50 + 87 - 100) / 2 = 50 + 18 = 68
    assert raw.tolist() == [68]


def test_balanced_allocation_skips_best_effort_pods() -> None:
    state, _ = two_nodes()
    pod = PodInfo.of(make_pod("be").obj(), 0)
    state.attach(pod)
    assert NodeResourcesBalancedAllocation().score(CycleState(), pod, state.table, np.arange(2)) is None


def test_best_effort_pods_score_with_default_requests() -> None:
    # LeastAllocated uses 100m / 200Mi for a pod without requests, so empty nodes still win
    state, _ = two_nodes()
    pod = PodInfo.of(make_pod("be").obj(), 0)
    state.attach(pod)
    raw = NodeResourcesFit().score(CycleState(), pod, state.table, np.arange(2))
    assert raw is not None
    assert raw[1] > raw[0]


@pytest.mark.parametrize(
    ("raw", "reverse", "expected"),
    [
        ([0, 0], False, [0, 0]),
        ([0, 0], True, [100, 100]),
        ([1, 2, 4], False, [25, 50, 100]),
        ([1, 2, 4], True, [75, 50, 0]),
    ],
)
def test_default_normalize(raw: list[int], reverse: bool, expected: list[int]) -> None:
    assert default_normalize(np.array(raw, dtype=np.int64), reverse).tolist() == expected
