"""Invariants over random clusters and gangs (hypothesis):

- no node is over-committed, for any resource or the pod count;
- a gang newly binds at least minCount members (counting already-bound ones) or none;
- the output is deterministic and does not depend on input order;
- the incremental caches choose exactly what a from-scratch evaluation of every plugin chooses.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.models import Node, Pod, PodGroup
from phalanx.cluster.resources import pod_requests
from phalanx.scheduling.framework import CycleState
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[PodGroup]]:
    nodes = []
    for i in range(draw(st.integers(1, 6))):
        b = make_node(f"n{i}").allocatable(
            cpu=str(draw(st.integers(1, 8))), memory=f"{draw(st.integers(1, 16))}Gi", pods=str(draw(st.integers(1, 6)))
        )
        gpus = draw(st.sampled_from([0, 0, 4, 8]))
        if gpus:
            b.resource("nvidia.com/gpu", gpus)
        if draw(st.booleans()):
            b.label("zone", draw(st.sampled_from(["a", "b"])))
        if draw(st.integers(0, 4)) == 0:
            b.taint("dedicated", "x", draw(st.sampled_from(["NoSchedule", "PreferNoSchedule"])))
        nodes.append(b.obj())
    pods: list[Pod] = []
    groups: list[PodGroup] = []

    def pod(name: str) -> Any:
        b = make_pod(name).requests(cpu=f"{draw(st.integers(1, 4)) * 500}m", memory=f"{draw(st.integers(1, 6))}Gi")
        b.priority(draw(st.sampled_from([0, 10])))
        b.created(f"2026-01-01T00:00:{draw(st.integers(0, 9)):02d}Z")
        if draw(st.integers(0, 3)) == 0:
            b.request("nvidia.com/gpu", draw(st.sampled_from([1, 2, 4, 8])))
        if draw(st.integers(0, 4)) == 0:
            b.selector(zone=draw(st.sampled_from(["a", "b"])))
        if draw(st.booleans()):
            b.toleration(key="dedicated", operator="Exists")
        return b

    for g in range(draw(st.integers(0, 3))):
        size = draw(st.integers(1, 5))
        min_count = draw(st.integers(1, size))
        basic = draw(st.integers(0, 4)) == 0
        groups.append(make_group(f"g{g}", None if basic else min_count))
        identical = draw(st.booleans())
        template = pod("t")
        for i in range(size):
            b = msgspec.convert(template.d, dict) if identical else pod("x").d
            b = dict(b, metadata={**b["metadata"], "name": f"g{g}-{i}"})
            b["spec"] = dict(b["spec"], schedulingGroup={"podGroupName": f"g{g}"})
            pods.append(msgspec.convert(b, Pod))
    for j in range(draw(st.integers(0, 8))):
        pods.append(pod(f"solo-{j}").obj())
    return nodes, pods, groups


def run(nodes: list[Node], pods: list[Pod], groups: list[PodGroup], incremental: bool = True) -> Scheduler:
    s = Scheduler()
    for profile in s.profiles.values():
        profile.incremental = incremental
    s.load(nodes, pods, groups)
    s.run()
    return s


def placements(s: Scheduler) -> dict[str, str]:
    return {k: s.state.table.names[v] for k, v in s.state.placement.items()}


@SETTINGS
@given(clusters())
def test_no_node_is_over_committed(snapshot: tuple[list[Node], list[Pod], list[PodGroup]]) -> None:
    nodes, pods, groups = snapshot
    s = run(nodes, pods, groups)
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    count: dict[str, int] = defaultdict(int)
    by_key = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pods}
    for key, node in placements(s).items():
        for res, amount in pod_requests(by_key[key]).requests.items():
            used[node][res] += amount
        count[node] += 1
    table = s.state.table
    for node, per_res in used.items():
        row = table.index[node]
        assert count[node] <= table.max_pods[row]
        for res, amount in per_res.items():
            assert amount <= table.allocatable[row, table.resources.column[res]], (node, res)


@SETTINGS
@given(clusters())
def test_gang_binds_min_count_or_nothing(snapshot: tuple[list[Node], list[Pod], list[PodGroup]]) -> None:
    nodes, pods, groups = snapshot
    s = run(nodes, pods, groups)
    for group in s.groups.groups.values():
        bound = [k for k in s.groups.members_of(group.key) if k in s.state.placement]
        # A gang is bound whole (minCount at least) or not at all; afterwards preemption may take members of a
        # Pod-mode gang one by one (its declared disruptionMode), but only after the gang was bound whole.
        evicted = [e for e in s.recorder.evictions if e.group == group.key]  # type: ignore[attr-defined]
        if group.min_count is not None:
            assert len(bound) == 0 or len(bound) + len(evicted) >= group.min_count, (group.key, bound, evicted)
        cond = s.condition(group.key)
        if bound:
            assert cond is not None and cond.status == "True"


@SETTINGS
@given(clusters(), st.randoms(use_true_random=False))
def test_deterministic_and_input_order_independent(
    snapshot: tuple[list[Node], list[Pod], list[PodGroup]], rnd: random.Random
) -> None:
    nodes, pods, groups = snapshot
    first = placements(run(nodes, pods, groups))
    assert placements(run(nodes, pods, groups)) == first
    shuffled = (rnd.sample(nodes, len(nodes)), rnd.sample(pods, len(pods)), rnd.sample(groups, len(groups)))
    assert placements(run(*shuffled)) == first


@SETTINGS
@given(clusters())
def test_incremental_caches_match_full_evaluation(snapshot: tuple[list[Node], list[Pod], list[PodGroup]]) -> None:
    nodes, pods, groups = snapshot
    assert placements(run(nodes, pods, groups)) == placements(run(nodes, pods, groups, incremental=False))


@SETTINGS
@given(clusters())
def test_profile_matches_direct_plugin_calls(snapshot: tuple[list[Node], list[Pod], list[PodGroup]]) -> None:
    """Every placement equals the node a plain loop over the plugins picks, with no caching at all."""
    nodes, pods, _ = snapshot
    s = Scheduler()
    s.load(nodes, [p for p in pods if p.spec.scheduling_group is None])
    profile = s.default_profile
    table = s.state.table
    for pi in sorted(s.queue._active.values(), key=lambda p: p.sort_key()):
        mask = np.ones(len(table), dtype=bool)
        for plugin in profile.filters:
            mask &= plugin.filter(CycleState(), pi, table)
        rows = np.flatnonzero(mask)
        chosen = profile.schedule(pi, table).node
        if len(rows) == 0:
            assert chosen is None
            continue
        total = np.zeros(len(rows), dtype=np.int64)
        for plugin, weight in profile.scores:
            raw = plugin.score(CycleState(), pi, table, rows)
            if raw is not None:
                total += weight * plugin.normalize(raw)
        expected = int(rows[0]) if len(rows) == 1 else profile.select(pi, rows, total)
        assert chosen == expected
        s.state.assume(pi, expected)
