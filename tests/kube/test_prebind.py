"""PreBind's claim writes against a fake Api holding one claim (STYLE.md habit 13): when a write is still valid after
someone else's change, and when it must fail so the pod is requeued."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phalanx.kube.api import ApiError
from phalanx.kube.prebind import FINALIZER, ClaimWrite, prebind

ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1", "device": "gpu-0"}]}}
ELSEWHERE = {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n2", "device": "gpu-0"}]}}
POD = {"resource": "pods", "name": "p", "uid": "u-p"}


class FakeApi:
    """One ResourceClaim with kube-apiserver's resourceVersion precondition on merge patches."""

    def __init__(self, claim: dict[str, Any]) -> None:
        self.claim = claim
        self.patches = 0

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.claim)

    def patch_resource_claim(
        self, namespace: str, name: str, patch: dict[str, Any], status: bool = False
    ) -> dict[str, Any]:
        self.patches += 1
        md = self.claim["metadata"]
        if patch["metadata"]["resourceVersion"] != md["resourceVersion"]:
            raise ApiError(409, "the object has been modified")
        if status:
            self.claim["status"] = {**self.claim.get("status", {}), **patch["status"]}
        else:
            md["finalizers"] = patch["metadata"]["finalizers"]
        md["resourceVersion"] = str(int(md["resourceVersion"]) + 1)
        return self.get_resource_claim(namespace, name)


def _claim(rv: str = "1", **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "default", "resourceVersion": rv}, "status": status}


def _run(api: FakeApi, seen: dict[str, Any], allocation: dict[str, Any] | None = ALLOCATION) -> str:
    w = ClaimWrite("default/p", "default", "c", seen, POD, allocation)
    result = prebind(api, [w], lambda fn, *a: fn(*a))  # type: ignore[arg-type]
    err = result.errors.get("default/p")
    return "" if err is None else err.message


def test_allocation_finalizer_and_reservation_are_written() -> None:
    api = FakeApi(_claim())
    assert _run(api, _claim()) == ""
    assert api.claim["status"] == {"allocation": ALLOCATION, "reservedFor": [POD]}
    assert api.claim["metadata"]["finalizers"] == [FINALIZER]


@pytest.mark.parametrize(
    ("now", "allocation", "fails"),
    [
        pytest.param(_claim("5"), ALLOCATION, "", id="changed-but-still-unallocated"),
        pytest.param(_claim("5", allocation=ALLOCATION), ALLOCATION, "", id="same-allocation-already-there"),
        pytest.param(_claim("5", allocation=ELSEWHERE), ALLOCATION, "allocated elsewhere", id="allocated-elsewhere"),
        pytest.param(_claim("5"), None, "no longer allocated", id="deallocated-meanwhile"),
        pytest.param(
            {**_claim("5"), "metadata": {**_claim("5")["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}},
            ALLOCATION,
            "being deleted",
            id="being-deleted",
        ),
        pytest.param(
            _claim("5", allocation=ALLOCATION, reservedFor=[{"resource": "pods", "uid": str(i)} for i in range(256)]),
            None,
            "reservedFor is full",
            id="reserved-for-full",
        ),
    ],
)
def test_a_stale_write_is_re_read_and_retried_only_while_valid(
    now: dict[str, Any], allocation: dict[str, Any] | None, fails: str
) -> None:
    api = FakeApi(now)
    seen = _claim("1", allocation=ALLOCATION) if allocation is None else _claim("1")
    message = _run(api, seen, allocation)
    assert fails in message if fails else message == ""
    if not fails:
        assert api.claim["status"]["reservedFor"][-1] == POD
        assert api.claim["status"]["allocation"] == ALLOCATION
    else:
        assert POD not in (api.claim.get("status") or {}).get("reservedFor", [])
