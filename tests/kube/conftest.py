"""Fixtures: a test API server on 127.0.0.1 and ``phalanx serve`` instances running against it in threads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kube.apiserver import APIServer, Store
from phalanx.kube.serve import ServeOptions, Server


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def pod(name: str, group: str | None = None, cpu: str = "1", scheduler: str = "phalanx") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def pdb(name: str, labels: dict[str, str], allowed: int) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget whose status the disruption controller has already written."""
    status = {"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1}
    spec = {"minAvailable": 1, "selector": {"matchLabels": labels}}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": status}


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def condition(store: Store, group: str) -> dict[str, Any] | None:
    pg = store.get("podgroups", f"default/{group}") or {}
    return next((c for c in (pg.get("status") or {}).get("conditions", []) if c["type"] == "PodGroupScheduled"), None)


@pytest.fixture
def apiserver() -> Iterator[APIServer]:
    with APIServer() as srv:
        yield srv


class Instance:
    def __init__(self, srv: APIServer, identity: str, **kw: Any) -> None:
        opts = ServeOptions(
            host=srv.url,
            identity=identity,
            qps=0,
            health_port=kw.pop("health_port", None),
            health_address="127.0.0.1",
            lease_duration=kw.pop("lease_duration", 1.0),
            renew_deadline=0.8,
            retry_period=0.1,
            bind_workers=4,
            writer_process=kw.pop("writer_process", False),  # a child process per test costs a second of imports
            **kw,
        )
        self.server = Server(opts)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()

    def crash(self) -> None:
        self.server.crash()
        self.thread.join(10)


@pytest.fixture
def start(apiserver: APIServer) -> Iterator[Callable[..., Instance]]:
    made: list[Instance] = []

    def _start(identity: str = "a", **kw: Any) -> Instance:
        inst = Instance(apiserver, identity, **kw)
        made.append(inst)
        return inst

    yield _start
    for inst in made:
        if inst.thread.is_alive():
            inst.stop()
