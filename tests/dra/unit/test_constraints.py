"""Constraint trackers keep a stack: backtracking restores exactly the previous state (unlike v1.36)."""

from __future__ import annotations

import msgspec

from phalanx.api import dra
from phalanx.dra.constraints import Tracker, new_tracker


def _tracker(kind: str, list_mode: bool, requests: list[str] | None = None) -> Tracker:
    raw = {kind: "gpu.example.com/numa", "requests": requests or []}
    tracker = new_tracker(msgspec.convert(raw, dra.DeviceConstraint), list_mode)
    assert tracker is not None
    return tracker


def _set(*values: int) -> frozenset[tuple[str, object]]:
    return frozenset(("int", v) for v in values)


def test_list_match_intersection_is_restored_on_remove() -> None:
    """#140300: after removing the device that narrowed the intersection, the wider one is back."""
    t = _tracker("matchAttribute", True)
    assert t.add(_set(1, 2, 3))
    assert t.add(_set(2))
    assert not t.add(_set(3))
    t.remove()
    assert t.add(_set(3))


def test_distinct_compares_every_device_not_only_the_latest() -> None:
    """The 1.36 incubating map kept only the latest value per request; all earlier values must stay."""
    t = _tracker("distinctAttribute", False)
    assert t.add(("int", 1))
    assert t.add(("int", 2))
    assert not t.add(("int", 1))
    t.remove()
    assert not t.add(("int", 1))
    assert t.add(("int", 3))


def test_list_distinct_needs_disjoint_sets() -> None:
    t = _tracker("distinctAttribute", True)
    assert t.add(_set(1, 2))
    assert not t.add(_set(2, 3))
    assert t.add(_set(3, 4))


def test_scalar_match_forgets_the_value_when_empty() -> None:
    t = _tracker("matchAttribute", False)
    assert t.add(("int", 1))
    assert not t.add(("int", 2))
    t.remove()
    assert t.add(("int", 2))


def test_missing_attribute_never_satisfies() -> None:
    assert not _tracker("matchAttribute", False).add(None)
    assert not _tracker("distinctAttribute", False).add(None)


def test_request_scope() -> None:
    t = _tracker("matchAttribute", False, ["gpu", "nic/small"])
    assert t.in_scope("gpu", "")
    assert t.in_scope("gpu", "big")
    assert t.in_scope("nic", "small")
    assert not t.in_scope("nic", "big")
    assert _tracker("matchAttribute", False).in_scope("anything", "")


def test_unknown_constraint_type() -> None:
    assert new_tracker(dra.DeviceConstraint(requests=[]), False) is None
