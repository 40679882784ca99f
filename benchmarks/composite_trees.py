"""The engine's cost of a CompositePodGroup tree (v1.37): disaggregated inference, one root CompositePodGroup that
must sit in one block, P prefill and D decode PodGroups of 8 one-GPU pods that must each sit in one rack, on a
cluster of B blocks x 8 racks x 8 nodes x 8 GPUs (GPUs as an extended resource). Prints CPU seconds per tree
cycle in phalanx's mode (min-first, backtracking) and under --compat v1.37 (greedy), and the pods bound.

    python benchmarks/composite_trees.py --blocks 4 --prefill 2 --decode 4
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import msgspec

from phalanx.api.models import CompositePodGroup, Node, Pod, PodGroup
from phalanx.scheduling.config import SchedulerConfig, with_mode
from phalanx.scheduling.scheduler import Scheduler

GPU = "nvidia.com/gpu"


def _nodes(blocks: int) -> list[Node]:
    out = []
    for b in range(blocks):
        for r in range(8):
            for n in range(8):
                labels = {"block": f"b{b}", "rack": f"b{b}-r{r}"}
                alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "8"}
                body = {"metadata": {"name": f"b{b}-r{r}-n{n}", "labels": labels}, "status": {"allocatable": alloc}}
                out.append(msgspec.convert(body, Node))
    return out


def _tree(prefill: int, decode: int) -> tuple[CompositePodGroup, list[PodGroup], list[Pod]]:
    ref = {"workloadName": "serving", "templateName": "t"}
    root: dict[str, Any] = {
        "metadata": {"name": "serving", "namespace": "default"},
        "spec": {
            "workloadRef": ref,
            "schedulingPolicy": {"gang": {"minGroupCount": prefill + decode}},
            "schedulingConstraints": {"topology": [{"key": "block"}]},
        },
    }
    groups, pods = [], []
    names = [f"prefill-{i}" for i in range(prefill)] + [f"decode-{i}" for i in range(decode)]
    for name in names:
        spec = {
            "parentCompositePodGroupName": "serving",
            "workloadRef": ref,
            "schedulingPolicy": {"gang": {"minCount": 8}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
        }
        groups.append(msgspec.convert({"metadata": {"name": name, "namespace": "default"}, "spec": spec}, PodGroup))
        for i in range(8):
            container = {"name": "c", "resources": {"requests": {"cpu": "4", GPU: "8"}}}
            body = {
                "metadata": {"name": f"{name}-{i}", "namespace": "default"},
                "spec": {"containers": [container], "schedulingGroup": {"podGroupName": name}},
            }
            pods.append(msgspec.convert(body, Pod))
    return msgspec.convert(root, CompositePodGroup), groups, pods


def run(blocks: int, prefill: int, decode: int, compat: str | None) -> tuple[float, int]:
    s = Scheduler(with_mode(SchedulerConfig(), compat))
    cpg, groups, pods = _tree(prefill, decode)
    s.load(_nodes(blocks), pods, groups, composite_pod_groups=[cpg])
    start = time.process_time()
    bound = s.run()
    return time.process_time() - start, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--prefill", type=int, default=2)
    parser.add_argument("--decode", type=int, default=4)
    args = parser.parse_args()
    nodes = args.blocks * 64
    print(f"{nodes} nodes, tree of {args.prefill} prefill + {args.decode} decode groups x 8 pods")
    print("| mode | CPU s | pods bound |")
    print("|---|---|---|")
    for label, compat in (("phalanx", None), ("--compat v1.37", "v1.37")):
        seconds, bound = run(args.blocks, args.prefill, args.decode, compat)
        print(f"| {label} | {seconds:.2f} | {bound} |")


if __name__ == "__main__":
    main()
