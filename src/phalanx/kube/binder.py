"""The writes kube-scheduler makes after a cycle, done on a pool of threads.

- ``bind``: ``pods/binding`` with the pod's uid as precondition; 429, 5xx and connection errors are retried with
  exponential backoff; a 409 (already bound, or a different pod now has the name) or 404 is an answer, not a retry.
  Success writes a ``Scheduled`` event (the API server sets ``PodScheduled=True`` itself).
- ``prebind``: DynamicResources PreBind's ResourceClaim writes (:mod:`phalanx.kube.prebind`), made before the
  binding of the pods they are for; ``deallocate``: its PostFilter's, a claim's allocation cleared (resourceVersion
  precondition; a 409 is left to the watch, which brings the claim as it is now).
- ``unschedulable``: the pod's ``PodScheduled=False`` condition (strategic merge) and a ``FailedScheduling`` event.
- ``pod_group_condition``: a JSON merge patch of the PodGroup's ``/status`` with the resourceVersion read as
  precondition (409 means the cache was stale; the caller retries once the watch caught up).
- ``preempt``: a victim's ``DisruptionTarget`` condition, then a policy/v1 Eviction (``pods/eviction``, the default)
  or a deletion (``eviction=False``, what kube-scheduler does), both with the victim's uid as precondition. A 429
  whose cause is ``DisruptionBudget`` means a PodDisruptionBudget forbids the eviction: an answer, not retried here
  (the controller requeues the preemptor later); the victim's condition is set back to False.
Events are best effort, as kube-scheduler's broadcaster is: they go through their own small pool and a bounded
backlog, so they never hold a binding up; an event that fails, or finds the backlog full, is counted and dropped.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from phalanx.api.scheduling_convert import condition_type
from phalanx.kube.api import Api, ApiError
from phalanx.kube.metrics import Metrics
from phalanx.kube.prebind import ClaimWrite, PreBindResult, prebind

__all__ = ["Binder", "now_rfc3339"]

log = logging.getLogger("phalanx.kube")


def now_rfc3339(micro: bool = False) -> str:
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.now(UTC).strftime(fmt)


class Binder:
    def __init__(
        self,
        api: Api,
        metrics: Metrics,
        identity: str,
        workers: int = 16,
        retries: int = 5,
        event_backlog: int = 1000,
        eviction: bool = True,
    ):
        self.api, self.metrics, self.identity, self.retries = api, metrics, identity, retries
        self.eviction = eviction
        self.ready = threading.Event()  # writes can be made (a writer process sets it once it has started)
        self.ready.set()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="binder")
        self.events = ThreadPoolExecutor(max_workers=2, thread_name_prefix="events")
        self.event_slots = threading.BoundedSemaphore(event_backlog)
        self.backoff = 0.05

    def submit(self, fn: Callable[..., Any], *args: Any, done: Callable[[Any], None] | None = None) -> None:
        """Run ``fn(*args)`` on the pool, then ``done(result)`` on the pool thread. After shutdown (a crash or a
        lost lease), nothing more is written."""
        try:
            fut = self.pool.submit(fn, *args)
        except RuntimeError:
            return
        if done is not None:
            fut.add_done_callback(lambda f: f.cancelled() or done(f.result()))

    def shutdown(self, wait: bool = True) -> None:
        self.pool.shutdown(wait=wait, cancel_futures=not wait)
        self.events.shutdown(wait=wait, cancel_futures=not wait)

    def _retrying(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)``, retried with exponential backoff while the error is retryable."""
        for attempt in range(self.retries + 1):
            try:
                fn(*args)
                return
            except ApiError as exc:
                if not exc.retryable or attempt == self.retries:
                    raise
                time.sleep(min(self.backoff * 2**attempt, 2.0))

    def bind(self, namespace: str, name: str, uid: str, node: str) -> ApiError | None:
        """Bind; returns None on success, or the error that made binding impossible."""
        try:
            self._retrying(self.api.bind, namespace, name, uid, node)
        except ApiError as exc:
            self.metrics.inc("phalanx_bindings_total", result="error")
            log.warning("binding %s/%s to %s failed: %s", namespace, name, node, exc)
            return exc
        self.metrics.inc("phalanx_bindings_total", result="bound")
        regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name, "uid": uid}
        self.event(
            namespace,
            regarding,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {namespace}/{name} to {node}",
        )
        return None

    def prebind(self, writes: list[ClaimWrite]) -> PreBindResult:
        """The claim writes of one pod, or of a gang's members together; the result says which pods failed."""
        result = prebind(self.api, writes, self._retried)
        for key in {w.pod for w in writes}:
            ok = key not in result.errors
            self.metrics.inc("phalanx_api_writes_total", kind="resource_claim", result="ok" if ok else "error")
        return result

    def deallocate(self, namespace: str, name: str, resource_version: str) -> None:
        patch = {
            "metadata": {"resourceVersion": resource_version},
            "status": {"allocation": None, "reservedFor": None, "devices": None},
        }
        try:
            self._retrying(self.api.patch_resource_claim, namespace, name, patch, True)
            self.metrics.inc("phalanx_api_writes_total", kind="resource_claim_deallocation", result="ok")
        except ApiError as exc:
            self.metrics.inc("phalanx_api_writes_total", kind="resource_claim_deallocation", result="error")
            log.info("deallocating resourceclaim %s/%s: %s", namespace, name, exc)

    def _retried(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``'s result, retried as ``_retrying`` does."""
        out: list[Any] = []
        self._retrying(lambda *a: out.append(fn(*a)), *args)
        return out[0]

    def preempt(self, namespace: str, name: str, uid: str, node: str, preemptor: str, message: str) -> ApiError | None:
        """A victim: ``DisruptionTarget`` (PreemptionByScheduler), then evict (or delete) it with a uid
        precondition and write a ``Preempted`` event. A 404 means it is gone already. Returns the error that stopped
        it, if any (a 429: a PodDisruptionBudget forbids the eviction)."""
        cond = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": message,
            "lastTransitionTime": now_rfc3339(),
        }
        remove, result = (self.api.evict_pod, "evicted") if self.eviction else (self.api.delete_pod, "deleted")
        try:
            self._retrying(self.api.patch_pod_status, namespace, name, {"status": {"conditions": [cond]}})
            self._retrying(remove, namespace, name, uid)
        except ApiError as exc:
            if exc.code != 404:
                refused = exc.refused_by_budget
                self.metrics.inc("phalanx_preemption_victims_total", result="refused" if refused else "error")
                log.warning("preempting %s/%s failed: %s", namespace, name, exc)
                if refused:
                    self._not_disrupted(namespace, name, cond, exc)
                return exc
        self.metrics.inc("phalanx_preemption_victims_total", result=result)
        regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name, "uid": uid}
        self.event(
            namespace, regarding, "Normal", "Preempted", "Preempting", f"Preempted by {preemptor} on node {node}"
        )
        return None

    def _not_disrupted(self, namespace: str, name: str, cond: dict[str, Any], exc: ApiError) -> None:
        """The eviction was refused: the victim keeps running, so its DisruptionTarget condition must not say True."""
        cond = {
            **cond,
            "status": "False",
            "message": f"eviction refused: {exc.message}",
            "lastTransitionTime": now_rfc3339(),
        }
        try:
            self._retrying(self.api.patch_pod_status, namespace, name, {"status": {"conditions": [cond]}})
        except ApiError as err:
            log.info("resetting DisruptionTarget of %s/%s: %s", namespace, name, err)

    def nominate(self, namespace: str, name: str, node: str) -> None:
        """``status.nominatedNodeName`` of a preemptor waiting for its victims to go."""
        try:
            self._retrying(self.api.patch_pod_status, namespace, name, {"status": {"nominatedNodeName": node}})
        except ApiError as exc:
            log.info("nominating %s/%s: %s", namespace, name, exc)

    def unschedulable(self, namespace: str, name: str, uid: str, reason: str, message: str) -> None:
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339(),
        }
        try:
            self._retrying(self.api.patch_pod_status, namespace, name, {"status": {"conditions": [cond]}})
            self.metrics.inc("phalanx_api_writes_total", kind="pod_status", result="ok")
        except ApiError as exc:
            self.metrics.inc("phalanx_api_writes_total", kind="pod_status", result="error")
            log.info("pod status %s/%s: %s", namespace, name, exc)
        regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name, "uid": uid}
        self.event(namespace, regarding, "Warning", "FailedScheduling", "Scheduling", message)

    def pod_group_condition(
        self, pg: dict[str, Any], api_version: str, status: str, reason: str, message: str
    ) -> ApiError | None:
        """Patch the group's scheduled condition, named as ``api_version`` (the version the group is watched in)
        names it (``PodGroupScheduled``, v1.37's ``PodGroupInitiallyScheduled``), with meta.SetStatusCondition
        semantics; never regress True."""
        md = pg["metadata"]
        kind = str(pg.get("kind") or "PodGroup")
        conds = list((pg.get("status") or {}).get("conditions") or [])
        ctype = condition_type(api_version, kind)
        old = next((c for c in conds if c.get("type") == ctype), None)
        if old is not None and old.get("status") == "True" and status != "True":
            return None
        new = {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": int(md.get("generation") or 0),
            "lastTransitionTime": now_rfc3339(),
        }
        if old is not None and old.get("status") == status:
            new["lastTransitionTime"] = old.get("lastTransitionTime") or new["lastTransitionTime"]
        if old == new:
            return None
        conds = [c for c in conds if c.get("type") != ctype] + [new]
        patch = {"metadata": {"resourceVersion": md.get("resourceVersion")}, "status": {"conditions": conds}}
        try:
            plural = "compositepodgroups" if kind == "CompositePodGroup" else "podgroups"
            args = (md["namespace"], md["name"], patch, api_version, plural)
            self._retrying(self.api.patch_pod_group_status, *args)
            self.metrics.inc("phalanx_api_writes_total", kind="pod_group_status", result="ok")
            return None
        except ApiError as exc:
            self.metrics.inc("phalanx_api_writes_total", kind="pod_group_status", result="error")
            return exc

    def event(self, namespace: str, regarding: dict[str, Any], etype: str, reason: str, action: str, note: str) -> None:
        """Queue an events.k8s.io/v1 Event; dropped (and counted) when the backlog is full or shut down."""
        if not self.event_slots.acquire(blocking=False):
            self.metrics.inc("phalanx_api_writes_total", kind="event", result="dropped")
            return
        try:
            self.events.submit(self._event, namespace, regarding, etype, reason, action, note)
        except RuntimeError:  # shut down
            self.event_slots.release()

    def _event(
        self, namespace: str, regarding: dict[str, Any], etype: str, reason: str, action: str, note: str
    ) -> None:
        self.event_slots.release()
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{regarding['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "eventTime": now_rfc3339(micro=True),
            "reportingController": "phalanx",
            "reportingInstance": self.identity,
            "action": action,
            "reason": reason,
            "regarding": regarding,
            "note": note[:1024],
            "type": etype,
        }
        try:
            self.api.create_event(namespace, body)
            self.metrics.inc("phalanx_api_writes_total", kind="event", result="ok")
        except ApiError:
            self.metrics.inc("phalanx_api_writes_total", kind="event", result="error")
