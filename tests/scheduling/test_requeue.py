"""A gang that failed is retried whole when capacity frees up (no member is stranded; spec §8.13)."""

from __future__ import annotations

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
