"""Which device paths a selector reads: verdicts are shared by devices that agree on them."""

from __future__ import annotations

import msgspec
import pytest
from dra_unit import allocator, claim, device_class, device_slice, nodes

from phalanx.api import cel, dra
from phalanx.dra.projection import device_paths, projection

D = "gpu.nvidia.com"


@pytest.mark.parametrize(
    ("expression", "paths"),
    [
        (f'device.attributes["{D}"].productName == "H100"', {("attributes", D, "productName")}),
        (f'device.attributes["{D}"]["uuid"] == "x"', {("attributes", D, "uuid")}),
        (f'has(device.attributes["{D}"].numa)', {("attributes", D, "numa")}),
        (f'device.attributes["{D}"].?numa.orValue(0) == 0', {("attributes", D, "numa")}),
        (
            f'cel.bind(g, device.attributes["{D}"], g.a == 1 && g.b == 2)',
            {("attributes", D, "a"), ("attributes", D, "b")},
        ),
        (f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0', {("capacity", D, "memory")}),
        ('device.driver == "x"', {("driver",)}),
        (f'device.attributes["{D}"].all(k, k != "a")', {("attributes", D)}),
        ("size(device.attributes) > 0", {("attributes",)}),
        ("device.attributes[device.driver].x == 1", {("attributes",), ("driver",)}),
    ],
)
def test_paths(expression: str, paths: set[tuple[str, ...]]) -> None:
    assert device_paths(cel.compile_selector(expression).syntax) == frozenset(paths)


def test_whole_device_use_is_not_narrowed() -> None:
    assert device_paths(cel.compile_selector("[device].size() == 1").syntax) is None


def test_bare_names_belong_to_the_driver_domain() -> None:
    device = msgspec.convert(
        {"name": "d", "attributes": {"model": {"string": "a"}, "uuid": {"string": "1"}}}, dra.Device
    )
    other = msgspec.convert(
        {"name": "e", "attributes": {"model": {"string": "a"}, "uuid": {"string": "2"}}}, dra.Device
    )
    paths = frozenset({("attributes", D, "model")})
    assert projection(paths, D, device, False) == projection(paths, D, other, False)
    assert projection(frozenset({("attributes", D, "uuid")}), D, device, False) != projection(
        frozenset({("attributes", D, "uuid")}), D, other, False
    )


def test_devices_with_unique_ids_share_one_evaluation_and_alike_nodes_one_search() -> None:
    """Every GPU has its own uuid; a selector on the model still evaluates once, and alike nodes search once."""
    table = nodes("n1", "n2", "n3")
    slices = []
    for n in ("n1", "n2", "n3"):
        gpus = [
            {"name": f"g{i}", "attributes": {"model": {"string": "h100"}, "uuid": {"string": f"{n}-{i}"}}}
            for i in range(4)
        ]
        slices.append(device_slice(f"{n}-s", gpus, pool=n, nodeName=n))
    alloc = allocator(
        slices,
        [device_class("gpu", 'device.attributes["gpu.example.com"].model == "h100"')],
        table=table,
        fast=False,  # a simple claim: the fast path would skip the search
    )
    claims = [claim("c", {"name": "r", "count": 2})]
    assert all(alloc.allocate(row, claims) is not None for row in range(3))
    assert alloc.stats.shape_hits == 2
    steps = alloc.stats.steps
    assert alloc.allocate(0, claims) is not None and alloc.stats.steps == steps  # answered without a search
