"""A small admin client for the test control plane that keeps its HTTPS connection open: the differential harness
makes a few hundred requests per snapshot, and a TLS handshake per request (``ControlPlane.request``) would cost more
than the scheduling it measures. Errors are ``RequestError`` with the API server's Status, as from the control plane.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import quote

from phalanx.testenv import ControlPlane, RequestError

__all__ = ["Api", "path_of"]

# kind -> (plural, namespaced), for every kind a snapshot may hold
KINDS: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "Node": ("nodes", False),
    "PriorityClass": ("priorityclasses", False),
    "RuntimeClass": ("runtimeclasses", False),
    "DeviceClass": ("deviceclasses", False),
    "ResourceSlice": ("resourceslices", False),
    "Pod": ("pods", True),
    "PodDisruptionBudget": ("poddisruptionbudgets", True),
    "Workload": ("workloads", True),
    "PodGroup": ("podgroups", True),
    "CompositePodGroup": ("compositepodgroups", True),
    "ResourceClaim": ("resourceclaims", True),
    "ResourceClaimTemplate": ("resourceclaimtemplates", True),
}


def path_of(api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
    """The REST path of a collection (no name) or an object, e.g. ``/api/v1/namespaces/default/pods/p``."""
    plural, namespaced = KINDS[kind]
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespaced and namespace is not None:
        base += f"/namespaces/{namespace}"
    base += f"/{plural}"
    return base if name is None else f"{base}/{quote(name)}"


class Api:
    """Admin requests over one keep-alive connection per thread (the kubelet stand-in has its own)."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self._ctx = cp._ssl()  # loaded once, not per request
        self._local = threading.local()
        self._all: list[http.client.HTTPSConnection] = []  # every thread's, so close() closes them all
        self._lock = threading.Lock()
        self._generation = 0  # bumped by close(): a thread's connection from before it is not reused

    def _conn(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "generation", -1) != self._generation:
            conn = http.client.HTTPSConnection("127.0.0.1", self.cp.port, context=self._ctx, timeout=60)
            self._local.conn = conn
            self._local.generation = self._generation
            with self._lock:
                self._all.append(conn)
        return conn

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else {}
        for attempt in (0, 1):
            conn = self._conn()
            try:
                conn.request(method, path, data, headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
                continue  # the server closed an idle connection: one retry on a new one
            if resp.status >= 300:
                raise RequestError(resp.status, raw)
            return json.loads(raw) if raw else None
        raise AssertionError("unreachable")

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def items(self, path: str) -> list[dict[str, Any]]:
        return list(self.get(path)["items"])

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.request("POST", path, body))

    def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.request("PATCH", path, body, "application/merge-patch+json"))

    def delete(self, path: str, body: dict[str, Any] | None = None, missing_ok: bool = True) -> None:
        try:
            self.request("DELETE", path, body)
        except RequestError as exc:
            if not (missing_ok and exc.code == 404):
                raise

    def close(self) -> None:
        """Close every connection, whichever thread opened it (a thread's next request opens a new one)."""
        with self._lock:
            conns, self._all = self._all, []
            self._generation += 1
        for conn in conns:
            conn.close()
        self._local.conn = None
