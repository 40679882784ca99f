"""Put a snapshot into a real kube-apiserver as a user and a kubelet would have made it, and take it out again.

A snapshot is written for ``phalanx schedule``; the API server needs a few things said its way, none of which
changes what the scheduler sees:
  - ``spec.priority`` without a ``priorityClassName`` becomes a PriorityClass of that value (priority admission
    rejects a pod or PodGroup that sets the integer itself);
  - server-set metadata (uid, resourceVersion, creationTimestamp, ownerReferences to objects that do not exist) is
    dropped, a container without an image gets the pause image;
  - status is written through the status subresource after the object exists: bound pods are made Running and
    Ready as their kubelet would (so the real disruption controller counts them healthy), terminal pods get their
    phase, PodGroup conditions and claim allocations are kept, a claim's ``reservedFor`` gets the new pods' uids;
  - a pod with a ``deletionTimestamp`` is created with a finalizer of ours and deleted, so it stays terminating.

Afterwards the snapshot that both schedulers are given is *read back* from the API server, so kube-scheduler and
phalanx see the same objects, defaulted and admitted by the real server: generated ResourceClaims, PDB status from
the real disruption controller, server timestamps.

``reset`` deletes every object a snapshot can have made and then checks that nothing is left.

A :class:`Release` says which API versions the API server serves: on v1.37 a snapshot's v1alpha2 Workloads and
PodGroups are converted to ``v1beta1`` (through phalanx's one internal model, ``phalanx.api.scheduling_convert``)
and CompositePodGroups are ``v1alpha3``; what is read back is in those versions.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from kube_api import Api, path_of

from phalanx.api.scheduling_convert import decode, pod_group_to_v1alpha2, workload_to_v1alpha2
from phalanx.testenv import RequestError

__all__ = ["HOLD", "RELEASES", "Loaded", "NotLoadable", "Release", "load", "read_back", "release_of", "reset"]

HOLD = "diffconf.phalanx.dev/hold"  # the finalizer that keeps a snapshot's terminating pod terminating
PAUSE = "registry.k8s.io/pause:3.10"

# Creation order: what other objects refer to comes first; pods last (bound before pending).
_ORDER = [
    "Namespace",
    "PriorityClass",
    "RuntimeClass",
    "DeviceClass",
    "Node",
    "ResourceSlice",
    "Workload",
    "CompositePodGroup",
    "PodGroup",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "PodDisruptionBudget",
    "Pod",
]
_NAMESPACED = ["Pod", "PodGroup", "Workload", "PodDisruptionBudget", "ResourceClaim", "ResourceClaimTemplate"]
_CLUSTER = ["Node", "ResourceSlice", "DeviceClass", "RuntimeClass", "PriorityClass"]
_COMMON = {
    "Namespace": "v1",
    "Node": "v1",
    "Pod": "v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "RuntimeClass": "node.k8s.io/v1",
    "DeviceClass": "resource.k8s.io/v1",
    "ResourceSlice": "resource.k8s.io/v1",
    "ResourceClaim": "resource.k8s.io/v1",
    "ResourceClaimTemplate": "resource.k8s.io/v1",
    "PodDisruptionBudget": "policy/v1",
}


@dataclass(frozen=True)
class Release:
    """What one Kubernetes release serves: the version of each scheduling kind (Workload, PodGroup and, where there
    is one, CompositePodGroup) and the PodGroup condition its scheduler writes."""

    version: str  # "1.36.3"
    scheduling: dict[str, str]  # kind -> apiVersion
    condition: str  # the PodGroup condition type

    @property
    def namespaced(self) -> list[str]:
        return _NAMESPACED + [k for k in self.scheduling if k not in _NAMESPACED]

    def api_version(self, kind: str) -> str:
        return self.scheduling.get(kind) or _COMMON[kind]

    def convert(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A Workload, PodGroup or CompositePodGroup in this release's version (unchanged if it is in it)."""
        kind = obj["kind"]
        want = self.api_version(kind)
        if obj.get("apiVersion") == want:
            return obj
        try:
            internal = decode(obj)
        except (KeyError, msgspec.ValidationError) as exc:
            raise NotLoadable(f"{kind} {_key(obj)}: cannot be converted to {want}: {exc}") from None
        if want == _V1ALPHA2:  # v1.36: what v1alpha2 cannot say (a parent, preemptionPolicy) is lost, as in serve
            to_v1alpha2 = pod_group_to_v1alpha2 if kind == "PodGroup" else workload_to_v1alpha2
            out: dict[str, Any] = msgspec.to_builtins(to_v1alpha2(internal))  # type: ignore[arg-type]
        else:
            out = msgspec.to_builtins(internal)
        for cond in (out.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodGroupScheduled":
                cond["type"] = self.condition
        return {**out, "apiVersion": want, "kind": kind}


_V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
_V1BETA1, _V1ALPHA3 = "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"
RELEASES = {
    "1.36": Release("1.36.3", {"Workload": _V1ALPHA2, "PodGroup": _V1ALPHA2}, "PodGroupScheduled"),
    # Workloads in v1alpha3: only it has compositePodGroupTemplates (v1beta1 would drop them on the way back)
    "1.37": Release(
        "1.37.2",
        {"Workload": _V1ALPHA3, "PodGroup": _V1BETA1, "CompositePodGroup": _V1ALPHA3},
        "PodGroupInitiallyScheduled",
    ),
}
V1_36 = RELEASES["1.36"]


def release_of(version: str) -> Release:
    """The release of a control plane version ("1.37.2" or "1.37")."""
    return RELEASES[".".join(version.removeprefix("v").split(".")[:2])]


_SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")


class NotLoadable(Exception):
    """The snapshot cannot be made in a real API server as it is (the reason says what and why)."""


@dataclass
class Loaded:
    """What ``load`` made: the namespaces in use, the pods pending when the scheduler starts (namespace/name),
    the pods bound at the start, and those held terminating."""

    namespaces: list[str]
    pending: list[str]
    bound: list[str]
    terminating: set[str]
    release: Release
    seconds: float = 0.0
    objects: list[dict[str, Any]] = field(default_factory=list)  # the snapshot as read back


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _prepare(objects: Iterable[dict[str, Any]], release: Release) -> list[dict[str, Any]]:
    """The objects as they are to be created, in creation order; status kept aside under ``_status``."""
    out: list[dict[str, Any]] = []
    for raw in objects:
        kind = raw.get("kind")
        if kind not in _ORDER or (kind == "CompositePodGroup" and kind not in release.scheduling):
            continue  # phalanx ignores what it does not read; so do we
        obj = copy.deepcopy(raw)
        if kind in ("Workload", "PodGroup", "CompositePodGroup"):
            obj = release.convert(obj)
        meta = obj.setdefault("metadata", {})
        for k in _SERVER_META:
            meta.pop(k, None)
        meta.pop("ownerReferences", None)  # their owners are not in the snapshot: the GC would delete the object
        if kind in release.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        obj["apiVersion"] = release.api_version(kind)
        if kind == "Pod":
            _prepare_pod(obj)
        if kind == "ResourceClaim" and (obj.get("status") or {}).get("allocation"):
            # What kube-scheduler v1.36 writes with every allocation it makes. Without the timestamp its PreBind
            # adds one to a claim allocated before, and the API server refuses the change (the allocation is
            # immutable), so the pod never binds: see docs/conformance.md.
            meta["finalizers"] = [*meta.get("finalizers", []), "resource.kubernetes.io/delete-protection"]
            obj["status"]["allocation"].setdefault("allocationTimestamp", _now())
        out.append(obj)
    out += _Admission(out).classes()
    for obj in out:
        if obj["kind"] not in ("Namespace", "Node") and "status" in obj:
            obj["_status"] = obj.pop("status")
    return sorted(out, key=_creation_rank)


class _Admission:
    """What the Priority and RuntimeClass admission plugins need to find: the classes a pod's integers came from.
    A snapshot may say ``priority: 10`` or ``preemptionPolicy: Never`` on a pod, or name a PriorityClass or
    RuntimeClass it does not hold (phalanx reads the values admission wrote); the API server computes those fields
    from the class and refuses a pod that sets them, so the harness makes the class and lets admission fill them in."""

    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.priority = {o["metadata"]["name"] for o in objs if o["kind"] == "PriorityClass"}
        self.runtime = {o["metadata"]["name"] for o in objs if o["kind"] == "RuntimeClass"}
        self.made: dict[str, dict[str, Any]] = {}
        for obj in objs:
            if obj["kind"] in ("Pod", "PodGroup"):
                self._priority(obj["spec"])
            if obj["kind"] == "Pod":
                self._runtime(obj)

    def classes(self) -> list[dict[str, Any]]:
        return list(self.made.values())

    def _priority(self, spec: dict[str, Any]) -> None:
        value, policy = spec.pop("priority", None), spec.pop("preemptionPolicy", None)
        name = spec.get("priorityClassName")
        if name and (name in self.priority or name.startswith("system-")):
            return
        if not name:
            if value is None and policy is None:
                return  # admission gives it the globalDefault class, if any
            v = int(value or 0)
            name = f"diffconf-priority-{'m' if v < 0 else ''}{abs(v)}{'-never' if policy == 'Never' else ''}"
            spec["priorityClassName"] = name
        pc: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        pc["value"] = int(value or 0)
        if policy:
            pc["preemptionPolicy"] = policy
        self.made.setdefault(name, pc)

    def _runtime(self, pod: dict[str, Any]) -> None:
        spec = pod["spec"]
        overhead = spec.get("overhead")
        name = spec.get("runtimeClassName")
        if name in self.runtime or (not name and not overhead):
            return
        if not name:
            name = "diffconf-overhead-" + "-".join(f"{k}-{v}" for k, v in sorted(overhead.items())).lower()
            name = "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in name)[:63].strip("-")
            spec["runtimeClassName"] = name
        rc: dict[str, Any] = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}}
        rc["handler"] = "runc"
        if overhead:
            rc["overhead"] = {"podFixed": overhead}
        if self.made.setdefault(name, rc) != rc:
            raise NotLoadable(
                f"Pod {_key(pod)}: RuntimeClass {name} is not in the snapshot and pods disagree on its overhead"
            )


def _prepare_pod(pod: dict[str, Any]) -> None:
    spec = pod["spec"]
    for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        c.setdefault("image", PAUSE)
    spec.setdefault("automountServiceAccountToken", False)  # no token volume: nothing to mount, nothing to wait for
    meta = pod["metadata"]
    if meta.pop("deletionTimestamp", None) is not None:
        meta["finalizers"] = [*meta.get("finalizers", []), HOLD]
        meta["_deleteGrace"] = int(meta.pop("deletionGracePeriodSeconds", 30) or 30)
    meta.pop("deletionGracePeriodSeconds", None)


def _creation_rank(obj: dict[str, Any]) -> tuple[int, int, str]:
    kind = obj["kind"]
    pending = 0
    if kind == "Pod":
        pending = 0 if obj["spec"].get("nodeName") else 1
    return (_ORDER.index(kind), pending, _key(obj))


def _namespaces(objs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {"default": {}}
    for obj in objs:
        if obj["kind"] != "Namespace" and obj["metadata"].get("namespace"):
            out.setdefault(obj["metadata"]["namespace"], {})
    for obj in objs:
        if obj["kind"] == "Namespace":
            out[obj["metadata"]["name"]] = dict(obj["metadata"].get("labels") or {})
    return out


def load(api: Api, objects: Iterable[dict[str, Any]], release: Release = V1_36) -> Loaded:
    """Create the snapshot's objects, write their status, wait for the controllers (generated claims, PDB status)
    and read the snapshot back. Raises NotLoadable when the API server refuses an object."""
    start = time.monotonic()
    objs = _prepare(objects, release)
    namespaces = _namespaces(objs)
    for ns, labels in namespaces.items():
        _ensure_namespace(api, ns, labels)
    uids: dict[str, str] = {}
    for obj in objs:
        if obj["kind"] == "Namespace":
            continue
        body = {k: v for k, v in obj.items() if k != "_status"}
        body["metadata"] = {k: v for k, v in obj["metadata"].items() if not k.startswith("_")}
        try:
            # Strict: a field this API server does not know is an error, not silently dropped (the schedulers
            # would otherwise see different snapshots).
            path = path_of(obj["apiVersion"], obj["kind"], body["metadata"].get("namespace"))
            made = api.create(path + "?fieldValidation=Strict", body)
        except RequestError as exc:
            raise NotLoadable(f"{obj['kind']} {_key(obj)}: {exc}") from None
        if obj["kind"] == "Pod":
            uids[_key(obj)] = made["metadata"]["uid"]
    pods = [o for o in objs if o["kind"] == "Pod"]
    for obj in objs:
        _write_status(api, obj, uids)
    terminating = set()
    for pod in pods:
        if "_deleteGrace" in pod["metadata"]:
            path = path_of("v1", "Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
            api.delete(path, {"gracePeriodSeconds": pod["metadata"]["_deleteGrace"]})
            terminating.add(_key(pod))
    _wait_for_controllers(api, objs)
    loaded = Loaded(
        namespaces=sorted(namespaces),
        pending=[_key(p) for p in pods if not p["spec"].get("nodeName") and _key(p) not in terminating],
        bound=[_key(p) for p in pods if p["spec"].get("nodeName")],
        terminating=terminating,
        release=release,
    )
    loaded.objects = read_back(api, loaded.namespaces, release)
    loaded.seconds = time.monotonic() - start
    return loaded


def _ensure_namespace(api: Api, ns: str, labels: dict[str, str]) -> None:
    try:
        api.create("/api/v1/namespaces", {"metadata": {"name": ns, "labels": labels}})
    except RequestError as exc:
        if exc.code != 409:
            raise
        _set_namespace_labels(api, ns, labels)
        return
    _wait(
        "the default ServiceAccount of " + ns, lambda: _exists(api, f"/api/v1/namespaces/{ns}/serviceaccounts/default")
    )


def _set_namespace_labels(api: Api, ns: str, labels: dict[str, str]) -> None:
    current = api.get(f"/api/v1/namespaces/{ns}")["metadata"].get("labels") or {}
    patch: dict[str, str | None] = {k: None for k in current if k != "kubernetes.io/metadata.name" and k not in labels}
    patch.update(labels)
    if patch:
        api.merge_patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": patch}})


def _exists(api: Api, path: str) -> bool:
    try:
        api.get(path)
    except RequestError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _write_status(api: Api, obj: dict[str, Any], uids: dict[str, str]) -> None:
    kind, meta = obj["kind"], obj["metadata"]
    status = obj.get("_status")
    if kind == "Pod":
        status = _pod_status(obj, status or {})
    elif kind == "ResourceClaim" and status:
        status = copy.deepcopy(status)
        for ref in status.get("reservedFor") or []:
            if ref.get("resource") == "pods":
                ref["uid"] = uids.get(f"{meta['namespace']}/{ref['name']}", ref.get("uid", ""))
    elif kind in ("PodGroup", "CompositePodGroup") and status:
        status = {k: v for k, v in status.items() if k == "conditions"}
    else:
        status = None  # a PDB's status is the disruption controller's to compute; the rest have none to keep
    if not status:
        return
    path = path_of(obj["apiVersion"], kind, meta.get("namespace"), meta["name"]) + "/status"
    try:
        api.merge_patch(path, {"status": status})
    except RequestError as exc:
        raise NotLoadable(f"{kind} {_key(obj)} status: {exc}") from None


def _pod_status(pod: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """A bound pod is Running and Ready (its kubelet would say so), unless the snapshot says it finished; a
    pending pod keeps its nomination."""
    phase = given.get("phase")
    if not pod["spec"].get("nodeName"):
        return {k: given[k] for k in ("nominatedNodeName",) if given.get(k)}
    if phase in ("Succeeded", "Failed"):
        return {"phase": phase, "startTime": given.get("startTime") or _now()}
    start = given.get("startTime") or _now()
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": start}
    return {"phase": "Running", "startTime": start, "conditions": [ready]}


def _wait_for_controllers(api: Api, objs: list[dict[str, Any]]) -> None:
    """Generated claims exist for every template entry (resourceclaim controller), and every PDB has the status
    the disruption controller computes from the pods now there."""
    templates = {_key(o) for o in objs if o["kind"] == "ResourceClaimTemplate"}
    for obj in objs:
        meta = obj["metadata"]
        if obj["kind"] in ("Pod", "PodGroup") and "_deleteGrace" not in meta:
            entries = [
                c["name"]
                for c in obj["spec"].get("resourceClaims") or []
                if f"{meta['namespace']}/{c.get('resourceClaimTemplateName')}" in templates
            ]
            if entries:
                path = path_of(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
                _wait(f"claims of {obj['kind']} {_key(obj)}", lambda p=path, e=entries: _claims_generated(api, p, e))
        if obj["kind"] == "PodDisruptionBudget":
            path = path_of("policy/v1", "PodDisruptionBudget", meta["namespace"], meta["name"])
            _wait(f"status of PodDisruptionBudget {_key(obj)}", lambda p=path: _pdb_synced(api, p))


def _claims_generated(api: Api, path: str, entries: list[str]) -> bool:
    statuses = api.get(path).get("status", {}).get("resourceClaimStatuses") or []
    return {s["name"] for s in statuses} >= set(entries)


def _pdb_synced(api: Api, path: str) -> bool:
    """The disruption controller has looked at this generation and counted the Running, Ready pods it selects."""
    pdb = api.get(path)
    status = pdb.get("status") or {}
    conds = {c["type"]: c for c in status.get("conditions") or []}
    if "DisruptionAllowed" not in conds:
        return False
    if conds["DisruptionAllowed"].get("reason") == "SyncFailed":
        return True  # bare pods with maxUnavailable or a percentage: disruptionsAllowed stays 0, as on a real cluster
    if status.get("observedGeneration") != pdb["metadata"].get("generation"):
        return False
    selector = pdb["spec"].get("selector") or {}
    healthy = _count_ready(api, pdb["metadata"]["namespace"], selector)
    return healthy is None or status.get("currentHealthy") == healthy


def _count_ready(api: Api, ns: str, selector: dict[str, Any]) -> int | None:
    labels = selector.get("matchLabels") or {}
    if selector.get("matchExpressions"):
        return None  # cannot count without a selector library; the generation check has to do
    query = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = api.items(f"/api/v1/namespaces/{ns}/pods?labelSelector={query}")
    ready = 0
    for p in pods:
        conds = {c["type"]: c["status"] for c in (p.get("status") or {}).get("conditions") or []}
        if not p["metadata"].get("deletionTimestamp") and conds.get("Ready") == "True":
            ready += 1
    return ready


def _wait(what: str, check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Wait for a controller; one that never gets there makes the snapshot not loadable (reported, not fatal)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise NotLoadable(f"no {what} after {timeout:.0f} s")
        time.sleep(0.05)


# --- read back ---------------------------------------------------------------------------------------------------


def read_back(api: Api, namespaces: Iterable[str], release: Release = V1_36) -> list[dict[str, Any]]:
    """Every object of the kinds a snapshot holds, as the API server has them now (a snapshot for phalanx)."""
    out: list[dict[str, Any]] = []
    for ns in namespaces:
        body = api.get(f"/api/v1/namespaces/{ns}")
        out.append({"apiVersion": "v1", "kind": "Namespace", **{k: body[k] for k in ("metadata", "spec") if k in body}})
    for kind in _CLUSTER:
        out += _listed(api, kind, None, release)
    for ns in namespaces:
        for kind in release.namespaced:
            out += _listed(api, kind, ns, release)
    return out


def _listed(api: Api, kind: str, ns: str | None, release: Release) -> list[dict[str, Any]]:
    version = release.api_version(kind)
    items = api.items(path_of(version, kind, ns))
    for item in items:
        item["apiVersion"], item["kind"] = version, kind
        item["metadata"].pop("managedFields", None)
    return items


# --- reset -------------------------------------------------------------------------------------------------------


def reset(api: Api, namespaces: Iterable[str], release: Release = V1_36, timeout: float = 60.0) -> None:
    """Delete everything a snapshot made (pods at once, as a kubelet would finish them), strip finalizers so
    nothing lingers, reset the namespaces' labels, then check that every kind is empty. Namespaces themselves are
    kept: deleting one takes the namespace controller seconds, and an empty namespace changes no decision."""
    namespaces = list(namespaces)
    for ns in namespaces:
        for kind in release.namespaced:
            path = path_of(release.api_version(kind), kind, ns)
            _strip_finalizers(api, release, kind, api.items(path))
            api.delete(path + "?gracePeriodSeconds=0")
        _set_namespace_labels(api, ns, {})
    for kind in _CLUSTER:
        path = path_of(release.api_version(kind), kind)
        if kind == "PriorityClass":
            for pc in api.items(path):
                if not pc["metadata"]["name"].startswith("system-"):
                    api.delete(f"{path}/{pc['metadata']['name']}")
        else:
            api.delete(path)
    deadline = time.monotonic() + timeout
    while left := leftovers(api, namespaces, release):
        if time.monotonic() > deadline:
            raise TimeoutError(f"reset left objects behind: {left}")
        for ns in namespaces:
            for kind in release.namespaced:
                _strip_finalizers(api, release, kind, api.items(path_of(release.api_version(kind), kind, ns)))
        time.sleep(0.1)


def _strip_finalizers(api: Api, release: Release, kind: str, items: list[dict[str, Any]]) -> None:
    for item in items:
        meta = item["metadata"]
        if meta.get("finalizers"):
            path = path_of(release.api_version(kind), kind, meta.get("namespace"), meta["name"])
            try:
                api.merge_patch(path, {"metadata": {"finalizers": None}})
            except RequestError as exc:
                if exc.code not in (404, 409):
                    raise


def leftovers(api: Api, namespaces: Iterable[str], release: Release = V1_36) -> list[str]:
    """Objects of any snapshot kind still in the API server (system PriorityClasses excepted): empty after a clean
    reset. Checked cluster-wide, so a namespace the harness forgot would show too."""
    left: list[str] = []
    for kind in release.namespaced + _CLUSTER:
        for item in api.items(path_of(release.api_version(kind), kind)):
            name = item["metadata"]["name"]
            if kind == "PriorityClass" and name.startswith("system-"):
                continue
            ns = item["metadata"].get("namespace")
            left.append(f"{kind} {ns}/{name}" if ns else f"{kind} {name}")
    for ns in namespaces:
        labels = api.get(f"/api/v1/namespaces/{ns}")["metadata"].get("labels") or {}
        if set(labels) - {"kubernetes.io/metadata.name"}:
            left.append(f"labels on Namespace {ns}")
    return left
