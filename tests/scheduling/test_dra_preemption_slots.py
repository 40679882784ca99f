"""Device-aware slot counting is exact (hypothesis), so DRA gangs may skip the run-the-cycle-per-domain path:

- for pods whose claims come from their own template and whose devices are node-local, ``placement.slots`` per
  node equals the number of members the PodGroup cycle places there when the group is larger than the cluster;
- workload-aware preemption of such a gang picks the same victims with the slot-counting simulator as with the
  group algorithm re-run for every reprieve.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dra_preemption import CLASS, _claim, _device_class, _node, _pod, _slice

from phalanx.api.loader import load
from phalanx.controllers.run import run_once
from phalanx.scheduling import placement as tas
from phalanx.scheduling.cycle import group_preemption as cycle
from phalanx.scheduling.resource_claims import ResourceObjects
from phalanx.scheduling.scheduler import Scheduler

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _loaded(objs: list[dict[str, Any]]) -> Scheduler:
    """The scheduler with the snapshot loaded (claims generated from templates) and nothing scheduled yet."""
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs})
    inv = load(["-"], io.StringIO(text))
    run_once(inv)
    s = Scheduler()
    resources = ResourceObjects(
        inv.device_classes, inv.resource_slices, inv.resource_claims, inv.resource_claim_templates, inv.generated_claims
    )
    s.load(inv.nodes, inv.pods, inv.pod_groups, inv.priority_classes, resources=resources)
    return s


def _template(name: str, count: int, selector: str = "") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": CLASS, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
    meta = {"name": name, "namespace": "default"}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": meta,
        "spec": {"spec": spec},
    }


@st.composite
def dra_gangs(draw: st.DrawFn, min_count: bool, priority: int) -> list[dict[str, Any]]:
    """GPU nodes (some GPUs "big"), running pods holding claims of assorted priorities and cpu, and one gang of
    identical members each claiming ``count`` GPUs (optionally only big ones) from one template, plus cpu."""
    objs: list[dict[str, Any]] = [_device_class()]
    for i in range(draw(st.integers(1, 4))):
        node, gpus = f"n{i}", draw(st.integers(0, 5))
        obj = _node(node)
        obj["status"]["allocatable"]["cpu"] = str(draw(st.integers(1, 8)))
        sl = _slice(node, gpus)
        for d in sl["spec"]["devices"]:
            d["attributes"] = {"big": {"bool": draw(st.booleans())}}
        objs += [obj, sl]
        free = [f"gpu-{g}" for g in range(gpus)]
        for j in range(draw(st.integers(0, gpus))):
            take = draw(st.integers(1, 2))
            if take > len(free):
                break
            devices, free = free[:take], free[take:]
            user = f"r{i}-{j}"
            objs.append(_claim(f"c{i}-{j}", take, node, devices, [user]))
            objs.append(_pod(user, draw(st.sampled_from([1, 10, 2000])), {"resourceClaimName": f"c{i}-{j}"}, node))
    big = 'device.attributes["gpu.example.com"].big' if draw(st.booleans()) else ""
    objs.append(_template("t", draw(st.integers(1, 2)), big))
    members = draw(st.integers(2, 12))
    policy = {"gang": {"minCount": draw(st.integers(1, members))}} if min_count else {"basic": {}}
    meta = {"name": "g", "namespace": "default"}
    group = {"priority": priority, "schedulingPolicy": policy}
    objs.append({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": meta, "spec": group})
    cpu = draw(st.sampled_from(["0", "1", "2"]))
    for m in range(members):
        pod = _pod(f"g-{m}", priority, {"resourceClaimTemplateName": "t"}, group="g")
        pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu}
        objs.append(pod)
    return objs


@SETTINGS
@given(dra_gangs(min_count=False, priority=0))  # below every running pod: nobody is preempted
def test_device_slots_equal_members_the_cycle_places(objs: list[dict[str, Any]]) -> None:
    s = _loaded(objs)
    profile, table = s.default_profile, s.state.table
    first = s.pods["default/g-0"]
    assert tas.per_node_only(profile, first, table), "the members' claims should be countable"
    slots = tas.slots(profile, first, table)
    members = len([o for o in objs if o["kind"] == "Pod" and "schedulingGroup" in o["spec"]])
    s.run()
    placed = np.zeros(len(table), dtype=np.int64)
    for key, row in s.state.placement.items():
        if key.startswith("default/g-"):
            placed[row] += 1
    if members >= int(slots.sum()):
        assert placed.tolist() == slots.tolist()
    else:
        assert int(placed.sum()) == members and (placed <= slots).all()


def _outcome(objs: list[dict[str, Any]]) -> tuple[Any, ...]:
    """Every preemption decision (its victims, in order) and every pod's final phase."""
    s = _loaded(objs)
    decisions: list[list[str]] = []
    evict = s.evict

    def recorded(victims: Any, *args: Any) -> None:
        victims = list(victims)
        decisions.append(sorted(v.key for v in victims))
        evict(victims, *args)

    s.evict = recorded  # type: ignore[method-assign]
    s.run()
    phases = sorted((k, o.phase) for k, o in s.recorder.outcomes.items())
    return decisions, phases


@SETTINGS
@given(dra_gangs(min_count=True, priority=1000))
def test_slot_simulator_preempts_like_the_group_algorithm(objs: list[dict[str, Any]]) -> None:
    fast = _outcome(objs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cycle, "_SlotSimulator", cycle._Simulator)
        slow = _outcome(objs)
    assert fast == slow
