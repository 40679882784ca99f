"""The one place that calls the official ``kubernetes`` client: lists, watches and the writes kube-scheduler makes.

``Api`` is the narrow seam the rest of ``phalanx.kube`` depends on (STYLE.md habit 13): objects go in and out as
plain JSON dicts (decoded with msgspec, never through the client's models, which are slow at 150,000 pods), and
every failure is an :class:`ApiError` carrying the HTTP status, so callers branch on ``retryable`` and ``code``.
Requests pass a token bucket first (``qps``/``burst``, like client-go's flowcontrol; ``qps <= 0`` lifts it).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

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
    "namespaces": Resource("", "v1", "namespaces"),
    "deviceclasses": Resource("resource.k8s.io", "v1", "deviceclasses"),
    "resourceslices": Resource("resource.k8s.io", "v1", "resourceslices"),
    "resourceclaims": Resource("resource.k8s.io", "v1", "resourceclaims"),
    "resourceclaimtemplates": Resource("resource.k8s.io", "v1", "resourceclaimtemplates"),
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


def _raise(exc: Exception) -> ApiError:
    if isinstance(exc, ApiException):
        message, causes = _status(exc.body)
        return ApiError(int(exc.status or 0), message or str(exc.reason or ""), causes)
    return ApiError(0, f"{type(exc).__name__}: {exc}")


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


class Api:
    """Typed calls over one ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client: Any, qps: float = 50.0, burst: int = 100) -> None:
        self.client = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)
        self.sched = k8s.SchedulingV1Api(api_client)
        self.policy = k8s.PolicyV1Api(api_client)
        self.events = k8s.EventsV1Api(api_client)
        self.coord = k8s.CoordinationV1Api(api_client)
        self.resource = k8s.ResourceV1Api(api_client)
        self.bucket = TokenBucket(qps, burst)
        self._streams: set[Any] = set()  # open watch responses, so that stop can cut them
        self._streams_lock = threading.Lock()

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

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.bucket.take()
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise _raise(exc) from exc

    def _read(self, fn: Any, *args: Any, **kwargs: Any) -> bytes:
        """Call ``fn`` for its raw response body, and give the connection back to the pool: an unread response
        keeps its connection, so every request would open a new TCP connection (and the server a new thread)."""
        resp = self._call(fn, *args, _preload_content=False, **kwargs)
        try:
            data: bytes = resp.data
        except Exception as exc:
            raise _raise(exc) from exc
        finally:
            resp.release_conn()
        return data

    def _collection(self, res: Resource, read: bool = False, **kwargs: Any) -> Any:
        """List (or watch) ``res``: the whole body when ``read``, else the open response to stream from."""
        fns = {
            "nodes": self.core.list_node,
            "pods": self.core.list_pod_for_all_namespaces,
            "namespaces": self.core.list_namespace,
            "priorityclasses": self.sched.list_priority_class,
            "poddisruptionbudgets": self.policy.list_pod_disruption_budget_for_all_namespaces,
            "deviceclasses": self.resource.list_device_class,
            "resourceslices": self.resource.list_resource_slice,
            "resourceclaims": self.resource.list_resource_claim_for_all_namespaces,
            "resourceclaimtemplates": self.resource.list_resource_claim_template_for_all_namespaces,
        }
        fn = fns.get(res.plural)
        args: tuple[Any, ...] = ()
        if fn is None:
            fn, args = self.custom.list_cluster_custom_object, (res.group, res.version, res.plural)
        if read:
            return self._read(fn, *args, **kwargs)
        return self._call(fn, *args, _preload_content=False, **kwargs)

    # --- reads ----------------------------------------------------------------------------------------------------

    def list(self, res: Resource) -> tuple[list[dict[str, Any]], str]:
        """Every object of ``res`` and the list's resourceVersion."""
        body = _json.decode(self._collection(res, read=True))
        return body.get("items") or [], str(body["metadata"]["resourceVersion"])

    def watch(self, res: Resource, resource_version: str, timeout: int = 300) -> Iterator[WatchEvent]:
        """Events after ``resource_version``, bookmarks included, until the server ends the stream."""
        resp = self._collection(
            res,
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _request_timeout=(10, timeout + 30),
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
            raise _raise(exc) from exc
        finally:
            with self._streams_lock:
                self._streams.discard(resp)
            resp.release_conn()

    def served(self, res: Resource) -> bool:
        """Whether the server serves ``res`` (a one-item list; 404 means it does not)."""
        try:
            self._collection(res, read=True, limit=1)
        except ApiError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(_json.decode(self._read(self.core.read_namespaced_pod, name, namespace)))

    # --- writes ---------------------------------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        body = k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, uid=uid),
            target=k8s.V1ObjectReference(kind="Node", api_version="v1", name=node),
        )
        self._read(self.core.create_namespaced_pod_binding, name, namespace, body)

    def evict_pod(self, namespace: str, name: str, uid: str) -> None:
        """A policy/v1 Eviction (``pods/eviction``): the API server deletes the pod unless a PodDisruptionBudget
        forbids it (429). The uid precondition keeps a pod recreated under the same name safe."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid or None}},
        }
        self._read(self.core.create_namespaced_pod_eviction, name, namespace, body)

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """Delete with a uid precondition, so a pod recreated under the same name is never hit."""
        body = k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=uid or None))
        self._read(self.core.delete_namespaced_pod, name, namespace, body=body)

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        ctype = "application/strategic-merge-patch+json"
        fn = self.core.patch_namespaced_pod_status
        self._read(fn, name, namespace, patch, _content_type=ctype)

    def patch_pod_group_status(self, namespace: str, name: str, patch: dict[str, Any], api_version: str = "") -> None:
        res = RESOURCES["podgroups"]
        if api_version and "/" in api_version:
            group, version = api_version.split("/", 1)
            res = Resource(group, version, res.plural)
        fn = self.custom.patch_namespaced_custom_object_status
        args = (res.group, res.version, namespace, res.plural, name, patch)
        self._read(fn, *args, _content_type="application/merge-patch+json")

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(_json.decode(self._read(self.resource.read_namespaced_resource_claim, name, namespace)))

    def create_resource_claim(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(_json.decode(self._read(self.resource.create_namespaced_resource_claim, namespace, body)))

    def patch_resource_claim(
        self, namespace: str, name: str, patch: dict[str, Any], status: bool = False
    ) -> dict[str, Any]:
        """A JSON merge patch of the claim (or of its ``status`` subresource); a ``metadata.resourceVersion`` in
        the patch is a precondition (409 when stale). Returns the claim as written."""
        fn = (
            self.resource.patch_namespaced_resource_claim_status
            if status
            else self.resource.patch_namespaced_resource_claim
        )
        data = self._read(fn, name, namespace, patch, _content_type="application/merge-patch+json")
        return dict(_json.decode(data))

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self._read(self.events.create_namespaced_event, namespace, body)

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            data = self._read(self.coord.read_namespaced_lease, name, namespace)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise
        return dict(_json.decode(data))

    def create_lease(self, namespace: str, body: dict[str, Any]) -> None:
        self._read(self.coord.create_namespaced_lease, namespace, body)

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self._read(self.coord.replace_namespaced_lease, name, namespace, body)
