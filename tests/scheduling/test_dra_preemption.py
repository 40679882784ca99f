"""DRA-aware preemption invariants (hypothesis) over random GPU clusters whose running pods hold claims:

- after any run with preemption, the AllocatedState equals the one rebuilt from scratch from the claims left
  (no device leaked by a what-if removal, none counted twice), and no device is held by two claims;
- evicted pods are in no claim's reservedFor; a claim still reserved by a pod of priority >= its evictor's
  preemptor keeps its allocation;
- ``suspend``/``resume`` in any order restore every claim's allocation, reservedFor and the AllocatedState exactly,
  and the DynamicResources Filter sees both changes (its per-node cache is told).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.dra.claims import ClaimTracker, Suspension
from phalanx.dra.state import AllocatedState
from phalanx.scheduling.framework import CycleState
from phalanx.scheduling.plugins.dynamic_resources import DynamicResources
from phalanx.scheduling.scheduler import Scheduler
from phalanx.snapshot.schedule import schedule_snapshot

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CLASS = "gpu.example.com"


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"pods": "20"}}}


def _slice(node: str, gpus: int) -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}"} for i in range(gpus)]
    pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
    spec = {"driver": CLASS, "nodeName": node, "pool": pool, "devices": devices}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": node}, "spec": spec}


def _claim(
    name: str, count: int, node: str | None = None, devices: Sequence[str] = (), users: Sequence[str] = ()
) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": CLASS, "count": count}}
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [request]}},
    }
    if node is not None:
        results = [{"request": "gpu", "driver": CLASS, "pool": node, "device": d} for d in devices]
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        obj["status"] = {
            "allocation": {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [term]}},
            "reservedFor": [{"resource": "pods", "name": u, "uid": f"{u}-uid"} for u in users],
        }
    return obj


def _pod(
    name: str, priority: int, claim: dict[str, str], node: str | None = None, group: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priority": priority,
        "resourceClaims": [{"name": "gpu", **claim}],
        "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
    }
    if node is not None:
        spec["nodeName"] = node
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"}}
    return {**pod, "spec": spec, "status": {"phase": "Running"} if node else {}}


def _device_class() -> dict[str, Any]:
    selector = {"cel": {"expression": f'device.driver == "{CLASS}"'}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [selector]},
    }


@st.composite
def gpu_clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Nodes with 1-4 GPUs; running pods (priority 1, 10 or 100) hold claims on their node's GPUs, some claims
    shared by two pods; pending preemptors are single pods needing 1-3 GPUs or a gang of two 1-GPU members."""
    objs: list[dict[str, Any]] = [_device_class()]
    priorities = st.sampled_from([1, 10, 100])
    for i in range(draw(st.integers(1, 4))):
        node, gpus = f"n{i}", draw(st.integers(1, 4))
        objs += [_node(node), _slice(node, gpus)]
        free = [f"gpu-{g}" for g in range(gpus)]
        for j in range(draw(st.integers(0, gpus))):
            take = draw(st.integers(1, 2))
            if take > len(free):
                break
            devices, free = free[:take], free[take:]
            users = [f"r{i}-{j}"] + ([f"r{i}-{j}b"] if draw(st.booleans()) else [])
            claim = f"c{i}-{j}"
            objs.append(_claim(claim, take, node, devices, users))
            objs += [_pod(u, draw(priorities), {"resourceClaimName": claim}, node) for u in users]
    for k in range(draw(st.integers(1, 3))):
        priority = draw(st.sampled_from([5, 50, 1000, 1000]))
        if draw(st.booleans()):
            objs.append(_claim(f"want-{k}", draw(st.integers(1, 3))))
            objs.append(_pod(f"p{k}", priority, {"resourceClaimName": f"want-{k}"}))
            continue
        gang = {"gang": {"minCount": 2}}
        meta = {"name": f"g{k}", "namespace": "default"}
        objs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": meta,
                "spec": {"priority": priority, "schedulingPolicy": gang},
            }
        )
        for m in range(2):
            objs.append(_claim(f"g{k}-{m}", 1))
            objs.append(_pod(f"g{k}-{m}", priority, {"resourceClaimName": f"g{k}-{m}"}, group=f"g{k}"))
    return objs


def _schedule(objs: list[dict[str, Any]]) -> Scheduler:
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs})
    sched, _, _ = schedule_snapshot(["-"], stdin=io.StringIO(text))
    return sched


def _counts(state: AllocatedState) -> tuple[Any, ...]:
    return (state._exclusive, state._shares, state._consumed, state._counters)


def _rebuilt(tracker: ClaimTracker) -> AllocatedState:
    fresh = AllocatedState(tracker.inventory)
    for record in tracker.records.values():
        if record.allocation is not None:
            fresh.add(record.allocation)
    return fresh


def _claims_view(tracker: ClaimTracker) -> dict[str, Any]:
    return {k: (r.allocation, list(r.reserved_for), r.assumed_by) for k, r in tracker.records.items()}


@SETTINGS
@given(gpu_clusters())
def test_allocated_state_equals_rebuild_after_preemption(objs: list[dict[str, Any]]) -> None:
    s = _schedule(objs)
    tracker = s.claims.tracker
    assert _counts(tracker.allocated) == _counts(_rebuilt(tracker))
    assert all(n == 1 for n in tracker.allocated._exclusive.values()), "a device is held by two claims"
    evicted = {e.name for e in s.recorder.evictions}
    for e in s.recorder.evictions:
        key = f"{e.preemptor_namespace}/{e.preemptor_name}"
        below = s.pods[key].priority if e.preemptor_kind == "Pod" else s.groups.priority(key)
        assert s.pods[f"{e.namespace}/{e.name}"].priority < below
    for record in tracker.records.values():
        users = {r.name for r in record.reserved_for}
        assert not users & evicted, f"evicted pods {users & evicted} still reserve {record.key}"
        assert record.allocation is None or users, f"{record.key} is allocated with no consumer"


def _placed_with_claims(s: Scheduler) -> list[str]:
    return sorted(k for k in s.claims.held if k in s.state.placement)


@SETTINGS
@given(gpu_clusters(), st.randoms(use_true_random=False))
def test_suspend_resume_restores_exactly(objs: list[dict[str, Any]], rnd: Any) -> None:
    running = [o for o in objs if o["kind"] != "Pod" or o["spec"].get("nodeName")]
    s = _schedule(running)
    tracker = s.claims.tracker
    before, counts, epoch = _claims_view(tracker), _counts(tracker.allocated), tracker.epoch
    keys = _placed_with_claims(s)
    chosen = rnd.sample(keys, rnd.randint(0, len(keys)))
    tokens: list[Suspension] = [s.claims.suspend(s.pods[k]) for k in chosen]
    assert _counts(tracker.allocated) == _counts(_rebuilt(tracker))
    suspended = {k.split("/", 1)[1] for k in chosen}
    for record in tracker.records.values():
        users = {r.name for r in record.reserved_for}
        assert not users & suspended
        if not users:
            assert record.allocation is None, "a claim with no consumer left keeps its devices"
    rnd.shuffle(tokens)
    for token in tokens:
        s.claims.resume(token)
    assert _claims_view(tracker) == before
    assert _counts(tracker.allocated) == counts
    assert tracker.epoch >= epoch  # never goes back: a cache computed while suspended must not look fresh


def test_filter_sees_suspended_devices_and_their_return() -> None:
    selector = {"cel": {"expression": "true"}}
    high = _pod("high", 1000, {"resourceClaimName": "want"})
    high["spec"]["schedulingGates"] = [{"name": "hold"}]  # stays pending: the test drives Filter itself
    objs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": CLASS},
            "spec": {"selectors": [selector]},
        },
        _node("n0"),
        _slice("n0", 1),
        _claim("held", 1, "n0", ["gpu-0"], ["low"]),
        _pod("low", 1, {"resourceClaimName": "held"}, "n0"),
        _claim("want", 1),
        high,
    ]
    s = _schedule(objs)
    plugin = next(p for p in s.default_profile.filters if isinstance(p, DynamicResources))
    pending, low, table = s.pods["default/high"], s.pods["default/low"], s.state.table
    rejected = np.ones(len(table), dtype=bool)

    def fits() -> bool:
        return bool(plugin.filter(CycleState(), pending, table)[0])

    assert not fits()
    assert plugin.resolvable_rows(CycleState(), pending, table, rejected).tolist() == [True]
    token = s.claims.suspend(low)
    assert fits()
    s.claims.resume(token)
    assert not fits()
    # A holder of the preemptor's own priority frees nothing: the node is not resolvable.
    s.claims.priority[low.key] = pending.priority
    assert plugin.resolvable_rows(CycleState(), pending, table, rejected).tolist() == [False]
