"""PodGroup deletion protection: the finalizer follows whether non-terminal pods use the group."""

from __future__ import annotations

import msgspec

from phalanx.api.models import Pod, PodGroup
from phalanx.controllers.podgroup_protection import FINALIZER, protected_finalizers


def group(finalizers: list[str] | None = None, deleting: bool = False) -> PodGroup:
    meta: dict[str, object] = {"name": "g", "namespace": "ml", "finalizers": finalizers or []}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T10:00:00Z"
    return msgspec.convert({"metadata": meta, "spec": {"schedulingPolicy": {"basic": {}}}}, PodGroup)


def pod(phase: str = "Running", name: str = "g") -> Pod:
    return msgspec.convert(
        {
            "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"containers": [{"name": "c"}], "schedulingGroup": {"podGroupName": name}},
            "status": {"phase": phase},
        },
        Pod,
    )


def test_finalizer_added_while_in_use() -> None:
    assert protected_finalizers(group(), [pod()]) == [FINALIZER]
    assert protected_finalizers(group([FINALIZER]), [pod()]) is None


def test_terminal_or_other_pods_do_not_count() -> None:
    assert protected_finalizers(group(), [pod("Succeeded"), pod("Failed"), pod(name="other")]) is None


def test_finalizer_removed_when_deleting_and_unused() -> None:
    assert protected_finalizers(group([FINALIZER, "x"], deleting=True), [pod("Succeeded")]) == ["x"]
    assert protected_finalizers(group([FINALIZER], deleting=True), [pod()]) is None  # still in use: kept
