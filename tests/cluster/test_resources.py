"""Effective pod requests (``resourcehelper.PodRequests``): containers, init containers, sidecars, overhead."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from phalanx.cluster.resources import DEFAULT_MEMORY_REQUEST, pod_requests

from builders import PodBuilder, make_pod

Gi = 2**30


@dataclass
class Case:
    id: str
    pod: PodBuilder
    cpu: int
    memory: int


CASES = [
    Case(
        "containers-sum",
        make_pod("p").requests(cpu="1", memory="1Gi").container("b", cpu="2", memory="1Gi"),
        3000,
        2 * Gi,
    ),
    Case("init-peak-wins", make_pod("p").requests(cpu="1").container("i", init=True, cpu="4"), 4000, 0),
    Case(
        "sidecar-adds-to-later-init-peak",
        make_pod("p").requests(cpu="1").container("s", "Always", init=True, cpu="1").container("i", init=True, cpu="2"),
        3000,
        0,
    ),
    Case(
        "sidecar-after-init-adds-to-total",
        make_pod("p").requests(cpu="1").container("i", init=True, cpu="3").container("s", "Always", init=True, cpu="1"),
        3000,
        0,
    ),
    Case(
        "sidecar-total-beats-init",
        make_pod("p").requests(cpu="2").container("i", init=True, cpu="1").container("s", "Always", init=True, cpu="1"),
        3000,
        0,
    ),
    Case(
        "overhead-added",
        make_pod("p").requests(cpu="500m", memory="1Gi").overhead(cpu="250m", memory="1Gi"),
        750,
        2 * Gi,
    ),
    Case("fractional-cpu-rounds-up", make_pod("p").requests(cpu="0.0001"), 1, 0),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_pod_requests(case: Case) -> None:
    r = pod_requests(case.pod.obj())
    assert r.requests.get("cpu", 0) == case.cpu
    assert r.requests.get("memory", 0) == case.memory


def test_nonzero_requests_default_missing_container_requests() -> None:
    r = pod_requests(make_pod("p").requests(cpu="500m").container("b").obj())
    assert r.requests == {"cpu": 500}
    assert (r.nonzero_cpu, r.nonzero_memory) == (600, 2 * DEFAULT_MEMORY_REQUEST)


def test_explicit_zero_is_not_defaulted() -> None:
    r = pod_requests(make_pod("p").requests(cpu="0", memory="0").obj())
    assert (r.nonzero_cpu, r.nonzero_memory) == (0, 0)


def test_extended_resources_are_whole_units() -> None:
    r = pod_requests(make_pod("p").request("nvidia.com/gpu", 2).container("b").obj())
    assert r.requests == {"nvidia.com/gpu": 2}
