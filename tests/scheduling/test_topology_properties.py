"""Topology invariants over random clusters (hypothesis): a gang with a hard topology constraint never spans two
domains and never uses a node without the label; a preferred-level gang that one domain can hold is not split."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.models import Node, Pod, PodGroup
from phalanx.scheduling.config import SchedulerConfig, TopologyArgs, default_profile
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REQUIRED = "scheduling.phalanx.dev/topology-required"
PREFERRED = "scheduling.phalanx.dev/topology-preferred"


@st.composite
def racked(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[PodGroup]]:
    nodes = []
    for i in range(draw(st.integers(2, 9))):
        b = make_node(f"n{i}").allocatable(cpu=str(draw(st.integers(1, 4))))
        rack = draw(st.sampled_from(["r0", "r1", "r2", None]))
        if rack:
            b.label("rack", rack).label("block", "b0" if rack != "r2" else "b1")
        nodes.append(b.obj())
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    for g in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 4))
        group = make_group(f"g{g}", draw(st.integers(1, size)))
        mode = draw(st.sampled_from(["v136", "required", "preferred"]))
        if mode == "v136":
            group = _with_key(group)
        else:
            group.metadata.annotations[REQUIRED if mode == "required" else PREFERRED] = "rack"
        groups.append(group)
        cpu = f"{draw(st.integers(1, 3)) * 500}m"
        pods += [make_pod(f"g{g}-{i}").requests(cpu=cpu).group(f"g{g}").obj() for i in range(size)]
    return nodes, pods, groups


def _with_key(group: PodGroup) -> PodGroup:
    raw = msgspec.to_builtins(group)
    raw["spec"]["schedulingConstraints"] = {"topology": [{"key": "rack"}]}
    return msgspec.convert(raw, PodGroup)


def run(nodes: list[Node], pods: list[Pod], groups: list[PodGroup]) -> Scheduler:
    profile = default_profile()
    profile.args["TopologyPlacementGenerator"] = TopologyArgs(["block", "rack", "kubernetes.io/hostname"])
    s = Scheduler(SchedulerConfig(profiles=[profile]))
    s.load(nodes, pods, groups)
    s.run()
    return s


@SETTINGS
@given(racked())
def test_hard_topology_gangs_stay_in_one_domain(snapshot: tuple[list[Node], list[Pod], list[PodGroup]]) -> None:
    nodes, pods, groups = snapshot
    s = run(nodes, pods, groups)
    labels = {n.metadata.name: n.metadata.labels.get("rack") for n in nodes}
    for group in s.groups.groups.values():
        pg = group.pod_group
        hard = REQUIRED in pg.metadata.annotations or (pg.spec and pg.spec.scheduling_constraints)
        if not hard:
            continue
        racks = {labels[s.recorder.outcomes[k].node or ""] for k in s.groups.members_of(group.key) if s.is_bound(k)}
        assert None not in racks, (group.key, racks)
        assert len(racks) <= 1, (group.key, racks)


@SETTINGS
@given(racked())
def test_preferred_gang_is_not_split_when_one_rack_holds_it(
    snapshot: tuple[list[Node], list[Pod], list[PodGroup]],
) -> None:
    nodes, pods, groups = snapshot
    labels = {n.metadata.name: n.metadata.labels.get("rack") for n in nodes}
    for pg in (g for g in groups if PREFERRED in g.metadata.annotations):
        members = [
            p for p in pods if p.spec.scheduling_group and p.spec.scheduling_group.pod_group_name == pg.metadata.name
        ]
        s = run(nodes, members, [pg])  # alone on an empty cluster
        cpu = s.pods[f"default/{members[0].metadata.name}"].requests["cpu"]
        room: dict[str, int] = {}
        for n in nodes:
            rack = labels[n.metadata.name]
            if rack:
                room[rack] = room.get(rack, 0) + int(
                    s.state.table.allocatable[s.state.table.index[n.metadata.name], 0] // cpu
                )
        if any(r >= len(members) for r in room.values()):
            used = {labels[s.recorder.outcomes[f"default/{p.metadata.name}"].node or ""] for p in members}
            assert len(used) == 1 and None not in used, (pg.metadata.name, used, room)
