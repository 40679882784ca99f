"""The one place that calls the official ``kubernetes`` client: lists, watches and the writes kube-scheduler makes.

``Api`` is the narrow seam the rest of ``phalanx.kube`` depends on (STYLE.md habit 13): objects go in and out as
plain JSON dicts (encoded and decoded with msgspec, never through the client's models, which are slow at 150,000
pods; requests go straight onto the client's connection pool, with its TLS, proxy and credentials), and
every failure is an :class:`ApiError` carrying the HTTP status, so callers branch on ``retryable`` and ``code``.
Requests pass a token bucket first (``qps``/``burst``, like client-go's flowcontrol; ``qps <= 0`` lifts it).
"""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import urllib3
from kubernetes import client as k8s

__all__ = [
    "CRD_GROUP",
    "POD_GROUP_LABEL",
    "RESOURCES",
    "Api",
    "ApiError",
    "Resource",
    "TokenBucket",
    "WatchEvent",
    "make_api_client",
]

_json = msgspec.json.Decoder()


@dataclass(frozen=True)
class Resource:
    """A watched collection: group ("" for core), version and plural."""

    group: str
    version: str
    plural: str


RESOURCES = {
    "nodes": Resource("", "v1", "nodes"),
    "pods": Resource("", "v1", "pods"),
    "priorityclasses": Resource("scheduling.k8s.io", "v1", "priorityclasses"),
    "poddisruptionbudgets": Resource("policy", "v1", "poddisruptionbudgets"),
    "podgroups": Resource("scheduling.k8s.io", "v1alpha2", "podgroups"),
    "workloads": Resource("scheduling.k8s.io", "v1alpha2", "workloads"),
    "compositepodgroups": Resource("scheduling.k8s.io", "v1alpha3", "compositepodgroups"),
    "namespaces": Resource("", "v1", "namespaces"),
    "deviceclasses": Resource("resource.k8s.io", "v1", "deviceclasses"),
    "resourceslices": Resource("resource.k8s.io", "v1", "resourceslices"),
    "resourceclaims": Resource("resource.k8s.io", "v1", "resourceclaims"),
    "resourceclaimtemplates": Resource("resource.k8s.io", "v1", "resourceclaimtemplates"),
    "devicetaintrules": Resource("resource.k8s.io", "v1", "devicetaintrules"),
}
# For clusters older than v1.36: the same schema as CRDs (deploy/crds/), and pods labelled with their group.
CRD_GROUP = "scheduling.phalanx.dev"
POD_GROUP_LABEL = "scheduling.phalanx.dev/pod-group"


class ApiError(Exception):
    """An API call failed. ``code`` is the HTTP status (0 for a connection error); ``causes`` the ``reason`` of
    each cause in the Status details (``DisruptionBudget`` when an eviction would violate a budget)."""

    def __init__(self, code: int, message: str, causes: tuple[str, ...] = ()) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.causes = code, message, causes

    def __reduce__(self) -> tuple[Any, ...]:
        return ApiError, (self.code, self.message, self.causes)  # the writer process sends errors back

    @property
    def retryable(self) -> bool:
        """429, 5xx and connection errors are worth retrying; 4xx are answers."""
        return (self.code in (0, 429) or self.code >= 500) and not self.refused_by_budget

    @property
    def refused_by_budget(self) -> bool:
        """An eviction a PodDisruptionBudget forbids: an answer, unlike the 429 of API priority and fairness."""
        return self.code == 429 and "DisruptionBudget" in self.causes


class WatchEvent(msgspec.Struct):
    type: str
    object: dict[str, Any]


_event = msgspec.json.Decoder(WatchEvent)


class TokenBucket:
    """client-go's token bucket: ``burst`` requests at once, refilled at ``qps`` per second."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, max(1, burst)
        self.tokens = float(self.burst)
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> None:
        if self.qps <= 0:
            return
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.qps)
            self.stamp = now
            self.tokens -= 1
            wait = -self.tokens / self.qps if self.tokens < 0 else 0.0
        if wait > 0:
            time.sleep(wait)


def make_api_client(kubeconfig: str | None = None, host: str | None = None, pool: int = 32) -> Any:
    """An ApiClient from a kubeconfig file (or in-cluster config), or for a plain ``host`` URL."""
    from kubernetes import config

    if host is not None:
        cfg = k8s.Configuration(host=host)
    elif kubeconfig:
        cfg = k8s.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        cfg = k8s.Configuration()
        config.load_incluster_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = pool
    cfg.retries = False
    return k8s.ApiClient(cfg)


def _status(body: Any) -> tuple[str, tuple[str, ...]]:
    """The ``message`` and the causes' reasons of a Status body (kube-apiserver's own words)."""
    try:
        status = _json.decode(body) if isinstance(body, bytes | str) else None
    except msgspec.DecodeError:
        return str(body), ()
    if not isinstance(status, dict):
        return "", ()
    causes = ((status.get("details") or {}).get("causes")) or []
    return str(status.get("message") or ""), tuple(str(c.get("reason") or "") for c in causes if isinstance(c, dict))


_encode = msgspec.json.Encoder().encode
_MERGE = "application/merge-patch+json"
_AUTH_REFRESH = 30.0
_STRATEGIC = "application/strategic-merge-patch+json"


def _collection_path(res: Resource, namespace: str | None = None) -> str:
    base = f"/api/{res.version}" if not res.group else f"/apis/{res.group}/{res.version}"
    return f"{base}/namespaces/{namespace}/{res.plural}" if namespace else f"{base}/{res.plural}"


class Api:
    """Typed calls over one ``kubernetes.client.ApiClient``: its configuration (kubeconfig, in-cluster token, TLS,
    proxies) and its connection pool, with requests made directly on that pool. The generated API methods are
    not used: they validate arguments, copy the configuration and serialise models on every call, about 1.5 ms of
    CPU per request, which at hundreds of bindings a second was most of the writer's time."""

    def __init__(self, api_client: Any, qps: float = 50.0, burst: int = 100) -> None:
        self.client = api_client
        self.config = api_client.configuration
        self.pool = api_client.rest_client.pool_manager
        self.base = self.config.host.rstrip("/")
        self.headers: dict[str, str] = {"Accept": "application/json", **(api_client.default_headers or {})}
        self.bucket = TokenBucket(qps, burst)
        self._streams: set[Any] = set()  # open watch responses, so that stop can cut them
        self._streams_lock = threading.Lock()
        self._headers: dict[str, str] | None = None
        self._headers_at = 0.0

    def close(self) -> None:
        self.abort_watches()
        self.client.close()

    def abort_watches(self) -> None:
        """Cut every open watch at once: a quiet watch blocks in a read until the server ends it (minutes later),
        so a stopping scheduler would otherwise wait that long for its reflectors."""
        with self._streams_lock:
            streams = list(self._streams)
        for resp in streams:
            # Already closed, or closing concurrently: either way the stream is cut.
            with contextlib.suppress(Exception):
                resp.shutdown()

    def _auth(self) -> dict[str, str]:
        """The request headers with the Authorization the client computes, refreshed every ``_AUTH_REFRESH``
        seconds (as client-go re-reads a projected token file once a minute): the kubeconfig loader's refresh hook
        reloads the whole configuration, about 1 ms, far too much to pay per request."""
        now = time.monotonic()
        if self._headers is None or now - self._headers_at > _AUTH_REFRESH:
            out = dict(self.headers)
            for setting in self.config.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    out[setting["key"]] = setting["value"]
            self._headers, self._headers_at = out, now
        return dict(self._headers)

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        query: dict[str, Any] | None = None,
        stream: bool = False,
        timeout: Any = None,
    ) -> Any:
        """One request; raises ApiError for an error status or a failed connection. Returns the body, or the open
        response when ``stream``."""
        self.bucket.take()
        headers = self._auth()
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else _encode(body)
            headers["Content-Type"] = content_type
        url = self.base + path
        if query:
            url += "?" + urllib.parse.urlencode({k: _query_value(v) for k, v in query.items() if v is not None})
        try:
            resp = self.pool.request(
                method, url, body=data, headers=headers, preload_content=False, timeout=timeout, retries=False
            )
        except Exception as exc:
            raise ApiError(0, f"{type(exc).__name__}: {exc}") from exc
        if resp.status >= 400:
            try:
                raw = resp.read()
            except Exception:
                raw = b""
            finally:
                resp.release_conn()
            message, causes = _status(raw)
            raise ApiError(int(resp.status), message or str(resp.reason or ""), causes)
        if stream:
            return resp
        try:
            data_out: bytes = resp.read()
        except Exception as exc:
            raise ApiError(0, f"{type(exc).__name__}: {exc}") from exc
        finally:
            resp.release_conn()  # an unread response keeps its connection: every request would open a new one
        return data_out

    # --- reads ----------------------------------------------------------------------------------------------------

    def list(self, res: Resource) -> tuple[list[dict[str, Any]], str]:
        """Every object of ``res`` and the list's resourceVersion."""
        body = _json.decode(self._send("GET", _collection_path(res)))
        return body.get("items") or [], str(body["metadata"]["resourceVersion"])

    def watch(self, res: Resource, resource_version: str, timeout: int = 300) -> Iterator[WatchEvent]:
        """Events after ``resource_version``, bookmarks included, until the server ends the stream."""
        query = {
            "watch": True,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": timeout,
        }
        resp = self._send(
            "GET",
            _collection_path(res),
            query=query,
            stream=True,
            timeout=urllib3.Timeout(connect=10, read=timeout + 30),
        )
        with self._streams_lock:
            self._streams.add(resp)
        try:
            buf = b""
            for chunk in resp.stream(65536, decode_content=False):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield _event.decode(line)
        except Exception as exc:
            raise ApiError(0, f"{type(exc).__name__}: {exc}") from exc
        finally:
            with self._streams_lock:
                self._streams.discard(resp)
            resp.release_conn()

    def served(self, res: Resource) -> bool:
        """Whether the server serves ``res`` (a one-item list; 404 means it does not)."""
        try:
            self._send("GET", _collection_path(res), query={"limit": 1})
        except ApiError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(_json.decode(self._send("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")))

    # --- writes ---------------------------------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid or None},
            "target": {"kind": "Node", "apiVersion": "v1", "name": node},
        }
        self._send("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)

    def evict_pod(self, namespace: str, name: str, uid: str) -> None:
        """A policy/v1 Eviction (``pods/eviction``): the API server deletes the pod unless a PodDisruptionBudget
        forbids it (429). The uid precondition keeps a pod recreated under the same name safe."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid or None}},
        }
        self._send("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body)

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """Delete with a uid precondition, so a pod recreated under the same name is never hit."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid or None}}
        self._send("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body)

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self._send("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", patch, _STRATEGIC)

    def patch_pod_group_status(
        self, namespace: str, name: str, patch: dict[str, Any], api_version: str = "", plural: str = "podgroups"
    ) -> None:
        """A JSON merge patch of a PodGroup's (or CompositePodGroup's, ``plural``) ``/status`` in ``api_version``,
        the version it is watched in."""
        res = RESOURCES[plural]
        if api_version and "/" in api_version:
            group, version = api_version.split("/", 1)
            res = Resource(group, version, res.plural)
        self._send("PATCH", f"{_collection_path(res, namespace)}/{name}/status", patch, _MERGE)

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        path = f"{_collection_path(RESOURCES['resourceclaims'], namespace)}/{name}"
        return dict(_json.decode(self._send("GET", path)))

    def create_resource_claim(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        path = _collection_path(RESOURCES["resourceclaims"], namespace)
        return dict(_json.decode(self._send("POST", path, body)))

    def patch_resource_claim(
        self, namespace: str, name: str, patch: dict[str, Any], status: bool = False
    ) -> dict[str, Any]:
        """A JSON merge patch of the claim (or of its ``status`` subresource); a ``metadata.resourceVersion`` in
        the patch is a precondition (409 when stale). Returns the claim as written."""
        path = f"{_collection_path(RESOURCES['resourceclaims'], namespace)}/{name}" + ("/status" if status else "")
        return dict(_json.decode(self._send("PATCH", path, patch, _MERGE)))

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self._send("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body)

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            data = self._send("GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise
        return dict(_json.decode(data))

    def create_lease(self, namespace: str, body: dict[str, Any]) -> None:
        self._send("POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", body)

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self._send("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", body)


def _query_value(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)
