"""Topology-aware placement benchmarks.

    python benchmarks/topology_perf.py            # scheduler_perf's TopologyAwareScheduling shapes + packing quality
    python benchmarks/topology_perf.py --quality  # packing quality only

1. TopologyAwareScheduling (spec/peers.md §1.3): 5,000 nodes (rack = index / 100, so 50 racks of 100 nodes;
   scheduler_perf's node-default: 4 CPU, 32Gi, 110 pods), gangs with `schedulingConstraints.topology` on the rack
   label: 750 / 1,500 / 2,250 gangs x 4 pods and 3 / 6 / 9 gangs x 1,000 pods. Prints pods/s, cycle latency
   percentiles (one cycle = one gang) and peak RSS.
2. Packing quality on a 3-level GPU cluster (4 blocks x 8 racks x 8 nodes x 8 GPUs) with a seeded stream of gangs
   that prefer a rack (1-8 nodes of 8 GPUs): the fraction of gangs placed in a single rack when some rack could
   hold them, and the racks left completely free, for phalanx and for Kueue's BestFit (the tightest rack that
   holds the gang, else the fewest racks, largest first) computed on the same stream.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict

import numpy as np

from phalanx.api.models import (
    Container,
    Node,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodGroupSchedulingConstraints,
    PodSchedulingGroup,
    PodSpec,
    ResourceRequirements,
    TopologyConstraint,
)
from phalanx.scheduling.config import SchedulerConfig, TopologyArgs, default_profile
from phalanx.scheduling.scheduler import Scheduler
from scheduler_perf import Result, make_group, make_nodes, make_pod

RACK = "topology.kubernetes.io/rack"


def tas_shape(gangs: int, size: int, nodes: int = 5000) -> Result:
    cluster = make_nodes(nodes)
    for i, node in enumerate(cluster):
        node.metadata.labels[RACK] = f"rack-{i // 100}"
    s = Scheduler()
    s.load(cluster, [])
    for g in range(gangs):
        pg = make_group(f"gang-{g}", size)
        assert pg.spec is not None
        pg.spec.scheduling_constraints = PodGroupSchedulingConstraints(topology=[TopologyConstraint(key=RACK)])
        s.add_pod_group(pg)
        for i in range(size):
            s.add_pod(make_pod(f"gang-{g}-{i}", f"gang-{g}"))
    start = time.perf_counter()
    bound = s.run()
    return Result(f"TopologyAwareScheduling {gangs}x{size}", bound, time.perf_counter() - start, s.stats.cycle_seconds)


# --- packing quality -------------------------------------------------------------------------------------------

BLOCKS, RACKS, NODES = 4, 8, 8


def gpu_cluster() -> list[Node]:
    out = []
    for b in range(BLOCKS):
        for r in range(RACKS):
            for n in range(NODES):
                name = f"b{b}-r{r}-n{n}"
                labels = {"kubernetes.io/hostname": name, "block": f"b{b}", "rack": f"b{b}-r{r}"}
                alloc: dict[str, str | int | float] = {
                    "cpu": "64",
                    "memory": "512Gi",
                    "pods": "110",
                    "nvidia.com/gpu": "8",
                }
                out.append(Node(metadata=ObjectMeta(name=name, labels=labels), status=NodeStatus(allocatable=alloc)))
    return out


def gang_stream(seed: int, count: int) -> list[int]:
    """Gang sizes in nodes (each pod takes a whole 8-GPU node), mostly small with a tail of full racks."""
    rnd = random.Random(seed)
    return [rnd.choice([1, 1, 1, 2, 2, 3, 4, 4, 6, 8]) for _ in range(count)]


def gpu_pod(name: str, group: str) -> Pod:
    res = ResourceRequirements(limits={"nvidia.com/gpu": 8}, requests={"cpu": "8", "memory": "64Gi"})
    return Pod(
        metadata=ObjectMeta(name=name, namespace="ml"),
        spec=PodSpec(
            containers=[Container(name="w", resources=res)], scheduling_group=PodSchedulingGroup(pod_group_name=group)
        ),
    )


def phalanx_packing(sizes: list[int]) -> tuple[float, int, int]:
    profile = default_profile()
    profile.args["TopologyPlacementGenerator"] = TopologyArgs(["block", "rack", "kubernetes.io/hostname"])
    s = Scheduler(SchedulerConfig(profiles=[profile]))
    s.load(gpu_cluster(), [])
    free = np.full(BLOCKS * RACKS, NODES)
    single = possible = placed = 0
    for g, size in enumerate(sizes):
        pg = make_group(f"g{g}", size, "ml")
        pg.metadata.annotations["scheduling.phalanx.dev/topology-preferred"] = "rack"
        s.add_pod_group(pg)
        for i in range(size):
            s.add_pod(gpu_pod(f"g{g}-{i}", f"g{g}"))
        fits_one = bool((free >= size).any())
        s.run()
        racks = defaultdict(int)
        for i in range(size):
            out = s.recorder.outcomes.get(f"ml/g{g}-{i}")
            if out is not None and out.node:
                racks[out.node.rsplit("-n", 1)[0]] += 1
        if racks:
            placed += 1
            for rack, n in racks.items():
                b, r = rack.split("-")
                free[int(b[1:]) * RACKS + int(r[1:])] -= n
        possible += fits_one
        single += fits_one and len(racks) == 1
    return (single / possible if possible else 1.0), int((free == NODES).sum()), placed


def kueue_best_fit(sizes: list[int]) -> tuple[int, int]:
    """Kueue BestFit at rack level on the same stream: the tightest rack that holds the gang; otherwise racks
    by most free capacity with the last one swapped for the tightest that covers the remainder."""
    free = np.full(BLOCKS * RACKS, NODES)
    placed = 0
    for size in sizes:
        fits = [r for r in range(len(free)) if free[r] >= size]
        if fits:
            r = min(fits, key=lambda x: (free[x], x))
            free[r] -= size
            placed += 1
            continue
        order = sorted(range(len(free)), key=lambda x: (-free[x], x))
        picked, covered = [], 0
        for r in order:
            if covered >= size or free[r] == 0:
                break
            picked.append(r)
            covered += free[r]
        if covered < size:
            continue
        rest = size - (covered - free[picked[-1]])
        picked[-1] = min((x for x in order if x not in picked[:-1] and free[x] >= rest), key=lambda x: (free[x], x))
        need = size
        for r in picked:
            take = min(free[r], need)
            free[r] -= take
            need -= take
        placed += 1
    return int((free == NODES).sum()), placed


def quality(seeds: int = 5, gangs: int = 60) -> None:
    print(
        f"\nPacking quality: {BLOCKS} blocks x {RACKS} racks x {NODES} nodes x 8 GPUs, {gangs} gangs preferring a rack"
    )
    heads = ["seed", "single-rack when possible", "free racks phalanx", "free racks Kueue BestFit", "gangs placed p/k"]
    print("  ".join(heads))
    for seed in range(seeds):
        sizes = gang_stream(seed, gangs)
        frac, free_p, placed_p = phalanx_packing(sizes)
        free_k, placed_k = kueue_best_fit(sizes)
        print(f"{seed:>4}  {frac * 100:>24.1f}%  {free_p:>18}  {free_k:>24}  {placed_p:>8}/{placed_k}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quality", action="store_true", help="packing quality only")
    args = parser.parse_args()
    if not args.quality:
        columns = [
            ("pods", 8),
            ("seconds", 8),
            ("pods/s", 10),
            ("p50 ms", 8),
            ("p90 ms", 8),
            ("p99 ms", 8),
            ("RSS MiB", 9),
        ]
        print(f"{'shape':<34} " + " ".join(f"{h:>{w}}" for h, w in columns))
        for gangs, size in [(750, 4), (1500, 4), (2250, 4), (3, 1000), (6, 1000), (9, 1000)]:
            print(tas_shape(gangs, size).row(), flush=True)
    quality()


if __name__ == "__main__":
    main()
