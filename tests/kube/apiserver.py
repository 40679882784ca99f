"""A test Kubernetes API server: the part of the REST API ``phalanx serve`` uses, with real semantics.

- One global resourceVersion counter; every write bumps it and appends a watch event to a bounded history.
- ``GET <collection>`` lists (``metadata.resourceVersion`` = the current version), ``?watch=true`` streams JSON
  events line by line over chunked HTTP from ``resourceVersion``; BOOKMARK events when asked for; a version older
  than the history (``compact()``) gets an ERROR event with a 410 Status, as kube-apiserver sends it.
- ``fieldSelector`` with ``=``, ``==`` and ``!=`` on dotted paths (``spec.schedulerName``, ``spec.nodeName``).
- ``pods/binding`` (409 if the pod is already bound, 404 if gone), ``pods/eviction`` (policy/v1 Eviction, as
  kube-apiserver's eviction REST handler: uid precondition, PodDisruptionBudget check, 429 TooManyRequests with the
  budget as cause when ``status.disruptionsAllowed`` is 0, the budget's allowance spent and the pod recorded in
  ``status.disruptedPods`` when it is not; pods Pending, Succeeded or Failed are evicted regardless of budgets).
- Pod deletion (DELETE or eviction) is graceful, as kube-apiserver's: a pod on a node first gets a
  ``deletionTimestamp`` (MODIFIED), and is removed (DELETED) when its kubelet finishes, which here is at once unless
  ``Store.kubelet`` is off; unbound and terminal pods and a zero grace period go at once.
- ``pods/status`` strategic-merge patches (conditions merged by type), PodGroup ``/status`` JSON merge patches with a resourceVersion precondition (409 when
  stale), Leases (create 409 if it exists, update 409 on a stale resourceVersion), events.
- Lists' items carry no ``apiVersion`` or ``kind``, as kube-apiserver's typed lists; ``served_groups`` says which
  ``scheduling.k8s.io`` versions answer (v1.36: ``v1alpha2``; v1.37: ``v1beta1`` and ``v1alpha3``, the only one with
  CompositePodGroups). Objects are stored as written, in one version.
- ``resource.k8s.io/v1``: DeviceClasses, ResourceSlices, DeviceTaintRules, ResourceClaims and ResourceClaimTemplates
  listed and watched; ResourceClaims created (409 AlreadyExists), read, and written as kube-apiserver does: a JSON merge patch
  or PUT of the claim changes metadata only (the spec is immutable, the status is the subresource's), of ``/status``
  the status only; a ``metadata.resourceVersion`` in the body that is not the current one is a 409 Conflict.
- Faults: ``fail(predicate, code, times)`` answers matching requests with an error; ``before(predicate, fn, times)``
  runs ``fn(store)`` before a matching request is handled (another client's write in between); ``cut_watches()``
  drops every open watch connection mid-stream.

It binds 127.0.0.1 only.
"""

from __future__ import annotations

import bisect
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec

COLLECTIONS = {
    "/api/v1/nodes": "nodes",
    "/api/v1/pods": "pods",
    "/api/v1/namespaces": "namespaces",
    "/apis/scheduling.k8s.io/v1/priorityclasses": "priorityclasses",
    "/apis/policy/v1/poddisruptionbudgets": "poddisruptionbudgets",
    "/apis/scheduling.k8s.io/v1alpha2/podgroups": "podgroups",
    "/apis/scheduling.k8s.io/v1alpha2/workloads": "workloads",
    "/apis/scheduling.phalanx.dev/v1alpha2/podgroups": "podgroups",
    "/apis/scheduling.phalanx.dev/v1alpha2/workloads": "workloads",
    "/apis/scheduling.k8s.io/v1beta1/podgroups": "podgroups",
    "/apis/scheduling.k8s.io/v1beta1/workloads": "workloads",
    "/apis/scheduling.k8s.io/v1alpha3/podgroups": "podgroups",
    "/apis/scheduling.k8s.io/v1alpha3/workloads": "workloads",
    "/apis/scheduling.k8s.io/v1alpha3/compositepodgroups": "compositepodgroups",
    "/apis/resource.k8s.io/v1/deviceclasses": "deviceclasses",
    "/apis/resource.k8s.io/v1/resourceslices": "resourceslices",
    "/apis/resource.k8s.io/v1/resourceclaims": "resourceclaims",
    "/apis/resource.k8s.io/v1/resourceclaimtemplates": "resourceclaimtemplates",
    "/apis/resource.k8s.io/v1/devicetaintrules": "devicetaintrules",
}
KINDS = {
    "nodes": ("v1", "Node"),
    "pods": ("v1", "Pod"),
    "namespaces": ("v1", "Namespace"),
    "priorityclasses": ("scheduling.k8s.io/v1", "PriorityClass"),
    "poddisruptionbudgets": ("policy/v1", "PodDisruptionBudget"),
    "podgroups": ("scheduling.k8s.io/v1alpha2", "PodGroup"),
    "workloads": ("scheduling.k8s.io/v1alpha2", "Workload"),
    "compositepodgroups": ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"),
    "leases": ("coordination.k8s.io/v1", "Lease"),
    "events": ("events.k8s.io/v1", "Event"),
    "deviceclasses": ("resource.k8s.io/v1", "DeviceClass"),
    "resourceslices": ("resource.k8s.io/v1", "ResourceSlice"),
    "resourceclaims": ("resource.k8s.io/v1", "ResourceClaim"),
    "resourceclaimtemplates": ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    "devicetaintrules": ("resource.k8s.io/v1", "DeviceTaintRule"),
}
_NS_OBJECT = re.compile(
    r"^/(?:api/v1|apis/[^/]+/[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<res>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _key(obj: dict[str, Any]) -> str:
    md = obj["metadata"]
    return f"{md.get('namespace', '')}/{md['name']}" if md.get("namespace") else md["name"]


def _get_path(obj: Any, path: str) -> str:
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return "" if obj is None else str(obj)


def field_matches(obj: dict[str, Any], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            path, value = term.split("!=", 1)
            if _get_path(obj, path) == value:
                return False
        else:
            path, value = term.replace("==", "=").split("=", 1)
            if _get_path(obj, path) != value:
                return False
    return True


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector: a missing selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req["key"], req["operator"], req.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_status(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Strategic merge as the pod status uses it: ``conditions`` merged by ``type``, the rest merge-patched."""
    conds = {c["type"]: c for c in target.get("status", {}).get("conditions", [])}
    for c in patch.get("status", {}).get("conditions", []):
        conds[c["type"]] = {**conds.get(c["type"], {}), **c}
    patch_rest = {**patch, "status": {k: v for k, v in patch.get("status", {}).items() if k != "conditions"}}
    out = merge_patch(target, patch_rest)
    out.setdefault("status", {})["conditions"] = list(conds.values())
    return out


@dataclass
class Fault:
    predicate: Callable[[str, str], bool]  # (method, path) -> match
    code: int
    times: int


@dataclass
class Hook:
    predicate: Callable[[str, str], bool]  # (method, path) -> match
    fn: Callable[[Store], None]
    times: int


@dataclass
class Store:
    """Objects by resource and key, the watch history, and counters tests assert on."""

    history_limit: int = 100_000
    rv: int = 1
    objects: dict[str, dict[str, dict[str, Any]]] = field(default_factory=lambda: {r: {} for r in KINDS})
    history: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)
    oldest: int = 1  # watches from a version below this get 410
    bindings: dict[str, list[str]] = field(default_factory=dict)  # pod key -> nodes of successful bindings
    requests: dict[str, int] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    cut: int = 0
    served_groups: tuple[str, ...] = ("scheduling.k8s.io/v1alpha2",)  # group/versions serving PodGroups, Workloads
    kubelet: bool = True  # a terminating pod's kubelet finishes its deletion at once (see delete_pod)
    lock: threading.RLock = field(default_factory=threading.RLock)
    # The history again, by resource, so a watch finds its events without scanning everyone else's.
    by_resource: dict[str, list[tuple[int, str, dict[str, Any]]]] = field(
        default_factory=lambda: {r: [] for r in KINDS}
    )

    def __post_init__(self) -> None:
        self.cond = threading.Condition(self.lock)
        # One condition per resource on the same lock: a write wakes the watches of its resource only.
        self.watchers = {r: threading.Condition(self.lock) for r in KINDS}

    def write(self, res: str, etype: str, obj: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            self.rv += 1
            obj = _dec.decode(_enc.encode(obj))
            api_version, kind = KINDS[res]
            obj.setdefault("apiVersion", api_version)
            obj.setdefault("kind", kind)
            md = obj.setdefault("metadata", {})
            md["resourceVersion"] = str(self.rv)
            md.setdefault("uid", str(uuid.uuid4()))
            md.setdefault("generation", 1)
            if etype == "DELETED":
                self.objects[res].pop(_key(obj), None)
            else:
                self.objects[res][_key(obj)] = obj
            self.history.append((self.rv, res, etype, obj))
            self.by_resource[res].append((self.rv, etype, obj))
            if len(self.history) > self.history_limit:
                self.compact(len(self.history) - self.history_limit)
            self.cond.notify_all()
            self.watchers[res].notify_all()
            return obj

    def create(self, res: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.write(res, "ADDED", obj)

    def update(self, res: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.write(res, "MODIFIED", obj)

    def delete(self, res: str, key: str) -> None:
        with self.cond:
            obj = self.objects[res].get(key)
            if obj is not None:
                self.write(res, "DELETED", obj)

    def delete_pod(self, key: str, grace: int | None = None) -> None:
        """Delete a pod as kube-apiserver does: a pod on a node is deleted gracefully (deletionTimestamp set, a
        MODIFIED event) and disappears only when its kubelet says its containers stopped; here the kubelet answers
        at once (``kubelet``), or never when a test turns it off, leaving the pod terminating. A pod on no node, a
        terminal pod and a zero grace period go at once."""
        with self.cond:
            pod = self.objects["pods"].get(key)
            if pod is None:
                return
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            if grace is None:
                grace = int(spec.get("terminationGracePeriodSeconds", 30))
            if spec.get("nodeName") and status.get("phase") not in ("Succeeded", "Failed") and grace > 0:
                md = pod["metadata"]
                if not md.get("deletionTimestamp"):
                    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + grace))
                    md = {**md, "deletionTimestamp": stamp, "deletionGracePeriodSeconds": grace}
                    pod = self.update("pods", {**pod, "metadata": md})
                if not self.kubelet:
                    return
            self.write("pods", "DELETED", pod)

    def get(self, res: str, key: str) -> dict[str, Any] | None:
        with self.cond:
            return self.objects[res].get(key)

    def compact(self, n: int | None = None) -> None:
        """Forget the oldest ``n`` history entries (all by default): watches from before them get 410."""
        with self.cond:
            n = len(self.history) if n is None else n
            del self.history[:n]
            self.oldest = self.history[0][0] if self.history else self.rv + 1
            for events in self.by_resource.values():
                del events[: bisect.bisect_left(events, self.oldest, key=lambda e: e[0])]

    def cut_watches(self) -> None:
        with self.cond:
            self.cut += 1
            self.cond.notify_all()
            for watchers in self.watchers.values():
                watchers.notify_all()

    def fail(self, predicate: Callable[[str, str], bool], code: int, times: int = 1) -> None:
        with self.cond:
            self.faults.append(Fault(predicate, code, times))

    def before(self, predicate: Callable[[str, str], bool], fn: Callable[[Store], None], times: int = 1) -> None:
        with self.cond:
            self.hooks.append(Hook(predicate, fn, times))

    def run_hooks(self, method: str, path: str) -> None:
        with self.cond:
            due = [h for h in self.hooks if h.times > 0 and h.predicate(method, path)]
            for h in due:
                h.times -= 1
                h.fn(self)

    def take_fault(self, method: str, path: str) -> int | None:
        with self.cond:
            for f in self.faults:
                if f.times > 0 and f.predicate(method, path):
                    f.times -= 1
                    return f.code
        return None

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
        """Wait (bounded) until ``predicate()`` holds after some write."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.05))
            return True


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


_REASONS = {404: "NotFound", 409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: APIServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # As Go's net package does for kube-apiserver: without it, a response's body waits for the client's
        # delayed ACK of its headers (Nagle), 40 ms a request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # --- plumbing ---------------------------------------------------------------------------------------------

    def _send(self, code: int, body: Any) -> None:
        data = _enc.encode(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, message: str = "") -> None:
        self._send(code, _status(code, _REASONS.get(code, "Error"), message or _REASONS.get(code, "error")))

    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        return _dec.decode(self.rfile.read(n)) if n else None

    def _dispatch(self, method: str) -> None:
        store = self.server.store
        url = urlsplit(self.path)
        store.requests[method] = store.requests.get(method, 0) + 1
        store.run_hooks(method, url.path)
        code = store.take_fault(method, url.path)
        if code is not None:
            self._body() if method != "GET" else None
            self._error(code, "injected fault")
            return
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.split("/")
        group = "/".join(parts[2:4]) if url.path.startswith("/apis/scheduling.") and parts[3] != "v1" else ""
        if group and group not in store.served_groups:
            self._body() if method != "GET" else None
            self._error(404, f"the server could not find the requested resource (group {group})")
            return
        if method == "GET" and url.path in COLLECTIONS:
            res = COLLECTIONS[url.path]
            if query.get("watch") in ("true", "1"):
                self._watch(res, query)
            else:
                self._list(res, query)
            return
        m = _NS_OBJECT.match(url.path)
        if m is None:
            self._error(404, f"no route for {url.path}")
            return
        getattr(self, f"_{m['res']}")(method, m["ns"], m["name"], m["sub"])

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # --- list and watch ---------------------------------------------------------------------------------------

    def _list(self, res: str, query: dict[str, str]) -> None:
        store = self.server.store
        sel = query.get("fieldSelector", "")
        with store.cond:
            items = [o for o in store.objects[res].values() if not sel or field_matches(o, sel)]
            items = items[: int(query["limit"])] if query.get("limit") else items
            # As kube-apiserver's typed lists: the items carry no apiVersion or kind (they are the list's).
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
            rv = store.rv
        api_version, kind = KINDS[res]
        self._send(
            200,
            {
                "apiVersion": api_version,
                "kind": kind + "List",
                "metadata": {"resourceVersion": str(rv)},
                "items": items,
            },
        )

    def _chunk(self, event: dict[str, Any]) -> None:
        data = _enc.encode(event) + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, res: str, query: dict[str, str]) -> None:
        store = self.server.store
        rv = int(query.get("resourceVersion") or store.rv)
        sel = query.get("fieldSelector", "")
        bookmarks = query.get("allowWatchBookmarks") == "true"
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 300)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        # The connection is closed when the watch ends: say so, or the client may reuse it for its next request
        # and lose that request to the close (a race that made tests flaky).
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            if rv + 1 < store.oldest:
                self._chunk({"type": "ERROR", "object": _status(410, "Expired", f"too old resource version: {rv}")})
            elif not self._stream(res, rv, sel, bookmarks, deadline):
                return  # cut: no terminating chunk
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _pending(self, res: str, rv: int) -> list[tuple[int, str, dict[str, Any]]]:
        """The events of ``res`` after ``rv`` (the history is ordered by resourceVersion)."""
        events = self.server.store.by_resource[res]
        return events[bisect.bisect_right(events, rv, key=lambda e: e[0]) :]

    def _stream(self, res: str, rv: int, sel: str, bookmarks: bool, deadline: float) -> bool:
        """Send events until the deadline (True) or until the watches are cut (False)."""
        store = self.server.store
        cut = store.cut
        last_bookmark = time.monotonic()
        while time.monotonic() < deadline:
            with store.cond:
                if store.cut != cut:
                    self.wfile.flush()
                    self.connection.shutdown(2)  # abrupt: no terminating chunk
                    return False
                events = self._pending(res, rv)
                current = store.rv
                if not events:
                    store.watchers[res].wait(0.05)
            for erv, etype, obj in events:
                if not sel or field_matches(obj, sel):
                    self._chunk({"type": etype, "object": obj})
                rv = erv
            if bookmarks and time.monotonic() - last_bookmark > 0.2:
                rv = max(rv, current) if not events else rv
                api_version, kind = KINDS[res]
                md = {"resourceVersion": str(rv)}
                self._chunk({"type": "BOOKMARK", "object": {"apiVersion": api_version, "kind": kind, "metadata": md}})
                last_bookmark = time.monotonic()
        return True

    # --- objects ----------------------------------------------------------------------------------------------

    def _pods(self, method: str, ns: str, name: str | None, sub: str | None) -> None:
        store = self.server.store
        key = f"{ns}/{name}"
        body = self._body() if method != "GET" else None
        with store.cond:
            pod = store.objects["pods"].get(key)
            if pod is None:
                self._error(404, f'pods "{name}" not found')
                return
            if method == "GET" and sub is None:
                self._send(200, pod)
            elif method == "POST" and sub == "binding":
                self._bind(pod, body)
            elif method == "POST" and sub == "eviction":
                self._evict(pod, body)
            elif method == "DELETE" and sub is None:
                want = ((body or {}).get("preconditions") or {}).get("uid")
                if want and want != pod["metadata"]["uid"]:
                    self._error(409, "Precondition failed: UID in precondition does not match the object")
                    return
                grace = (body or {}).get("gracePeriodSeconds")
                store.delete_pod(key, None if grace is None else int(grace))
                self._send(200, store.objects["pods"].get(key, pod))
            elif method == "PATCH" and sub == "status":
                self._send(200, store.update("pods", strategic_merge_status(pod, body)))
            else:
                self._error(405, "method not allowed")

    def _bind(self, pod: dict[str, Any], body: dict[str, Any]) -> None:
        store = self.server.store
        if pod["spec"].get("nodeName"):
            self._error(409, f"pod {pod['metadata']['name']} is already assigned to node {pod['spec']['nodeName']!r}")
            return
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            self._error(409, "Precondition failed: UID mismatch")
            return
        node = body["target"]["name"]
        pod = _dec.decode(_enc.encode(pod))
        pod["spec"]["nodeName"] = node
        conds = [c for c in pod.setdefault("status", {}).get("conditions", []) if c["type"] != "PodScheduled"]
        pod["status"]["conditions"] = [*conds, {"type": "PodScheduled", "status": "True"}]
        store.update("pods", pod)
        store.bindings.setdefault(_key(pod), []).append(node)
        self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})

    def _evict(self, pod: dict[str, Any], body: dict[str, Any]) -> None:
        store = self.server.store
        md = pod["metadata"]
        want = ((body.get("deleteOptions") or {}).get("preconditions") or {}).get("uid")
        if want and want != md["uid"]:
            msg = f"Precondition failed: UID in precondition: {want}, UID in object meta: {md['uid']}"
            self._error(409, msg)
            return
        if (pod.get("status") or {}).get("phase") not in ("Pending", "Succeeded", "Failed"):
            labels = md.get("labels") or {}
            pdbs = [
                p
                for p in store.objects["poddisruptionbudgets"].values()
                if p["metadata"].get("namespace") == md["namespace"]
                and selector_matches((p.get("spec") or {}).get("selector"), labels)
            ]
            if len(pdbs) > 1:
                self._error(
                    500,
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                )
                return
            if pdbs and not self._spend_disruption(pdbs[0], md["name"]):
                return
        grace = (body.get("deleteOptions") or {}).get("gracePeriodSeconds")
        store.delete_pod(_key(pod), None if grace is None else int(grace))
        self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})

    def _spend_disruption(self, pdb: dict[str, Any], pod_name: str) -> bool:
        """Take one disruption from the budget, or answer as kube-apiserver does when there is none."""
        status = pdb.get("status") or {}
        name = pdb["metadata"]["name"]
        if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 1):
            self._too_many(f"The disruption budget {name} is still being processed by the server.")
            return False
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            self._error(403, "pdb disruptions allowed is negative")
            return False
        if allowed == 0:
            need, have = status.get("desiredHealthy", 0), status.get("currentHealthy", 0)
            self._too_many(f"The disruption budget {name} needs {need} healthy pods and has {have} currently")
            return False
        disrupted = {
            **(status.get("disruptedPods") or {}),
            pod_name: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self.server.store.update(
            "poddisruptionbudgets",
            {**pdb, "status": {**status, "disruptionsAllowed": allowed - 1, "disruptedPods": disrupted}},
        )
        return True

    def _too_many(self, cause: str) -> None:
        body = _status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
        body["details"] = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
        self._send(429, body)

    def _podgroups(self, method: str, ns: str, name: str | None, sub: str | None, res: str = "podgroups") -> None:
        store = self.server.store
        body = self._body() if method != "GET" else None
        with store.cond:
            pg = store.objects[res].get(f"{ns}/{name}")
            if pg is None:
                self._error(404, f'{res} "{name}" not found')
                return
            if method == "GET":
                self._send(200, pg)
                return
            want = (body.get("metadata") or {}).get("resourceVersion")
            if want and want != pg["metadata"]["resourceVersion"]:
                self._error(409, "the object has been modified; please apply your changes to the latest version")
                return
            patched = merge_patch(pg, {"status": body.get("status", {})})
            self._send(200, store.update(res, patched))

    def _compositepodgroups(self, method: str, ns: str, name: str | None, sub: str | None) -> None:
        self._podgroups(method, ns, name, sub, "compositepodgroups")

    def _resourceclaims(self, method: str, ns: str, name: str | None, sub: str | None) -> None:
        store = self.server.store
        body = self._body() if method != "GET" else None
        with store.cond:
            if method == "POST" and name is None:
                body.setdefault("metadata", {})["namespace"] = ns
                key = f"{ns}/{body['metadata'].get('name')}"
                if key in store.objects["resourceclaims"]:
                    self._error(409, f'resourceclaims.resource.k8s.io "{body["metadata"]["name"]}" already exists')
                    return
                body["metadata"].pop("resourceVersion", None)
                self._send(201, store.create("resourceclaims", {**body, "status": {}}))
                return
            claim = store.objects["resourceclaims"].get(f"{ns}/{name}")
            if claim is None:
                self._error(404, f'resourceclaims.resource.k8s.io "{name}" not found')
            elif method == "GET":
                self._send(200, claim)
            elif method not in ("PATCH", "PUT") or sub not in (None, "status"):
                self._error(405, "method not allowed")
            elif (want := (body.get("metadata") or {}).get("resourceVersion")) and want != claim["metadata"][
                "resourceVersion"
            ]:
                self._error(409, "the object has been modified; please apply your changes to the latest version")
            else:
                self._send(200, store.update("resourceclaims", self._claim_write(claim, body, method, sub)))

    @staticmethod
    def _claim_write(claim: dict[str, Any], body: dict[str, Any], method: str, sub: str | None) -> dict[str, Any]:
        """What a write may change: the status through ``/status``, else metadata (less the server's fields)."""
        if sub == "status":
            status = body.get("status") or {}
            return {**claim, "status": merge_patch(claim.get("status") or {}, status) if method == "PATCH" else status}
        md = {k: v for k, v in (body.get("metadata") or {}).items() if k not in ("resourceVersion", "uid", "name")}
        new_md = merge_patch(claim["metadata"], md) if method == "PATCH" else {**claim["metadata"], **md}
        return {**claim, "metadata": new_md}

    def _events(self, method: str, ns: str, name: str | None, sub: str | None) -> None:
        body = self._body()
        body.setdefault("metadata", {}).setdefault("name", f"ev-{uuid.uuid4().hex[:10]}")
        self._send(201, self.server.store.create("events", body))

    def _leases(self, method: str, ns: str, name: str | None, sub: str | None) -> None:
        store = self.server.store
        body = self._body() if method != "GET" else None
        with store.cond:
            if method == "POST":
                key = f"{ns}/{body['metadata']['name']}"
                if key in store.objects["leases"]:
                    self._error(409, "already exists")
                    return
                body["metadata"]["namespace"] = ns
                self._send(201, store.create("leases", body))
                return
            cur = store.objects["leases"].get(f"{ns}/{name}")
            if cur is None:
                self._error(404, f'leases "{name}" not found')
            elif method == "GET":
                self._send(200, cur)
            elif body["metadata"].get("resourceVersion") != cur["metadata"]["resourceVersion"]:
                self._error(409, "the object has been modified; please apply your changes to the latest version")
            else:
                self._send(200, store.update("leases", body))


class APIServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store: Store | None = None) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.store = store or Store()
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-stream is normal here

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> APIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.cut_watches()
        self.shutdown()
        self.server_close()
