"""v1.37's workload-aware preemption (``--compat v1.37``, ``Release.wap_single_run``): the group algorithm runs
once with every potential victim gone, a unit is reprieved only if each member still passes Filter on the node
that run chose, and groups with scheduling constraints are preempted for too (v1.36 refuses them). phalanx's mode
keeps v1.36's re-run (``reprieve-by-rerun``; scenario ``wap-reprieve-by-rerun``)."""

from __future__ import annotations

import msgspec

from phalanx.api.models import PodGroup
from phalanx.scheduling.config import SchedulerConfig, with_mode
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
