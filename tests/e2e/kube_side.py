"""Let the real kube-scheduler schedule a loaded snapshot until nothing changes, and read back what it did.

kube-scheduler is started for each snapshot after the snapshot is in the API server, so every pending pod is in
its queue before the first cycle, as ``phalanx schedule`` has them, and no cache outlives a snapshot. Starting it
costs well under a second; a scheduler kept running across snapshots would see each snapshot's pods one by one as
they are created and its caches would carry the previous snapshot's deletions.

"Nothing changes": the scheduler's active queue is empty and no binding is running (its own metrics), and what it
writes (pods' nodes, nominations and deletions, PodGroup conditions) has not changed for ``quiet`` seconds, or for
long enough that every pod in its backoff queue was retried (the harness configures a one-second pod backoff). There is no kubelet, so a
stand-in finishes every deletion the scheduler asks for (a preemption victim) and records it as evicted.
"""

from __future__ import annotations

import copy
import re
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kube_api import Api
from snapshot_load import Loaded, Release

from phalanx.testenv import ControlPlane, RequestError

__all__ = ["KubeOutcome", "group_preemptions", "kube_config", "run_kube", "scheduled_groups"]

SCHEDULER_ARGS = (
    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
    "--v=2",
    "--feature-gates=WatchListClient=false",
)
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass
class KubeOutcome:
    """What kube-scheduler did to the pods pending at the start (keys are namespace/name)."""

    placed: dict[str, str] = field(default_factory=dict)  # bound -> node
    nominated: dict[str, str] = field(default_factory=dict)  # not bound, with status.nominatedNodeName
    evicted: dict[str, str] = field(default_factory=dict)  # victim -> its DisruptionTarget reason
    conditions: dict[str, tuple[str, str] | None] = field(default_factory=dict)  # PodGroup -> (status, reason)
    messages: dict[str, str] = field(default_factory=dict)  # unscheduled pod -> its PodScheduled message
    settled: bool = True
    seconds: float = 0.0
    log: str = ""
    # PodGroup (namespace/name) -> how many workload-aware preemptions kube-scheduler started for it
    group_preemptions: dict[str, int] = field(default_factory=dict)
    # PodGroups (namespace/name) that some cycle scheduled ("Successfully scheduled a pod group")
    scheduled_groups: set[str] = field(default_factory=set)


def kube_config(
    config: dict[str, Any] | None, scheduler_name: str | None, pod_schedulers: Iterable[str]
) -> dict[str, Any]:
    """The KubeSchedulerConfiguration kube-scheduler runs the snapshot with: the snapshot's own, with every node
    scored, one-second pod backoff (quiescence comes fast), and the profiles phalanx would use. ``phalanx schedule``
    schedules a pod whose schedulerName matches no profile with the first profile, and with ``--scheduler-name``
    only that scheduler's pods; kube-scheduler only knows its profiles, so those cases get a copy of the first."""
    cfg = copy.deepcopy(config) if config else {}
    cfg.pop("apiVersion", None)
    cfg.pop("kind", None)
    cfg["percentageOfNodesToScore"] = 100
    cfg["podInitialBackoffSeconds"] = 1
    cfg["podMaxBackoffSeconds"] = 1
    profiles = cfg.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER}]
    for p in profiles:
        p.setdefault("schedulerName", DEFAULT_SCHEDULER)
    names = {p["schedulerName"] for p in profiles}
    if scheduler_name:
        mine = [p for p in profiles if p["schedulerName"] == scheduler_name]
        profiles = mine or [{**copy.deepcopy(profiles[0]), "schedulerName": scheduler_name}]
    else:
        for name in sorted(set(pod_schedulers) - names):
            profiles.append({**copy.deepcopy(profiles[0]), "schedulerName": name})
    cfg["profiles"] = profiles
    return cfg


class _Kubelet:
    """Every node's kubelet, for what the harness needs: a pod the scheduler deletes (a preemption victim) stops at
    once and is removed with the final zero-grace delete. Pods the snapshot had terminating are left alone."""

    def __init__(self, api: Api, namespaces: list[str], held: set[str]) -> None:
        self.api, self.namespaces, self.held = api, namespaces, held
        self.evicted: dict[str, str] = {}
        self.changes = 0  # pods finished so far: quiescence needs this still too
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True, name="kubelet")
        self.thread.start()

    def _loop(self) -> None:
        try:
            while not self.stop.wait(0.05):
                self.sweep()
        except BaseException as exc:  # surfaced by close()
            self.error = exc

    def sweep(self) -> None:
        """Finish the deletions asked for so far."""
        for ns in self.namespaces:
            for pod in self.api.items(f"/api/v1/namespaces/{ns}/pods"):
                meta = pod["metadata"]
                key = f"{ns}/{meta['name']}"
                if not meta.get("deletionTimestamp") or key in self.held:
                    continue
                conds = {c["type"]: c for c in (pod.get("status") or {}).get("conditions") or []}
                self.evicted[key] = (conds.get("DisruptionTarget") or {}).get("reason", "")
                self.changes += 1
                self.api.delete(f"/api/v1/namespaces/{ns}/pods/{meta['name']}", {"gracePeriodSeconds": 0})

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.api.close()
        if self.error is not None:
            raise self.error


_WAP = re.compile(r'"Start the preemption asynchronously" preemptor="([^"]+)" node="cluster"')


def group_preemptions(log: str) -> dict[str, int]:
    """Workload-aware preemptions in a kube-scheduler log (--v=2): a PodGroup preempts for the "cluster" domain."""
    out: dict[str, int] = {}
    for m in _WAP.finditer(log):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


_GROUP_SCHEDULED = re.compile(r'"Successfully scheduled a pod group"[^\n]*? podGroup="([^"]+)"')


def scheduled_groups(log: str) -> set[str]:
    """PodGroups some cycle scheduled, from a kube-scheduler log (--v=2)."""
    return set(_GROUP_SCHEDULED.findall(log))


def _metrics(port: int) -> dict[str, float]:
    """kube-scheduler's metrics, summed per name (and per queue for pending_pods, per operation for goroutines)."""
    ctx = ssl._create_unverified_context()  # its self-signed serving certificate
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ctx, timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("scheduler_") or " " not in line:
            continue
        name_labels, value = line.rsplit(" ", 1)
        name = name_labels.split("{", 1)[0]
        if name in ("scheduler_pending_pods", "scheduler_goroutines"):
            label = name_labels.split('"')[1] if '"' in name_labels else ""
            name = f"{name}/{label}"
        else:
            continue
        out[name] = out.get(name, 0.0) + float(value)
    return out


def _ready(port: int) -> bool:
    ctx = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=5) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _state(api: Api, namespaces: list[str], release: Release) -> tuple[str, ...]:
    """Every pod's node, nomination and deletion mark and every PodGroup's conditions: what the scheduler writes."""
    out = []
    for ns in namespaces:
        for pod in api.items(f"/api/v1/namespaces/{ns}/pods"):
            meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
            node, nominated = spec.get("nodeName") or "", status.get("nominatedNodeName") or ""
            out.append(f"pod {ns}/{meta['name']} {node} {nominated} {meta.get('deletionTimestamp') or ''}")
        for pg in api.items(f"/apis/{release.api_version('PodGroup')}/namespaces/{ns}/podgroups"):
            conds = (pg.get("status") or {}).get("conditions") or []
            marks = " ".join(f"{c['type']}={c['status']}/{c.get('reason')}" for c in conds)
            out.append(f"podgroup {ns}/{pg['metadata']['name']} {marks}")
    return tuple(sorted(out))


def _quiet_needed(m: dict[str, float], quiet: float) -> float | None:
    """How long the written state must stay unchanged to call the run over (None: the scheduler is busy). A pod in
    backoff is retried within two seconds (one-second backoff, one-second flush); kube-scheduler retries a gang
    short of minCount that way for ever, so backoff alone cannot mean busy."""
    if m.get("scheduler_pending_pods/active") or m.get("scheduler_goroutines/binding"):
        return None
    return quiet + 1.5 if m.get("scheduler_pending_pods/backoff") else quiet


def run_kube(
    cp: ControlPlane,
    api: Api,
    loaded: Loaded,
    config: dict[str, Any],
    quiet: float = 1.2,
    timeout: float = 90.0,
) -> KubeOutcome:
    """Start kube-scheduler on the loaded snapshot, wait until nothing changes, stop it, read back the outcome."""
    log = cp.log_dir() / "kube-scheduler.log"
    offset = log.stat().st_size if log.exists() else 0
    start = time.monotonic()
    kubelet = _Kubelet(Api(cp), loaded.namespaces, loaded.terminating)
    settled = False
    try:
        cp.start_scheduler(config, args=SCHEDULER_ARGS)
        port = cp.scheduler_port
        deadline = start + timeout
        while not _ready(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        settled = _settle(api, loaded, port, kubelet, quiet, deadline)
    finally:
        cp.stop_scheduler()
        kubelet.close()
    kubelet.api = api
    kubelet.sweep()  # a deletion asked for in the last instant
    out = _read_outcome(api, loaded)
    out.evicted = dict(kubelet.evicted)
    out.settled = settled
    out.seconds = time.monotonic() - start
    with log.open(errors="replace") as f:
        f.seek(offset)
        out.log = f.read()
    out.group_preemptions = group_preemptions(out.log)
    out.scheduled_groups = scheduled_groups(out.log)
    return out


def _settle(api: Api, loaded: Loaded, port: int, kubelet: _Kubelet, quiet: float, deadline: float) -> bool:
    last: tuple[Any, ...] | None = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        needed = _quiet_needed(_metrics(port), quiet)
        now = (_state(api, loaded.namespaces, loaded.release), kubelet.changes)
        if needed is None or now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= needed:
            return True
        time.sleep(0.1)
    return False


def _read_outcome(api: Api, loaded: Loaded) -> KubeOutcome:
    out = KubeOutcome()
    pending = set(loaded.pending)
    for ns in loaded.namespaces:
        for pod in api.items(f"/api/v1/namespaces/{ns}/pods"):
            key = f"{ns}/{pod['metadata']['name']}"
            if key not in pending:
                continue
            status = pod.get("status") or {}
            if pod["spec"].get("nodeName"):
                out.placed[key] = pod["spec"]["nodeName"]
                continue
            if status.get("nominatedNodeName"):
                out.nominated[key] = status["nominatedNodeName"]
            conds = {c["type"]: c for c in status.get("conditions") or []}
            if "PodScheduled" in conds:
                out.messages[key] = conds["PodScheduled"].get("message", "")
        try:
            groups = api.items(f"/apis/{loaded.release.api_version('PodGroup')}/namespaces/{ns}/podgroups")
        except RequestError:
            groups = []
        for pg in groups:
            conds = {c["type"]: c for c in (pg.get("status") or {}).get("conditions") or []}
            c = conds.get(loaded.release.condition)
            out.conditions[f"{ns}/{pg['metadata']['name']}"] = (c["status"], c.get("reason", "")) if c else None
    return out
