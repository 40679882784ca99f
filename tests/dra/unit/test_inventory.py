"""DeviceInventory: GatherPools per node (generations, completeness, binding-condition pools last) and lookups."""

from __future__ import annotations

from dra_unit import device_slice, nodes

from phalanx.dra.features import Features
from phalanx.dra.inventory import DeviceInventory


def _names(inv: DeviceInventory, row: int) -> list[str]:
    return [inv.devices[d].name for d in inv.visible(row)]


def test_search_order_is_pool_then_slice_name_with_binding_condition_pools_last() -> None:
    slices = [
        device_slice("z", ["b1"], pool="b-pool"),
        device_slice("y", [{"name": "a2", "bindingConditions": ["Attached"]}], pool="a-pool"),
        device_slice("x", ["c1"], pool="c-pool"),
    ]
    inv = DeviceInventory(slices, nodes("n1"))
    assert _names(inv, 0) == ["b1", "c1", "a2"]


def test_newest_generation_replaces_older_slices() -> None:
    slices = [
        device_slice("old", ["old-dev"], generation=1),
        device_slice("new", ["new-dev"], generation=2),
    ]
    inv = DeviceInventory(slices, nodes("n1"))
    assert _names(inv, 0) == ["new-dev"]
    assert inv.lookup("gpu.example.com", "pool", "new-dev") is not None


def test_incomplete_pool_is_not_searched_but_reported() -> None:
    inv = DeviceInventory([device_slice("s1", ["d1"], count=2)], nodes("n1"))
    assert _names(inv, 0) == []
    assert [p.incomplete for p in inv.node_pools(0)] == [True]


def test_node_local_devices_of_other_nodes_are_invisible() -> None:
    table = nodes("n1", "n2")
    inv = DeviceInventory([device_slice("s1", ["d1"]), device_slice("s2", ["d2"], pool="p2", nodeName="n2")], table)
    assert _names(inv, 0) == ["d1"]
    assert _names(inv, 1) == ["d2"]
    d1 = inv.lookup("gpu.example.com", "pool", "d1")
    assert d1 is not None
    mask = inv.scope_mask(d1)
    assert mask is not None and mask.tolist() == [True, False]


def test_per_device_node_selection_and_selector_scopes() -> None:
    table = nodes("n1", "n2", labels={"n2": {"rack": "r1"}})
    rack = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    devices = [
        {"name": "local", "nodeName": "n1"},
        {"name": "racked", "nodeSelector": rack},
        {"name": "any", "allNodes": True},
    ]
    slices = [device_slice("s1", devices, perDeviceNodeSelection=True)]
    inv = DeviceInventory(slices, table)
    assert _names(inv, 0) == ["local", "any"]
    assert _names(inv, 1) == ["racked", "any"]
    assert inv.scope_mask(2) is None  # allNodes


def test_per_device_node_selection_needs_the_partitionable_gate() -> None:
    slices = [device_slice("s1", [{"name": "d", "allNodes": True}], perDeviceNodeSelection=True)]
    inv = DeviceInventory(slices, nodes("n1"), Features(partitionable=False))
    assert _names(inv, 0) == []


def test_duplicate_device_names_make_the_pool_invalid() -> None:
    inv = DeviceInventory([device_slice("a", ["d"], count=2), device_slice("b", ["d"], count=2)], nodes("n1"))
    assert _names(inv, 0) == []
    assert inv.node_pools(0)[0].invalid == "duplicate device name d"
