"""DRA-aware preemption cost (docs/preemption.md, "Devices"): GPU nodes full of low-priority pods that each hold a
one-GPU claim, then high-priority preemptors that need those GPUs. Engine only.

    python benchmarks/dra_preemption_perf.py

Shapes (N nodes x 8 GPUs, 8 low-priority 1-GPU pods per node, all GPUs taken):
  PodPreemption: 20 high-priority pods of 1 GPU each (per-pod DefaultPreemption, node by node).
  GangPreemption: one PodGroup of 8 x 1-GPU members (workload-aware preemption, the group algorithm per reprieve).
Prints decisions, ms per decision (mean / max, the PostFilter work only) and pods bound per second of the run.
"""

from __future__ import annotations

import io
import sys
import time
from typing import Any

import yaml

from phalanx.snapshot.schedule import schedule_snapshot

CLASS = "gpu.example.com"
GPUS = 8


def _cluster(n: int) -> list[dict[str, Any]]:
    dc = {"cel": {"expression": f'device.driver == "{CLASS}"'}}
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": CLASS},
            "spec": {"selectors": [dc]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}},
        },
    ]
    for i in range(n):
        node = f"n{i:04d}"
        objs.append(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}, "status": {"allocatable": {"pods": "110"}}}
        )
        devices = [{"name": f"gpu-{g}"} for g in range(GPUS)]
        pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
        spec = {"driver": CLASS, "nodeName": node, "pool": pool, "devices": devices}
        objs.append(
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": node}, "spec": spec}
        )
        for g in range(GPUS):
            name = f"low-{i}-{g}"
            results = [{"request": "gpu", "driver": CLASS, "pool": node, "device": f"gpu-{g}"}]
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            claim_spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}
            objs.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": claim_spec,
                    "status": {
                        "allocation": {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [term]}},
                        "reservedFor": [{"resource": "pods", "name": name, "uid": f"{name}-uid"}],
                    },
                }
            )
            objs.append(
                _pod(name, 1, {"resourceClaimName": name}, node=node, start=f"2026-01-01T00:{g:02d}:{i % 60:02d}Z")
            )
    return objs


def _pod(name: str, priority: int, claim: dict[str, str], node: str = "", group: str = "", start: str = "") -> Any:
    spec: dict[str, Any] = {
        "priority": priority,
        "resourceClaims": [{"name": "gpu", **claim}],
        "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
    }
    meta = {"name": name, "namespace": "default", "uid": f"{name}-uid"}
    status: dict[str, Any] = {}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": start}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _run(name: str, objs: list[dict[str, Any]]) -> None:
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs})
    start = time.perf_counter()
    s, _, timings = schedule_snapshot(["-"], stdin=io.StringIO(text))
    wall = time.perf_counter() - start
    decisions = s.stats.preemption_seconds
    mean = 1000 * sum(decisions) / max(len(decisions), 1)
    top = 1000 * max(decisions, default=0.0)
    rate = s.stats.pods_bound / timings.schedule if timings.schedule else 0.0
    print(
        f"| {name} | {len(s.recorder.evictions)} | {len(decisions)} | {mean:.1f} / {top:.1f} | {rate:,.0f} | "
        f"{timings.schedule:.2f} s of {wall:.2f} s |"
    )


def main() -> int:
    print("| shape | evicted | decisions | ms per decision (mean / max) | pods/s | schedule of total |")
    print("|---|---|---|---|---|---|")
    for n in (100, 500):
        pods = [_pod(f"high-{k}", 1000, {"resourceClaimTemplateName": "one-gpu"}) for k in range(20)]
        _run(f"PodPreemption: {n} nodes x 8 GPUs full, 20 x 1-GPU preemptors", _cluster(n) + pods)
        group = {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"priority": 1000, "schedulingPolicy": {"gang": {"minCount": 8}}},
        }
        members = [_pod(f"train-{k}", 1000, {"resourceClaimTemplateName": "one-gpu"}, group="train") for k in range(8)]
        _run(f"GangPreemption: {n} nodes x 8 GPUs full, 1 x 8 1-GPU members", [*_cluster(n), group, *members])
    return 0


if __name__ == "__main__":
    sys.exit(main())
