"""Run ``phalanx serve``: watches, leader election, the scheduling loop, health and metrics, graceful shutdown."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from phalanx.kube.api import RESOURCES, Api, make_api_client
from phalanx.kube.binder import Binder
from phalanx.kube.controller import Controller
from phalanx.kube.leader import LeaderElector
from phalanx.kube.metrics import Metrics, serve_health
from phalanx.kube.versions import CANDIDATES
from phalanx.kube.writer import ProcessBinder, WriterOptions
from phalanx.scheduling.config import SchedulerConfig, default_profile

__all__ = ["ServeOptions", "Server", "serve"]

_WORKLOAD_API = frozenset(CANDIDATES)  # podgroups, workloads, compositepodgroups

log = logging.getLogger("phalanx.kube")


@dataclass
class ServeOptions:
    kubeconfig: str | None = None
    host: str | None = None  # a plain API server URL instead of a kubeconfig (tests, benchmarks)
    config: SchedulerConfig | None = None
    qps: float = 50.0
    burst: int = 100
    leader_elect: bool = True
    lease_namespace: str = "kube-system"
    lease_name: str = "phalanx"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")
    health_address: str = "0.0.0.0"
    health_port: int | None = 10251  # None: no health server
    bind_workers: int = 16
    # "eviction": preemption victims go through the Eviction API (PodDisruptionBudgets enforced by the API
    # server); "deletion": deleted as kube-scheduler does. None: eviction, unless the configuration's rules turn
    # Rules.victims_by_eviction off (--compat v1.36).
    victim_removal: str | None = None
    # Writes are made by a child process with its own interpreter (and GIL); False keeps them on threads here.
    writer_process: bool = True

    def __post_init__(self) -> None:
        if self.victim_removal is None:
            by_eviction = self.config is None or self.config.rules.victims_by_eviction
            self.victim_removal = "eviction" if by_eviction else "deletion"
        if self.victim_removal not in ("eviction", "deletion"):
            raise ValueError(f"victim removal must be eviction or deletion, not {self.victim_removal!r}")


class Server:
    """One ``phalanx serve`` instance; ``run`` blocks until ``stop`` is set or leadership is lost."""

    def __init__(self, opts: ServeOptions, api: Api | None = None) -> None:
        self.opts = opts
        pool = opts.bind_workers + len(RESOURCES) + 4  # binders, one watch per collection, events, the lease
        self.api = api or Api(make_api_client(opts.kubeconfig, opts.host, pool=pool), opts.qps, opts.burst)
        self.metrics = Metrics()
        self.binder = self._binder(opts, api is None)
        config = opts.config or SchedulerConfig([default_profile("phalanx")])
        names = frozenset(p.scheduler_name for p in config.profiles)
        # Without GenericWorkload the engine ignores PodGroups and Workloads, and, like kube-scheduler, serve does not
        # watch them.
        workload = config.feature_gates.enabled("GenericWorkload")
        watched = tuple(r for r in RESOURCES if workload or r not in _WORKLOAD_API)
        self.controller = Controller(self.api, self.binder, self.metrics, config, names, watched)
        self.stop = self.controller.stop
        self.elector = LeaderElector(
            self.api,
            opts.lease_namespace,
            opts.lease_name,
            opts.identity,
            opts.lease_duration,
            opts.renew_deadline,
            opts.retry_period,
        )
        self.health: Any = None
        self.writer_failed = False

    def _binder(self, opts: ServeOptions, own_api: bool) -> Binder:
        eviction = opts.victim_removal == "eviction"
        if not (opts.writer_process and own_api):  # an injected Api cannot be handed to another process
            return Binder(self.api, self.metrics, opts.identity, workers=opts.bind_workers, eviction=eviction)
        args = (opts.kubeconfig, opts.host, opts.qps, opts.burst, opts.identity, opts.bind_workers, eviction)
        return ProcessBinder(self.api, self.metrics, WriterOptions(*args), on_exit=self._writer_died)

    def _writer_died(self) -> None:
        """Scheduling on without writes would leave every decision unwritten: stop, so a standby takes over."""
        self.writer_failed = True
        self.stop.set()

    def run(self) -> None:
        opts = self.opts
        if opts.health_port is not None:
            self.health = serve_health(opts.health_address, opts.health_port, self.metrics, self.ready)
        self.controller.start()
        if opts.leader_elect:
            threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True, name="leader").start()
        try:
            while not self.stop.is_set() and not self.elector.lost.is_set():
                leading = not opts.leader_elect or self.elector.leading.is_set()
                self.metrics.set("phalanx_leader", 1.0 if leading else 0.0)
                # No scheduling before the writer can write: its decisions would wait in a pipe, not bind.
                self.controller.step(leading and self.binder.ready.is_set())
        finally:
            self.shutdown(graceful=not self.elector.lost.is_set())

    def ready(self) -> bool:
        """/readyz: every collection listed, and the writer process able to write."""
        return self.controller.ready() and self.binder.ready.is_set()

    def shutdown(self, graceful: bool = True) -> None:
        """Stop watching; finish (graceful) or abandon in-flight writes; give the lease up if graceful."""
        self.stop.set()
        self.binder.shutdown(wait=graceful)
        if graceful:
            self.elector.release()
        if self.health is not None:
            self.health.shutdown()
            self.health.server_close()
        self.api.abort_watches()
        for r in self.controller.reflectors:
            r.thread.join(timeout=5)
        self.api.close()

    def crash(self) -> None:
        """Stop at once as a killed process would: no draining, no lease release (tests use it)."""
        self.elector.leading.clear()
        self.elector.lost.set()
        self.stop.set()
        self.binder.shutdown(wait=False)
        self.api.abort_watches()
        for r in self.controller.reflectors:
            r.thread.join(timeout=5)
        self.api.close()


def serve(opts: ServeOptions) -> None:
    """The CLI entry point: structured logs, SIGTERM/SIGINT mean graceful shutdown."""
    logging.basicConfig(
        level=os.environ.get("PHALANX_LOG_LEVEL", "INFO"),
        format='{"time":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","msg":"%(message)s"}',
    )
    server = Server(opts)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: server.stop.set())
    server.run()
    if server.writer_failed:
        logging.getLogger("phalanx.kube").error("stopped: the writer process exited")
        raise SystemExit(1)
