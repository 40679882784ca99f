"""Helpers for tests against a real control plane: objects made through the real API, a stand-in for the kubelet,
and ``phalanx serve`` run as its own process with the phalanx-scheduler ServiceAccount's token.

There is no kubelet. Nodes are registered as a kubelet and the node lifecycle controller would leave them (Ready,
without the not-ready taint that admission puts on every new node), and ``Kubelet`` finishes what a kubelet
finishes: a pod being deleted is removed once its grace period is asked for, and bound pods can be made Running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from phalanx.testenv import ControlPlane, RequestError
from phalanx.testenv.controlplane import free_port

ROOT = Path(__file__).resolve().parents[2]
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


class Timeout(AssertionError):
    pass


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` (and the last value) otherwise.
    The timeout only bounds a hang: no assertion depends on how long anything took."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise Timeout(f"timed out waiting for {what} (last: {last!r})")


class Cluster:
    """One test's view of the control plane: its own namespace, and the nodes it made (deleted afterwards)."""

    def __init__(self, cp: ControlPlane, namespace: str) -> None:
        self.cp = cp
        self.ns = namespace
        self.nodes: list[str] = []
        self.scheduling = f"/apis/scheduling.k8s.io/{cp.kube.scheduling_api}"
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        wait_for(
            f"ServiceAccount {namespace}/default",
            lambda: cp.exists(f"/api/v1/namespaces/{namespace}/serviceaccounts/default"),
        )

    @property
    def v137(self) -> bool:
        return self.cp.kube.minor == "1.37"

    # --- objects ---------------------------------------------------------------------------------------------

    def node(
        self, name: str, cpu: str = "4", memory: str = "16Gi", labels: dict[str, str] | None = None, pods: str = "110"
    ) -> dict[str, Any]:
        """Register a node as a kubelet would, then clear the not-ready taint as the node lifecycle controller
        does once the node reports Ready."""
        alloc = {"cpu": cpu, "memory": memory, "pods": pods}
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {
                "capacity": alloc,
                "allocatable": alloc,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
            },
        }
        self.cp.request("POST", "/api/v1/nodes", body)
        self.nodes.append(name)
        node = self.cp.get(f"/api/v1/nodes/{name}")
        taints = [t for t in node["spec"].get("taints") or [] if t["key"] != NOT_READY_TAINT]
        patch = {"spec": {"taints": taints or None}}
        self.cp.request("PATCH", f"/api/v1/nodes/{name}", patch, "application/strategic-merge-patch+json")
        return dict(self.cp.get(f"/api/v1/nodes/{name}"))

    def pod(
        self,
        name: str,
        group: str | None = None,
        cpu: str = "1",
        scheduler: str = "phalanx",
        priority_class: str | None = None,
        labels: dict[str, str] | None = None,
        claims: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
        container["resources"] = {"requests": {"cpu": cpu}}
        spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
        if group:
            spec["schedulingGroup"] = {"podGroupName": group}
        if priority_class:
            spec["priorityClassName"] = priority_class
        if claims:
            spec["resourceClaims"] = claims
            container["resources"]["claims"] = [{"name": c["name"]} for c in claims]
        meta = {"name": name, "namespace": self.ns, "labels": labels or {}}
        return dict(self.cp.request("POST", f"/api/v1/namespaces/{self.ns}/pods", {"metadata": meta, "spec": spec}))

    def pod_group(self, name: str, min_count: int | None, topology: str | None = None, **spec: Any) -> dict[str, Any]:
        """A PodGroup in the version the server serves: gang with ``min_count``, or basic when it is None."""
        policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
        body_spec: dict[str, Any] = {"schedulingPolicy": policy, **spec}
        if topology:
            body_spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
        body = {
            "apiVersion": f"scheduling.k8s.io/{self.cp.kube.scheduling_api}",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": body_spec,
        }
        return dict(self.cp.request("POST", f"{self.scheduling}/namespaces/{self.ns}/podgroups", body))

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.cp.request("POST", path, body))

    def apply(self, manifest: str) -> str:
        return self.cp.kubectl("apply", "-n", self.ns, "-f", "-", stdin=manifest)

    # --- reads -----------------------------------------------------------------------------------------------

    def pods(self) -> dict[str, dict[str, Any]]:
        items = self.cp.get(f"/api/v1/namespaces/{self.ns}/pods")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def placement(self) -> dict[str, str | None]:
        """Pod name -> node (None while pending), for the pods that exist now."""
        return {name: p["spec"].get("nodeName") for name, p in self.pods().items()}

    def bound(self, names: list[str] | None = None) -> set[str]:
        return {n for n, node in self.placement().items() if node and (names is None or n in names)}

    def group(self, name: str) -> dict[str, Any]:
        return dict(self.cp.get(f"{self.scheduling}/namespaces/{self.ns}/podgroups/{name}"))

    def condition(self, group: str) -> dict[str, Any] | None:
        kind = "PodGroupInitiallyScheduled" if self.v137 else "PodGroupScheduled"
        conds = (self.group(group).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == kind), None)

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        items = self.cp.get(f"/apis/events.k8s.io/v1/namespaces/{self.ns}/events")["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]

    # --- clean-up --------------------------------------------------------------------------------------------

    def delete_pod_now(self, name: str) -> None:
        """What the kubelet does when a pod's containers have stopped: the final, zero-grace delete."""
        body = {"gracePeriodSeconds": 0}
        try:
            self.cp.request("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{name}", body)
        except RequestError as exc:
            if exc.code != 404:
                raise

    def close(self) -> None:
        for name in self.pods():
            self.delete_pod_now(name)
        for node in self.nodes:
            try:
                self.cp.request("DELETE", f"/api/v1/nodes/{node}")
            except RequestError as exc:
                if exc.code != 404:
                    raise
        self.cp.request("DELETE", f"/api/v1/namespaces/{self.ns}")


class Kubelet:
    """A stand-in for the kubelets of every node: pods being deleted are removed (their containers "stop" at
    once), and, when ``run`` is set, bound pods are marked Running and Ready (so the disruption controller counts
    them healthy)."""

    def __init__(self, cluster: Cluster, run: bool = False) -> None:
        self.cluster, self.run = cluster, run
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="kubelet")
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(0.1):
            try:
                for name, pod in self.cluster.pods().items():
                    if pod["metadata"].get("deletionTimestamp"):
                        self.cluster.delete_pod_now(name)
                    elif self.run and pod["spec"].get("nodeName") and pod.get("status", {}).get("phase") != "Running":
                        self._running(name)
            except (OSError, RequestError):
                continue  # the API server may be restarting

    def _running(self, name: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {
            "phase": "Running",
            "startTime": now,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
        }
        path = f"/api/v1/namespaces/{self.cluster.ns}/pods/{name}/status"
        try:
            self.cluster.cp.request("PATCH", path, {"status": status}, "application/strategic-merge-patch+json")
        except RequestError as exc:
            if exc.code not in (404, 409):
                raise

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


class Serve:
    """``phalanx serve`` as its own process, as a user runs it: the kubeconfig holds the phalanx-scheduler
    ServiceAccount's token, so deploy/01-rbac.yaml is all it may do."""

    def __init__(self, cp: ControlPlane, kubeconfig: Path, name: str, args: tuple[str, ...] = ()) -> None:
        self.cp, self.name = cp, name
        self.health = free_port()
        self.log = cp.log_dir() / f"{name}.log"
        argv = [
            sys.executable,
            "-m",
            "phalanx",
            "serve",
            f"--kubeconfig={kubeconfig}",
            "--leader-elect-resource-namespace=phalanx-system",
            "--leader-elect-lease-duration=3",
            "--leader-elect-renew-deadline=2",
            "--leader-elect-retry-period=0.2",
            "--health-address=127.0.0.1",
            f"--health-port={self.health}",
            *args,
        ]
        env = {**os.environ, "PHALANX_LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"}
        self.out = self.log.open("ab")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError as exc:
            exc.close()
            return False
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def leading(self) -> bool:
        try:
            return "\nphalanx_leader 1\n" in self.metrics()
        except (OSError, urllib.error.URLError):
            return False

    def kill(self) -> None:
        """SIGKILL: no lease release, no draining, as a crashed or OOM-killed replica."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.out.close()

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def serving(cp: ControlPlane, kubeconfig: Path, name: str, *args: str, wait_leader: bool = True) -> Iterator[Serve]:
    s = Serve(cp, kubeconfig, name, args)
    try:
        wait_for(f"{name} /readyz", lambda: s.proc.poll() is not None or s.ready(), 60)
        assert s.proc.poll() is None, f"{name} exited with {s.proc.returncode}:\n{s.tail()}"
        if wait_leader:
            wait_for(f"{name} to lead", s.leading, 30)
        yield s
    finally:
        s.stop()


def manifest(*docs: dict[str, Any]) -> str:
    return "\n---\n".join(json.dumps(d) for d in docs)
