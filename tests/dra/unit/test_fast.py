"""The fast path for simple claims gives exactly the general allocator's answers: on seeded random clusters and
claim sequences (each result applied, some removed again, so the allocated state evolves), an allocator with the
fast path and one without return the same results, the same errors and the same invalid pools, node by node."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
from dra_unit import DRIVER, allocator, claim, counter_slice, device_class, device_slice, devices_of, nodes

from phalanx.api import dra
from phalanx.dra.allocator import Allocator
from phalanx.dra.errors import AllocationError
from phalanx.dra.features import Features
from phalanx.dra.inventory import DeviceInventory
from phalanx.dra.state import AllocatedState

NODES = ("n1", "n2", "n3")
MODEL_A = f'device.attributes["{DRIVER}"].model == "a"'
EXTRA = f'device.attributes["{DRIVER}"].extra > 0'  # a runtime error on devices without the attribute


def _device(rng: random.Random, name: str, counters: bool) -> dict[str, Any]:
    dev: dict[str, Any] = {"name": name, "attributes": {"model": {"string": rng.choice("ab")}}}
    if rng.random() < 0.3:
        dev["attributes"]["extra"] = {"int": rng.randint(0, 1)}
    if rng.random() < 0.15:
        dev["taints"] = [{"key": "bad", "effect": rng.choice(["NoSchedule", "NoExecute", "None"])}]
    if rng.random() < 0.6:
        dev["allowMultipleAllocations"] = True
        cap: dict[str, Any] = {"value": str(rng.choice([4, 1000]))}
        policy = rng.random()
        if policy < 0.2:
            cap["requestPolicy"] = {"default": "1", "validRange": {"min": "1", "step": "2"}}
        elif policy < 0.3:
            cap["requestPolicy"] = {"validValues": ["1", "2", "4"]}
        dev["capacity"] = {"mem": cap}
        if rng.random() < 0.2:
            dev["capacity"]["other"] = {"value": "2"}
    elif rng.random() < 0.5:
        dev["capacity"] = {"mem": {"value": str(rng.randint(1, 4))}}
    if counters and rng.random() < 0.5:
        dev["consumesCounters"] = [{"counterSet": "cs", "counters": {"c": {"value": str(rng.randint(1, 2))}}}]
    return dev


def _slices(rng: random.Random) -> list[dra.ResourceSlice]:
    out = []
    for node in NODES:
        counters = rng.random() < 0.2
        devices = [_device(rng, f"{node}-d{i}", counters) for i in range(rng.randint(0, 6))]
        spec: dict[str, Any] = {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 2 if counters else 1},
            "devices": devices,
        }
        out.append(msgspec.convert({"metadata": {"name": f"{node}-s"}, "spec": spec}, dra.ResourceSlice))
        if counters:
            shared = {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "cs", "counters": {"c": {"value": str(rng.randint(1, 4))}}}],
            }
            out.append(msgspec.convert({"metadata": {"name": f"{node}-c"}, "spec": shared}, dra.ResourceSlice))
    if rng.random() < 0.3:  # devices every node sees
        devices = [_device(rng, f"shared-d{i}", False) for i in range(rng.randint(1, 3))]
        spec = {"driver": DRIVER, "allNodes": True, "pool": {"name": "shared", "resourceSliceCount": 1}}
        out.append(
            msgspec.convert({"metadata": {"name": "shared"}, "spec": {**spec, "devices": devices}}, dra.ResourceSlice)
        )
    return out


def _claim(rng: random.Random, n: int) -> dra.ResourceClaim:
    request: dict[str, Any] = {"name": "r", "count": rng.choice([1, 1, 2, 3])}
    if rng.random() < 0.1:
        request["deviceClassName"] = rng.choice(["erring", "missing"] if rng.random() < 0.2 else ["erring"])
    if rng.random() < 0.4:
        request["selectors"] = [{"cel": {"expression": MODEL_A}}]
    if rng.random() < 0.6:
        request["capacity"] = {"requests": {"mem": str(rng.choice([1, 2, 3, 250, 500]))}}
    if rng.random() < 0.3:
        request["tolerations"] = [{"key": "bad", "operator": "Exists"}]
    shape = rng.random()
    if shape < 0.05:
        request = {"name": "r", "allocationMode": "All"}
    elif shape < 0.1:
        request["adminAccess"] = rng.random() < 0.5
    elif shape < 0.15:
        return claim(f"c{n}", request, {**request, "name": "s"})
    elif shape < 0.2:
        return claim(f"c{n}", request, constraints=[{"matchAttribute": f"{DRIVER}/model"}])
    return claim(f"c{n}", request)


def _answer(allocator: Allocator, row: int, claims: list[dra.ResourceClaim]) -> tuple[Any, ...]:
    try:
        results = allocator.allocate(row, claims)
    except AllocationError as err:
        return ("error", str(err))
    encoded = msgspec.json.encode(results) if results is not None else None
    return ("ok", encoded, tuple(allocator.invalid_pools))


@pytest.mark.parametrize("seed", range(60))
def test_fast_path_gives_the_general_allocators_answers(seed: int) -> None:
    rng = random.Random(seed)
    features = Features(
        consumable_capacity=rng.random() < 0.8, device_taints=rng.random() < 0.8, partitionable=rng.random() < 0.8
    )
    table = nodes(*NODES)
    inventory = DeviceInventory(_slices(rng), table, features)
    state = AllocatedState(inventory)
    classes = {
        "gpu": device_class("gpu", f'device.driver == "{DRIVER}"'),
        "erring": device_class("erring", EXTRA),
    }
    fast = Allocator(inventory, state, classes, features)
    general = Allocator(inventory, state, classes, features, fast=False)
    applied: list[dra.AllocationResult] = []
    for step in range(40):
        claims = [_claim(rng, step)]
        if rng.random() < 0.1:
            claims.append(_claim(rng, step + 1000))
        answers = []
        for row in range(len(NODES)):
            mine, theirs = _answer(fast, row, claims), _answer(general, row, claims)
            assert mine == theirs, (seed, step, row)
            answers.append(fast.allocate(row, claims) if mine[0] == "ok" and mine[1] is not None else None)
        chosen = [a for a in answers if a is not None]
        if chosen:
            for allocation in rng.choice(chosen):
                state.add(allocation)
                applied.append(allocation)
        if applied and rng.random() < 0.2:
            state.remove(applied.pop(rng.randrange(len(applied))))
    assert general.stats.fast == 0


def test_fast_path_takes_simple_claims_and_leaves_counters_to_the_search() -> None:
    """The comparison above would pass vacuously if the fast path were never taken: it answers a simple claim,
    and a node whose devices draw from shared counters goes to the search."""
    plain = device_slice(
        "plain", [{"name": "g0", "allowMultipleAllocations": True, "capacity": {"mem": {"value": "4"}}}]
    )
    table = nodes("n1")
    simple = claim("c", {"name": "r", "count": 1, "capacity": {"requests": {"mem": "3"}}})
    fast = allocator([plain], table=table)
    assert devices_of(fast.allocate(0, [simple])) == [["r:g0"]]
    assert fast.stats.fast == 1
    fast.state.add(msgspec.convert({"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "pool", "device": "g0", "consumedCapacity": {"mem": "2"}}
    ]}}, dra.AllocationResult))  # fmt: skip
    assert fast.allocate(0, [simple]) is None
    assert fast.stats.fast == 2
    counted = device_slice("d", [{"name": "g0", "consumesCounters": [{"counterSet": "cs", "counters": {"c": {"value": "1"}}}]}], count=2)  # fmt: skip
    general = allocator([counted, counter_slice("c", {"c": "1"})], table=table)
    assert devices_of(general.allocate(0, [claim("c", {"name": "r"})])) == [["r:g0"]]
    assert general.stats.fast == 0
