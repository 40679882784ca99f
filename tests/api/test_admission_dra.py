"""DRA admin access admission: ``adminAccess: true`` only in namespaces labelled for it (spec dra.md §1.3)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api.admission import admin_access_allowed, admin_access_problems
from phalanx.api.dra import ResourceClaim, ResourceClaimTemplate
from phalanx.api.models import Namespace

LABEL_DETAIL = (
    "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
)


def namespace(name: str, **labels: str) -> Namespace:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Namespace)


NAMESPACES = [
    namespace("ops", **{"resource.kubernetes.io/admin-access": "true"}),
    namespace("ml", team="ml"),
    namespace("lab", **{"resource.kubernetes.io/admin-access": "yes"}),
]


def devices(*admin: bool | None) -> dict[str, Any]:
    requests = [
        {"name": f"r{i}", "exactly": {"deviceClassName": "gpu.nvidia.com", **({} if a is None else {"adminAccess": a})}}
        for i, a in enumerate(admin)
    ]
    return {"devices": {"requests": requests}}


def claim(ns: str, *admin: bool | None) -> ResourceClaim:
    return msgspec.convert({"metadata": {"name": "c", "namespace": ns}, "spec": devices(*admin)}, ResourceClaim)


@pytest.mark.parametrize(
    ("ns", "admin", "want"),
    [
        ("ops", (None, True), []),
        ("ml", (None, False), []),
        ("ml", (False, True, True), [f"spec.devices.requests[1].adminAccess: Forbidden: {LABEL_DETAIL}"]),
        ("lab", (True,), [f"spec.devices.requests[0].adminAccess: Forbidden: {LABEL_DETAIL}"]),
        (
            "gone",
            (True,),
            [
                "spec.devices.requests[0].adminAccess: Forbidden: namespace gone is not in the snapshot, so admin access "
                "cannot be verified"
            ],
        ),
    ],
    ids=["labelled", "no admin request", "first admin request named", "label must be true", "unknown namespace"],
)
def test_admin_access(ns: str, admin: tuple[bool | None, ...], want: list[str]) -> None:
    c = claim(ns, *admin)
    assert [f"{e.path}: {e.message}" for e in admin_access_problems(c, NAMESPACES)] == want
    assert admin_access_allowed(c, NAMESPACES) is (not want)


def test_template_is_checked_on_its_claim_spec() -> None:
    raw = {"metadata": {"name": "t", "namespace": "ml"}, "spec": {"spec": devices(True)}}
    template = msgspec.convert(raw, ResourceClaimTemplate)
    assert not admin_access_allowed(template, NAMESPACES)
    raw["metadata"]["namespace"] = "ops"
    assert admin_access_allowed(msgspec.convert(raw, ResourceClaimTemplate), NAMESPACES)
