"""Simulation inputs in one place: the compact cluster spec (``cluster_spec``), job traces (``trace``, CSV or
YAML) and the generated Philly-shaped workload (``generate_jobs``). Formats are documented in docs/simulate.md."""

from __future__ import annotations

import random

from phalanx.api.errors import InputError
from phalanx.sim.cluster_spec import BLOCK, GPU, HOSTNAME, RACK, ClusterSpec, Pool, devices_of, nodes_of
from phalanx.sim.device_claims import GpuClaim
from phalanx.sim.devices import NUMA_NODE
from phalanx.sim.jobs import JobRecord
from phalanx.sim.trace import load_trace, load_workload

__all__ = [
    "BLOCK",
    "GPU",
    "HOSTNAME",
    "RACK",
    "ClusterSpec",
    "JobRecord",
    "Pool",
    "devices_of",
    "generate_jobs",
    "load_trace",
    "load_workload",
    "nodes_of",
]

MAX_GENERATED_JOBS = 1_000_000  # --jobs: a larger trace belongs in a file


def generate_jobs(
    preset: str,
    count: int,
    seed: int,
    gpus_per_node: int = 8,
    mean_gap: float = 60.0,
    failure_probability: float = 0.0,
    dra: bool = False,
) -> list[JobRecord]:
    """A seeded synthetic trace. ``philly`` follows the shape of the public Philly/Helios mixes: most jobs use one
    GPU, a long tail are gangs of 8 to 512 GPUs, durations heavy-tailed (minutes to hours). Every job gets
    ``failure_probability`` (the chance that an attempt fails) and the default backoffLimit 6. With ``dra`` the
    GPUs are claimed through ResourceClaimTemplates, and pods of 2 to 4 GPUs want them on one NUMA node."""
    if not 0.0 <= failure_probability <= 1.0:
        raise InputError([f"pod failure probability {failure_probability} is not between 0 and 1"])
    if preset != "philly":
        raise InputError([f'unknown workload preset "{preset}" (known: philly)'])
    rnd = random.Random(seed)
    sizes = [1] * 60 + [2] * 10 + [4] * 8 + [8] * 12 + [16] * 5 + [32] * 3 + [64] * 1 + [128] * 1
    jobs, t = [], 0.0
    for i in range(count):
        t += rnd.expovariate(1.0 / mean_gap)
        g = rnd.choice(sizes)
        pods = max(1, g // gpus_per_node)
        per_pod = g if g < gpus_per_node else gpus_per_node
        duration = min(rnd.lognormvariate(7.0, 1.2), 12 * 3600.0)
        topo = "preferred:" + RACK if pods > 1 else ""
        jobs.append(
            JobRecord(
                f"job-{i:05d}",
                round(t, 3),
                round(duration, 3),
                pods,
                cpu=str(4 * per_pod),
                memory=f"{16 * per_pod}Gi",
                gpus=per_pod,
                priority=rnd.choice([0, 0, 0, 100]),
                topology=topo,
                failure_probability=failure_probability,
                claim=_generated_claim(per_pod) if dra else None,
            )
        )
    return jobs


def _generated_claim(per_pod: int) -> GpuClaim:
    # Small multi-GPU pods care about the PCIe/NUMA path between their GPUs; whole-node pods get a node's all.
    return GpuClaim(match_attribute=NUMA_NODE if 2 <= per_pod <= 4 else "")
