"""create_many against the real kube-apiserver: every object is created once, the hook sees each body after the
API server answered (benchmarks time pods from it), and the first refusal is raised with the API server's Status."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from realcluster import Cluster

from phalanx.testenv import ControlPlane, RequestError
from phalanx.testenv.bulk import create_many


def _config_maps(ns: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    path = f"/api/v1/namespaces/{ns}/configmaps"
    return [(path, {"metadata": {"name": f"cm-{i:03d}"}, "data": {"i": str(i)}}) for i in range(n)]


def test_hook_sees_every_created_object_once(control_plane: ControlPlane, cluster: Cluster) -> None:
    seen: list[str] = []
    lock = threading.Lock()
    existed_at_hook: list[bool] = []

    def hook(body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        with lock:
            seen.append(name)
            if name == "cm-007":  # the object exists by the time the hook runs
                existed_at_hook.append(control_plane.exists(f"/api/v1/namespaces/{cluster.ns}/configmaps/{name}"))

    created = create_many(control_plane, _config_maps(cluster.ns, 40), workers=4, created_hook=hook)
    assert created == 40
    assert sorted(seen) == [f"cm-{i:03d}" for i in range(40)]
    assert existed_at_hook == [True]
    listed = control_plane.get(f"/api/v1/namespaces/{cluster.ns}/configmaps")["items"]
    assert {o["metadata"]["name"] for o in listed} >= set(seen)


def test_first_refusal_is_raised_and_not_hooked(control_plane: ControlPlane, cluster: Cluster) -> None:
    items = _config_maps(cluster.ns, 3)
    items.append(items[0])  # AlreadyExists
    seen: list[str] = []
    with pytest.raises(RequestError) as err:
        create_many(control_plane, items, workers=1, created_hook=lambda b: seen.append(b["metadata"]["name"]))
    assert err.value.code == 409
    assert seen == ["cm-000", "cm-001", "cm-002"]
