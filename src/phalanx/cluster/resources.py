"""Resource accounting: which column of the node table holds which resource, and what a pod requests.

CPU is counted in millicores, everything else in whole units (bytes, devices), exactly as kube-scheduler's
``framework.Resource`` does. ``pods`` is not a column: pod counts live in their own array.

Amounts are exact up to ``MAX_AMOUNT`` (2^56 - 1 units: 7.2e13 cores, 64 PiB). kube-apiserver accepts far larger
quantities (``cpu: 1e18``) and kube-scheduler's int64 milli-values overflow on them; here an allocatable above
the limit counts as ``MAX_AMOUNT`` and a request above it as ``MAX_AMOUNT + 1``, which no node has, so such a pod
is unschedulable (``Insufficient cpu``) rather than wrongly placed, and no sum or score over the int64 columns can
overflow (scores multiply by 100).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from phalanx.api.models import Container, Pod, Quantity, ResourceRequirements
from phalanx.api.quantity import milli_value, parse_quantity, value

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MAX_AMOUNT",
    "MEMORY",
    "PodRequests",
    "ResourceIndex",
    "allocatable_amount",
    "amount",
    "defaulted_requests",
    "pod_requests",
]

CPU, MEMORY, EPHEMERAL_STORAGE = 0, 1, 2
_FIXED = ("cpu", "memory", "ephemeral-storage")
# Defaults used for scoring pods that leave a request unset (``schedutil.DefaultMilliCPURequest`` and
# ``DefaultMemoryRequest``), so that best-effort pods still spread.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

Vector = npt.NDArray[np.int64]
MAX_AMOUNT = 2**56 - 1


@functools.lru_cache(maxsize=4096)  # pods repeat a few spellings ("500m", "2Gi"); parsing one is most of a pod's cost
def amount(resource: str, quantity: Quantity) -> int:
    """The exact integer amount of a quantity of ``resource``: millicores for CPU, rounded-up units otherwise."""
    q = parse_quantity(quantity)
    return milli_value(q) if resource == "cpu" else value(q)


def allocatable_amount(resource: str, quantity: Quantity) -> int:
    """A node's amount as the node table holds it: exact up to ``MAX_AMOUNT``, ``MAX_AMOUNT`` above."""
    return min(amount(resource, quantity), MAX_AMOUNT)


def _requested(exact: int) -> int:
    """A pod's amount as the node table holds it: a request above ``MAX_AMOUNT`` fits no node."""
    return exact if exact <= MAX_AMOUNT else MAX_AMOUNT + 1


class ResourceIndex:
    """The resource columns of the node table: cpu, memory, ephemeral-storage, then extended resources."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names: list[str] = list(_FIXED)
        self.column: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        for name in sorted(set(names)):
            self.add(name)

    def add(self, name: str) -> int:
        """The column of ``name``, adding it if new. Columns are never removed or reordered."""
        col = self.column.get(name)
        if col is None:
            col = len(self.names)
            self.names.append(name)
            self.column[name] = col
        return col

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True, slots=True)
class PodRequests:
    """What a pod asks for, by resource name: the effective request used for fit, and the non-zero CPU and memory
    requests used for scoring (missing container requests count as 100m CPU and 200Mi memory)."""

    requests: dict[str, int]
    nonzero_cpu: int
    nonzero_memory: int


def defaulted_requests(requirements: ResourceRequirements) -> Mapping[str, Quantity]:
    """Requests after API defaulting (``SetDefaults_Pod``): a resource with a limit but no request requests its
    limit. GPU pods are often written with limits only."""
    if not requirements.limits:
        return requirements.requests
    return {**requirements.limits, **requirements.requests}


def _container_requests(c: Container) -> dict[str, int]:
    return {name: amount(name, q) for name, q in defaulted_requests(c.resources).items() if name != "pods"}


def _nonzero(c: Container) -> tuple[int, int]:
    req = defaulted_requests(c.resources)
    cpu = amount("cpu", req["cpu"]) if "cpu" in req else DEFAULT_MILLI_CPU_REQUEST
    mem = amount("memory", req["memory"]) if "memory" in req else DEFAULT_MEMORY_REQUEST
    return cpu, mem


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


_POD_LEVEL = ("cpu", "memory")


def pod_requests(pod: Pod) -> PodRequests:
    """The pod's effective request, as ``resourcehelper.PodRequests`` computes it.

    Algorithm:
      1. Sum the regular containers.
      2. Walk the init containers in order. A sidecar (``restartPolicy: Always``) keeps running, so it adds to the
         running total and to every later init container's peak; a regular init container's peak is its own
         request plus the sidecars started before it.
      3. The effective request is the larger of the running total and the highest init peak; pod-level
       ``spec.resources`` requests replace it for cpu and memory; then the overhead is added.
    Requests are taken after API defaulting: a limit without a request is the request.
    The same walk, with 100m/200Mi standing in for missing CPU/memory requests, gives the non-zero requests.
    """
    spec = pod.spec
    total: dict[str, int] = {}
    nz_cpu = nz_mem = 0
    for c in spec.containers:
        _add(total, _container_requests(c))
        cpu, mem = _nonzero(c)
        nz_cpu += cpu
        nz_mem += mem
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    side_cpu = side_mem = peak_cpu = peak_mem = 0
    for c in spec.init_containers:
        req = _container_requests(c)
        cpu, mem = _nonzero(c)
        if c.restart_policy == "Always":
            _add(total, req)
            _add(sidecars, req)
            nz_cpu, nz_mem = nz_cpu + cpu, nz_mem + mem
            side_cpu, side_mem = side_cpu + cpu, side_mem + mem
            peak = dict(sidecars)
            cpu, mem = side_cpu, side_mem
        else:
            peak = dict(req)
            _add(peak, sidecars)
            cpu, mem = cpu + side_cpu, mem + side_mem
        _max(init_peak, peak)
        peak_cpu, peak_mem = max(peak_cpu, cpu), max(peak_mem, mem)
    _max(total, init_peak)
    nz_cpu, nz_mem = max(nz_cpu, peak_cpu), max(nz_mem, peak_mem)
    if spec.resources is not None:
        # Pod-level requests replace the containers' aggregate for the resources they name (cpu and memory).
        pod_level = {n: amount(n, q) for n, q in defaulted_requests(spec.resources).items() if n in _POD_LEVEL}
        total.update(pod_level)
        nz_cpu = pod_level.get("cpu", nz_cpu)
        nz_mem = pod_level.get("memory", nz_mem)
    overhead = {name: amount(name, q) for name, q in spec.overhead.items()}
    _add(total, overhead)
    nz_cpu += overhead.get("cpu", 0)
    nz_mem += overhead.get("memory", 0)
    # Summed exactly (Python integers), then saturated once for the int64 node table.
    return PodRequests({k: _requested(v) for k, v in total.items() if v}, _requested(nz_cpu), _requested(nz_mem))
