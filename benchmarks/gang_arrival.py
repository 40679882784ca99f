"""The engine's cost of a gang whose pods arrive one by one: CPU seconds to add N members of one PodGroup
(minCount = N) to a 100-node cluster, then to schedule them.

    python benchmarks/gang_arrival.py 1000 2000
"""

from __future__ import annotations

import argparse
import time

from phalanx.scheduling.scheduler import Scheduler
from scheduler_perf import make_group, make_nodes, make_pod


def gang_arrival(size: int) -> tuple[float, float, int]:
    """(CPU s adding the members, CPU s scheduling them, pods bound)."""
    s = Scheduler()
    s.load(make_nodes(100), [])
    start = time.process_time()
    s.add_pod_group(make_group("g", size))
    for i in range(size):
        s.add_pod(make_pod(f"g-{i}", "g"))
    added = time.process_time()
    bound = s.run()
    return added - start, time.process_time() - added, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 2000])
    for size in parser.parse_args().sizes:
        add, run, bound = gang_arrival(size)
        print(f"gang of {size}: add {add:.2f} s CPU, schedule {run:.2f} s CPU, {bound} bound")


if __name__ == "__main__":
    main()
