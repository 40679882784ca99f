"""Simulator scale: wall time and peak RSS to simulate 10,000 jobs / about 100,000 pods on 1,000 nodes.

    python benchmarks/simulate_perf.py [--jobs 10000] [--nodes 1000] [--policy gang]

Jobs are 10 pods each on average (1-19, uniform), CPU-only pods on 64-CPU nodes, arriving fast enough to keep a
queue; one policy per run (the engine does the same work for every policy).
"""

from __future__ import annotations

import argparse
import random
import time

from phalanx.sim.metrics import summary
from phalanx.sim.simulator import POLICIES, simulate
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, nodes_of
from phalanx.snapshot.schedule import peak_rss_bytes


def jobs(count: int, seed: int) -> list[JobRecord]:
    rnd = random.Random(seed)
    t, out = 0.0, []
    for i in range(count):
        t += rnd.expovariate(1 / 2.0)
        out.append(
            JobRecord(
                f"job-{i:05d}",
                round(t, 3),
                round(rnd.uniform(60, 3600), 3),
                rnd.randint(1, 19),
                cpu=str(rnd.choice([1, 2, 4])),
                memory="4Gi",
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--policy", default="gang", choices=sorted(POLICIES))
    args = parser.parse_args()
    trace = jobs(args.jobs, 1)
    nodes = nodes_of(ClusterSpec([Pool("cpu", args.nodes, {"cpu": "64", "memory": "256Gi", "pods": 110}, 20, 5)]))
    start = time.perf_counter()
    result = simulate(nodes, trace, POLICIES[args.policy])
    wall = time.perf_counter() - start
    s = summary(result)
    pods = sum(j.pods for j in trace)
    print(f"jobs {len(trace)}, pods {pods}, nodes {args.nodes}, policy {args.policy}")
    print(f"wall {wall:.1f} s, {pods / wall:.0f} pods/s simulated, {result.cycles} scheduling rounds")
    queue = s["queueSeconds"]["mean"]
    print(f"completed {s['completed']}, mean queue {queue:.0f} s, peak RSS {peak_rss_bytes() / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
