"""``phalanx serve``: the engine driven by watches, its decisions written back through the API.

Algorithm (one thread owns the cache and the engine; reflectors and the binder's pool only talk to it by queue):

1. Drain deltas. Each updates the cache (objects as JSON dicts by resource and key) and, once the engine is
   built, becomes an engine event: pod add/update/delete, PodGroup and CompositePodGroup add/update/delete (an
   update may change a gang's minCount: elastic gangs), Node add/update/delete. The Workload API's objects are
   decoded through ``phalanx.api.scheduling_convert`` from the version each collection is watched in.
   A relist's ``Replace`` is diffed against the cache by resourceVersion, so nothing is lost or applied twice.
   PriorityClass, Namespace and PodDisruptionBudget changes rebuild the engine from the cache.
2. When every collection has listed and this instance leads, build the engine from the cache (``load``), then
   ``run`` it. Pods the engine bound are submitted to the binder; a gang's members are bound only after its whole
   PodGroup cycle succeeded, because the engine binds nothing before that.
3. Write unschedulable pods' ``PodScheduled=False`` and ``FailedScheduling`` events (once per distinct message)
   and PodGroup conditions (never regressing True).
   (Bindings are submitted from within the run, as each cycle succeeds.)
4. A binding that fails for good is answered by re-reading the pod (the engine requeues it if it is still pending)
   and by a ``FailedBinding`` event on its PodGroup.
5. DRA: ResourceClaims become engine events, DeviceClass, ResourceSlice and DeviceTaintRule changes one
   ``set_devices`` per round (the rules' taints applied to the slices first).
   A pod that reserved claims is bound only after its claim writes (PreBind, :mod:`phalanx.kube.prebind`) were
   answered; a gang's members' writes are made together at the end of the run, before any member is bound.

Restart recovery needs nothing more: a new leader lists bound pods as bound, so nothing is bound twice, and a
gang's bound members count toward its minCount when the rest are scheduled.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from phalanx.api import scheduling_convert
from phalanx.api.models import CompositePodGroup, Namespace, Node, Pod, PodGroup, PriorityClass
from phalanx.api.models import PodDisruptionBudget as PDB
from phalanx.kube.api import POD_GROUP_LABEL, RESOURCES, Api, ApiError, Resource
from phalanx.kube.binder import Binder
from phalanx.kube.claims import DEVICES, ClaimHolds, assumed, claim_writes, decode_claim, devices, resource_objects
from phalanx.kube.informer import Delta, Reflector, Replace
from phalanx.kube.metrics import Metrics
from phalanx.kube.prebind import ClaimWrite, PreBindResult
from phalanx.kube.versions import CANDIDATES, KINDS
from phalanx.scheduling import outcome as o
from phalanx.scheduling.config import SchedulerConfig, default_profile
from phalanx.scheduling.recorder import Rejection
from phalanx.scheduling.scheduler import Scheduler

__all__ = ["Controller", "Decisions", "new_engine", "obj_key"]

log = logging.getLogger("phalanx.kube")
_TERMINAL = ("Succeeded", "Failed")
_DEFAULT_APIS = [(n, RESOURCES[n]) for n in CANDIDATES]
_G = TypeVar("_G", PodGroup, CompositePodGroup)
_REBUILD = {"priorityclasses", "namespaces", "poddisruptionbudgets"}


def obj_key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}" if md.get("namespace") else str(md.get("name"))


class Decisions(o.OutcomeLog):
    """The engine's recorder in serve: what a run decided, for the controller to write (and, as an OutcomeLog,
    the latest outcome of every pod, as the engine itself used to keep)."""

    def __init__(self) -> None:
        super().__init__()
        self.just_bound: list[str] = []
        self.just_failed: dict[str, tuple[str, str]] = {}
        self.changed_groups: set[str] = set()
        self.on_bind: Callable[[str, str], None] | None = None
        self.on_evict: Callable[[o.Eviction], None] | None = None

    def bound(self, key: str, node: str) -> None:
        """The cycle succeeded for the pod (for a gang: the whole PodGroup cycle): write the binding right away, so
        binding overlaps the scheduling of the pods behind it, as kube-scheduler's binding goroutines do."""
        super().bound(key, node)
        self.just_bound.append(key)
        if self.on_bind is not None:
            self.on_bind(key, node)

    def evicted(self, eviction: o.Eviction) -> None:
        """Preemption chose a victim: the engine counts it gone; the controller deletes it."""
        super().evicted(eviction)
        if self.on_evict is not None:
            self.on_evict(eviction)

    def unschedulable(self, key: str, rejection: Rejection) -> None:
        super().unschedulable(key, rejection)
        self.just_failed[key] = (rejection.reason, rejection.message)

    def condition_changed(self, group: str, condition: o.GroupCondition) -> None:
        super().condition_changed(group, condition)
        if condition.type == o.CONDITION_POD_GROUP_SCHEDULED:
            self.changed_groups.add(group)

    def take(self) -> tuple[list[str], dict[str, tuple[str, str]], set[str]]:
        out = self.just_bound, self.just_failed, self.changed_groups
        self.just_bound, self.just_failed, self.changed_groups = [], {}, set()
        return out


def new_engine(config: SchedulerConfig | None, decisions: Decisions) -> Scheduler:
    """The engine serve runs: the configured profiles (default: one profile named phalanx), deciding into
    ``decisions``."""
    return Scheduler(config or SchedulerConfig([default_profile("phalanx")]), recorder=decisions)


@dataclass
class Controller:
    api: Api
    binder: Binder
    metrics: Metrics
    config: SchedulerConfig | None = None
    names: frozenset[str] = frozenset({"phalanx"})
    resources: tuple[str, ...] = tuple(RESOURCES)
    stop: threading.Event = field(default_factory=threading.Event)
    deltas: queue.Queue[Any] = field(default_factory=queue.Queue)
    cache: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    synced: set[str] = field(default_factory=set)
    engine: Scheduler | None = None
    decisions: Decisions = field(default_factory=Decisions)
    rebuild: bool = False
    written: dict[str, tuple[str, str]] = field(default_factory=dict)  # pod key -> last (reason, message) written
    retry_groups: set[str] = field(default_factory=set)
    reflectors: list[Reflector] = field(default_factory=list)
    first_bind: float | None = None
    inflight: set[str] = field(default_factory=set)  # pods whose binding is submitted or deferred, not yet seen
    victims: dict[str, str] = field(default_factory=dict)  # victim pod key -> node, until its deletion is seen
    deferred: dict[str, list[str]] = field(default_factory=dict)  # node -> preemptors waiting for its victims
    refused_backoff: float = 1.0  # seconds before preemptors whose victim's eviction was refused (429) are retried
    holds: ClaimHolds = field(default_factory=ClaimHolds)
    prebinds: dict[str, list[ClaimWrite]] = field(default_factory=dict)  # pod key -> claim writes not yet submitted
    gangs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # group -> (member, node) to prebind
    devices_changed: bool = False
    # The apiVersion each Workload API collection is watched in (set by start): its objects are decoded, and their
    # conditions written, in that version.
    apis: dict[str, str] = field(default_factory=lambda: {n: f"{r.group}/{r.version}" for n, r in _DEFAULT_APIS})

    def start(self) -> None:
        watched = dict(RESOURCES)
        for name, candidates in CANDIDATES.items():
            if name not in self.resources:
                continue
            served = (Resource(g, v, name) for g, v in candidates)
            watched[name] = next((r for r in served if self.api.served(r)), RESOURCES[name])
            self.apis[name] = f"{watched[name].group}/{watched[name].version}"
            log.info("%s: watching %s", name, self.apis[name])
        for name in self.resources:
            self.cache.setdefault(name, {})
            r = Reflector(self.api, watched[name], self.deltas, self.stop)
            self.reflectors.append(r)
            r.start()

    def ready(self) -> bool:
        return self.synced >= set(self.resources)

    # --- 1. deltas ----------------------------------------------------------------------------------------------

    def drain(self, timeout: float) -> int:
        """Apply every queued delta (waiting up to ``timeout`` for the first). Returns how many."""
        n = 0
        try:
            item = self.deltas.get(timeout=timeout)
            while True:
                self._apply(item)
                n += 1
                item = self.deltas.get_nowait()
        except queue.Empty:
            return n

    def _apply(self, item: Delta | Replace | _Refresh | _RetryGroup | _VictimStays | _ClaimsWritten | _Batch) -> None:
        if isinstance(item, _Batch):
            for sub in item.items:
                self._apply(sub)
            return
        if isinstance(item, Replace):
            self._replace(item)
            return
        if isinstance(item, _RetryGroup):
            self.retry_groups.add(item.key)
            return
        if isinstance(item, _VictimStays):
            self._victim_stays(item.key, item.refused)
            return
        if isinstance(item, _ClaimsWritten):
            self._claims_written(item.pods, item.result)
            return
        if isinstance(item, _Refresh):
            self.inflight.discard(item.key)
            if _rv(item.obj) >= _rv(self.cache["pods"].get(item.key) or {}):
                self.cache["pods"][item.key] = item.obj
                self._engine_event("pods", item.obj, item.key)
            if self.prebinds.pop(item.key, None) is not None:  # a deferred preemptor requeued: writes never made
                self._settle(self.holds.release(item.key))
            return
        cache = self.cache[item.resource]
        key = obj_key(item.obj)
        if item.resource == "resourceclaims" and self.holds.held(key):
            self.holds.park(key, item.type, item.obj)
            return
        if item.type == "DELETED":
            self.inflight.discard(key)
            old = cache.pop(key, None)
            if old is not None:
                self._engine_event(item.resource, None, key)
            if item.resource == "pods" and key in self.victims:
                self._victim_gone(key)
            return
        old = cache.get(key)
        if old is not None and _rv(old) >= _rv(item.obj):
            return  # already applied (a relist or our own optimistic update got here first)
        if item.resource == "pods" and key in self.inflight:
            spec = item.obj.get("spec") or {}
            if not spec.get("nodeName"):
                # Like kube-scheduler's assume cache: until its binding is answered, the pod stays where we put it.
                assumed = ((old or {}).get("spec") or {}).get("nodeName")
                cache[key] = {**item.obj, "spec": {**spec, "nodeName": assumed}}
                return
            self.inflight.discard(key)
        cache[key] = item.obj
        self._engine_event(item.resource, item.obj, key)

    def _replace(self, item: Replace) -> None:
        cache = self.cache[item.resource]
        fresh = {obj_key(o): o for o in item.items}
        for key in [k for k in cache if k not in fresh]:
            self._apply(Delta(item.resource, "DELETED", cache[key]))
        for obj in item.items:
            self._apply(Delta(item.resource, "MODIFIED", obj))
        self.synced.add(item.resource)

    def _engine_event(self, resource: str, obj: dict[str, Any] | None, key: str) -> None:
        eng = self.engine
        if eng is None:
            return
        if resource in _REBUILD:
            self.rebuild = True
        elif resource in DEVICES:
            self.devices_changed = True  # once per round: the device index is rebuilt from every slice
        elif resource == "resourceclaims":
            decoded = decode_claim(obj, self.cache) if obj is not None else None
            if decoded is None:
                ns, _, name = key.partition("/")
                eng.delete_resource_claim(ns, name)
            else:
                eng.add_resource_claim(*decoded)
        elif resource == "nodes":
            # The node's pods leave the engine with it; the API server's pod deletions follow (pod GC).
            if obj is None:
                eng.delete_node(key)
            elif (node := _decode(obj, Node)) is not None:
                eng.update_node(node)
        elif resource == "pods":
            if obj is not None and self._confirms_placement(eng, key, obj):
                return
            pod = self._pod(obj) if obj is not None else None
            if pod is None:
                eng.delete_pod(key)
                self.written.pop(key, None)
            else:
                eng.update_pod(pod)
        elif resource == "podgroups":
            # An update is an add: the engine takes the new minCount (elastic gangs), and a waiting gang is retried.
            if obj is None:
                eng.delete_pod_group(key)
            elif (pg := self._group(obj, "podgroups", PodGroup)) is not None:
                eng.add_pod_group(pg)
        elif resource == "compositepodgroups":
            if obj is None:
                eng.delete_composite_pod_group(key)
            elif (cpg := self._group(obj, "compositepodgroups", CompositePodGroup)) is not None:
                eng.add_composite_pod_group(cpg)

    @staticmethod
    def _confirms_placement(eng: Scheduler, key: str, obj: dict[str, Any]) -> bool:
        """Our own binding coming back through the watch: the engine already has the pod bound on that node."""
        node = (obj.get("spec") or {}).get("nodeName")
        bound = eng.bound_node(key)
        if not node or bound is None or (obj.get("status") or {}).get("phase") in _TERMINAL:
            return False
        return bool(bound == node)

    def _group(self, obj: dict[str, Any], resource: str, model: type[_G]) -> _G | None:
        """A PodGroup or CompositePodGroup of whichever version the server serves, as the internal object (v1.37
        fields kept): nothing below ``phalanx.api`` learns the version. List items carry no apiVersion or kind:
        they are in the watched version."""
        doc = {**obj, "apiVersion": obj.get("apiVersion") or self.apis[resource], "kind": KINDS[resource]}
        try:
            group = scheduling_convert.decode(doc)
        except (msgspec.ValidationError, KeyError) as exc:
            log.warning("%s %s ignored: %s", KINDS[resource], obj_key(obj), exc)
            return None
        return group if isinstance(group, model) else None

    def _pod(self, obj: dict[str, Any]) -> Pod | None:
        """The pod as the engine should see it, or None: terminal pods and other schedulers' pending pods."""
        status = obj.get("status") or {}
        spec = obj.get("spec") or {}
        if status.get("phase") in _TERMINAL:
            return None
        if not spec.get("nodeName") and spec.get("schedulerName", "default-scheduler") not in self.names:
            return None
        label = ((obj.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL)
        if label and not spec.get("schedulingGroup"):
            obj = {**obj, "spec": {**spec, "schedulingGroup": {"podGroupName": label}}}
        pod: Pod | None = _decode(obj, Pod)
        return pod

    # --- 2. build and run ---------------------------------------------------------------------------------------

    def build(self) -> Scheduler:
        """A new engine from the cache: every bound pod accounted, every pending pod of ours queued."""
        self.decisions = Decisions()
        eng = new_engine(self.config, self.decisions)
        nodes = [n for o in self.cache["nodes"].values() if (n := _decode(o, Node)) is not None]
        pcs = [p for o in self.cache.get("priorityclasses", {}).values() if (p := _decode(o, PriorityClass))]
        pgs = [g for o in self.cache.get("podgroups", {}).values() if (g := self._group(o, "podgroups", PodGroup))]
        cpgs = [
            c
            for o in self.cache.get("compositepodgroups", {}).values()
            if (c := self._group(o, "compositepodgroups", CompositePodGroup))
        ]
        pods = [p for o in self.cache["pods"].values() if (p := self._pod(o)) is not None]
        nss = [n for o in self.cache.get("namespaces", {}).values() if (n := _decode(o, Namespace)) is not None]
        pdbs = [d for o in self.cache.get("poddisruptionbudgets", {}).values() if (d := _decode(o, PDB)) is not None]
        dra = resource_objects(self.cache)
        try:
            eng.load(nodes, pods, pgs, pcs, namespaces=nss, pdbs=pdbs, resources=dra, composite_pod_groups=cpgs)
        except Exception as exc:  # one pod the engine refuses must not stop the others
            log.warning("loading pods one by one: %s", exc)
            self.decisions = Decisions()
            eng = new_engine(self.config, self.decisions)
            eng.load(nodes, [], pgs, pcs, namespaces=nss, pdbs=pdbs, resources=dra, composite_pod_groups=cpgs)
            for p in pods:
                try:
                    eng.add_pod(p)
                except Exception as err:
                    log.warning("pod %s/%s ignored: %s", p.metadata.namespace, p.metadata.name, err)
        self.decisions.on_bind = self._bind
        self.decisions.on_evict = self._evict
        self.engine, self.rebuild, self.devices_changed = eng, False, False
        return eng

    def step(self, leading: bool, timeout: float = 0.05) -> int:
        """One round: drain deltas, then (leading and synced) schedule and write. Returns pods bound."""
        self.drain(timeout)
        if not leading or not self.ready():
            return 0
        eng = self.engine if self.engine is not None and not self.rebuild else self.build()
        if self.devices_changed:
            eng.set_devices(*devices(self.cache))
            self.devices_changed = False
        start = time.perf_counter()
        eng.run()
        elapsed = time.perf_counter() - start
        self._prebind_gangs()
        return self._write(eng, elapsed)

    # --- 3 and 4. writes ----------------------------------------------------------------------------------------

    def _write(self, eng: Scheduler, elapsed: float) -> int:
        bound, failed, changed = self.decisions.take()
        groups, self.retry_groups = changed | self.retry_groups, set()
        attempts = len(bound) + len(failed)
        if attempts:
            self.metrics.observe(elapsed / attempts, attempts)
            self.metrics.inc("scheduler_schedule_attempts_total", len(bound), result="scheduled", profile="phalanx")
            self.metrics.inc(
                "scheduler_schedule_attempts_total", len(failed), result="unschedulable", profile="phalanx"
            )
        active, gated = eng.pending()
        self.metrics.set("scheduler_pending_pods", active, queue="active")
        self.metrics.set("scheduler_pending_pods", gated, queue="gated")
        for key, (reason, message) in failed.items():
            self._unschedulable(key, reason, message)
            self._deallocated(eng, key)
        for gk in groups:
            self._condition(eng, gk)
        return len(bound)

    def _bind(self, key: str, node: str) -> None:
        eng = self.engine
        pod = self.cache["pods"].get(key)
        if pod is None or eng is None:
            return
        md = pod["metadata"]
        # Assume it in the cache too (same resourceVersion, so the watch's version replaces it): an engine rebuilt
        # before the watch confirms the bind must not give the pod's room to another pod.
        self.cache["pods"][key] = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}
        self.inflight.add(key)
        if self._assume_claims(eng, key):
            group = eng.group_of(key)
            if group is not None and node not in self.victims.values():
                self.gangs.setdefault(group, []).append((key, node))  # written with the other members, then bound
                return
        if node in self.victims.values():
            # A preemptor: like kube-scheduler, it is nominated and bound only once its victims are gone.
            self.deferred.setdefault(node, []).append(key)
            self.binder.submit(self.binder.nominate, md["namespace"], md["name"], node)
            return
        self._submit_bind(key, pod, node)

    def _assume_claims(self, eng: Scheduler, key: str) -> bool:
        """The claims the pod reserved, as PreBind will write them: held, and assumed in the cache (so an engine
        rebuilt before the writes are answered keeps their allocations). False when the pod has none."""
        claims = self.cache.setdefault("resourceclaims", {})
        writes = claim_writes(eng, key, self.cache, self.holds)
        if not writes:
            return False
        self.holds.hold(key, {f"{w.namespace}/{w.name}": claims.get(f"{w.namespace}/{w.name}") for w in writes})
        for w in writes:
            ck = f"{w.namespace}/{w.name}"
            claims[ck] = assumed(w, claims.get(ck))
        self.prebinds[key] = writes
        return True

    def _prebind_gangs(self) -> None:
        """The claim writes of each gang's members bound in this run, in one call: every member's claims are
        written before any member is bound."""
        for members in self.gangs.values():
            writes = [w for key, _ in members for w in self.prebinds.pop(key, [])]
            pods = {key: node for key, node in members}
            self.binder.submit(self.binder.prebind, writes, done=functools.partial(self._prebound, pods))
        self.gangs.clear()

    def _prebound(self, pods: dict[str, str], result: PreBindResult) -> None:
        """Binder thread: bind the pods whose claims were written; a failed write fails its pod as a failed binding
        does. The claims settle on the controller thread after the failed pods' re-reads (queued first), so the
        engine frees the failed pods' reservations before it sees the claims as the API server has them."""
        failed: list[Delta | _Refresh] = []
        for key, node in pods.items():
            pod = self.cache["pods"].get(key)
            if pod is None:
                continue
            err = result.errors.get(key)
            if err is None:
                self._submit_bind(key, pod, node, prebound=True)
            else:
                failed.append(self._failed_binding(key, pod, err))
        # One delta: the controller must not run the engine on a failed pod's re-read before the claims settle,
        # or it retries the pod against the claim it failed to write (a second 409).
        self.deltas.put(_Batch((*failed, _ClaimsWritten(tuple(pods), result))))

    def _claims_written(self, pods: tuple[str, ...], result: PreBindResult) -> None:
        for key, obj in result.claims.items():
            self.holds.saw(key, obj)
        for pod in pods:
            self._settle(self.holds.release(pod))

    def _settle(self, claims: dict[str, dict[str, Any] | None]) -> None:
        """Claims no write holds any more: the cache and the engine take the newest version the API server gave."""
        cache = self.cache.setdefault("resourceclaims", {})
        for key, obj in claims.items():
            if obj is None:
                cache.pop(key, None)
            else:
                cache[key] = obj
            self._engine_event("resourceclaims", obj, key)

    def _submit_bind(self, key: str, pod: dict[str, Any], node: str, prebound: bool = False) -> None:
        writes = None if prebound else self.prebinds.pop(key, None)
        if writes is not None:  # PreBind first; the binding is submitted once the claims are written
            self.binder.submit(self.binder.prebind, writes, done=lambda r: self._prebound({key: node}, r))
            return
        md = pod["metadata"]
        if self.first_bind is None:
            self.first_bind = time.monotonic()
        args = (md["namespace"], md["name"], md.get("uid", ""), node)
        self.binder.submit(self.binder.bind, *args, done=lambda err: self._bound(key, pod, err))

    def _bound(self, key: str, pod: dict[str, Any], err: ApiError | None) -> None:
        """Binder thread: hand the outcome back to the controller thread as a delta."""
        if err is None:
            return
        self.deltas.put(self._failed_binding(key, pod, err))

    def _failed_binding(self, key: str, pod: dict[str, Any], err: ApiError) -> Delta | _Refresh:
        """Binder thread: a pod whose binding failed for good, as the delta that makes the engine see it as it is
        now (requeued if still pending; gone if deleted)."""
        md = pod["metadata"]
        gname = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        gname = gname or (md.get("labels") or {}).get(POD_GROUP_LABEL)
        if gname:
            regarding = {"apiVersion": self.apis["podgroups"], "kind": "PodGroup", "namespace": md["namespace"]}
            note = f"member {md['name']} could not be bound: {err}"
            self.binder.event(
                md["namespace"], {**regarding, "name": gname}, "Warning", "FailedBinding", "Binding", note
            )
        try:
            fresh = self.api.get_pod(md["namespace"], md["name"])
        except ApiError as exc:
            if exc.code == 404:
                return Delta("pods", "DELETED", pod)
            # cannot tell: treat it as still pending, so it is retried (a 409 answers a second binding)
            return _Refresh(key, {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": ""}})
        # Force the engine to see the pod as it is now, even if the watch already delivered this version.
        return _Refresh(key, fresh)

    def _evict(self, ev: o.Eviction) -> None:
        key = f"{ev.namespace}/{ev.name}"
        pod = self.cache["pods"].get(key)
        if pod is None:
            return
        self.victims[key] = ev.node
        uid = pod["metadata"].get("uid", "")
        preemptor = f"{ev.preemptor_kind.lower()} {ev.preemptor_namespace}/{ev.preemptor_name}"
        message = o.MSG_PREEMPTED.format("phalanx")
        args = (ev.namespace, ev.name, uid, ev.node, preemptor, message)
        self.binder.submit(self.binder.preempt, *args, done=lambda err: self._victim_done(key, err))

    def _victim_done(self, key: str, err: ApiError | None) -> None:
        """Binder thread: a victim that could not be evicted or deleted goes back to the controller thread."""
        if err is not None:
            self.deltas.put(_VictimStays(key, err.refused_by_budget))

    def _victim_gone(self, key: str) -> None:
        node = self.victims.pop(key)
        if node in self.victims.values():
            return
        for waiting in self.deferred.pop(node, []):
            pod = self.cache["pods"].get(waiting)
            if pod is not None:
                self._submit_bind(waiting, pod, node)

    def _victim_stays(self, key: str, refused: bool = False) -> None:
        """A victim could not be evicted: it keeps its node, and the preemptors waiting there are re-read (the
        engine requeues them) rather than bound onto a node that is still full. When a PodDisruptionBudget refused
        the eviction (429), they are re-read only after ``refused_backoff``, so the engine, which by then has the
        budget's new status from the watch, tries the next candidate or retries later instead of at once."""
        node = self.victims.pop(key, None)
        waiting = self.deferred.pop(node, []) if node is not None else []
        for k in [key, *waiting]:
            ns, name = k.split("/", 1)
            if refused and k != key:
                timer = threading.Timer(self.refused_backoff, self.binder.submit, (self._reread, k, ns, name))
                timer.daemon = True
                timer.start()
            else:
                self.binder.submit(self._reread, k, ns, name)

    def _reread(self, key: str, namespace: str, name: str) -> None:
        try:
            self.deltas.put(_Refresh(key, self.api.get_pod(namespace, name)))
        except ApiError as exc:
            log.info("re-reading %s: %s", key, exc)

    def _deallocated(self, eng: Scheduler, key: str) -> None:
        """DynamicResources PostFilter: a claim of the failed pod the engine deallocated (unusable where the pod
        could run, reserved by nobody else) is deallocated in the API server too, so the next attempt may allocate
        it elsewhere."""
        for pc in eng.pod_claims(key):
            ck = pc.status.key
            cached = self.cache.get("resourceclaims", {}).get(ck)
            if pc.status.allocation is not None or cached is None or self.holds.held(ck):
                continue
            if (cached.get("status") or {}).get("allocation") is not None:
                ns, name = ck.split("/", 1)
                self.binder.submit(self.binder.deallocate, ns, name, cached["metadata"].get("resourceVersion", ""))

    def _unschedulable(self, key: str, reason: str, message: str) -> None:
        if self.written.get(key) == (reason, message):
            return
        pod = self.cache["pods"].get(key)
        if pod is None:
            return
        self.written[key] = (reason, message)
        md = pod["metadata"]
        self.binder.submit(self.binder.unschedulable, md["namespace"], md["name"], md.get("uid", ""), reason, message)

    def _condition(self, eng: Scheduler, gk: str) -> None:
        cond = eng.condition(gk)
        pg = self.cache.get("podgroups", {}).get(gk)
        if cond is None or pg is None:
            return
        self.metrics.inc("scheduler_pod_group_schedule_attempts_total", result=cond.reason or cond.status)
        args = (pg, self.apis["podgroups"], cond.status, cond.reason, cond.message)
        self.binder.submit(self.binder.pod_group_condition, *args, done=lambda err: self._condition_done(gk, err))

    def _condition_done(self, gk: str, err: ApiError | None) -> None:
        if err is not None and err.code == 409:
            self.deltas.put(_RetryGroup(gk))


@dataclass(frozen=True, slots=True)
class _Refresh:
    key: str
    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _ClaimsWritten:
    pods: tuple[str, ...]
    result: PreBindResult


@dataclass(frozen=True, slots=True)
class _Batch:
    """Deltas the controller applies together, before the engine runs again."""

    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class _RetryGroup:
    key: str


@dataclass(frozen=True, slots=True)
class _VictimStays:
    key: str
    refused: bool = False  # by a PodDisruptionBudget (429): retry the preemptors later


def _rv(obj: dict[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _decode(obj: dict[str, Any], model: Any) -> Any:
    try:
        return msgspec.convert(obj, model)
    except msgspec.ValidationError as exc:
        log.warning("%s %s ignored: %s", model.__name__, obj_key(obj), exc)
        return None
