"""A topology placement counts how many members each domain holds by free slots only when one member stands for
all (``members.counted_by_slots``); members that differ in a spread constraint are run, not counted (found by the
v1.36.3 differential run, random-1-0047)."""

from __future__ import annotations

import msgspec
import pytest

from phalanx.api.models import PodGroup
from phalanx.scheduling.config import SchedulerConfig, with_mode
from phalanx.scheduling.scheduler import Scheduler

from builders import make_node, make_pod


@pytest.mark.parametrize("compat", [None, "v1.36", "v1.37"])
def test_a_member_with_its_own_spread_constraint_is_not_counted_by_the_first_members_slots(
    compat: str | None,
) -> None:
    """rack a: one 4-cpu node; rack b: two 2-cpu nodes. g-1 may not share a node with more g pods than the emptiest
    node has (hostname spread, maxSkew 1): in rack a it fails beside g-0, in rack b it takes the other node. The
    first member's slots say both racks hold all three; only rack b does."""
    group = msgspec.convert(
        {
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {
                "schedulingPolicy": {"gang": {"minCount": 1}},
                "schedulingConstraints": {"topology": [{"key": "rack"}]},
            },
        },
        PodGroup,
    )
    nodes = [
        make_node("a1").labels(rack="a", **{"kubernetes.io/hostname": "a1"}).allocatable(cpu="4").obj(),
        make_node("b1").labels(rack="b", **{"kubernetes.io/hostname": "b1"}).allocatable(cpu="2").obj(),
        make_node("b2").labels(rack="b", **{"kubernetes.io/hostname": "b2"}).allocatable(cpu="2").obj(),
    ]
    selector = {"labelSelector": {"matchLabels": {"app": "g"}}}
    pods = [
        make_pod("g-0").requests(cpu="1").labels(app="g").group("g").created("2026-01-01T10:00:00Z").obj(),
        make_pod("g-1")
        .requests(cpu="1")
        .labels(app="g")
        .group("g")
        .created("2026-01-01T10:01:00Z")
        .spread("kubernetes.io/hostname", **selector)
        .obj(),
        make_pod("g-2").requests(cpu="1").labels(app="g").group("g").created("2026-01-01T10:02:00Z").obj(),
    ]
    s = Scheduler(with_mode(SchedulerConfig(), compat))
    s.load(nodes, pods, [group])
    s.run()
    placed = {k: o.node for k, o in s.recorder.outcomes.items() if o.phase == "Scheduled"}
    assert set(placed) == {"default/g-0", "default/g-1", "default/g-2"}
    assert set(placed.values()) == {"b1", "b2"}
