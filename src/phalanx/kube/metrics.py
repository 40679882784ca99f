"""Prometheus text metrics with kube-scheduler's names where they exist, and the /healthz, /readyz, /metrics server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

__all__ = ["BUCKETS", "Metrics", "serve_health"]

BUCKETS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384)


class Metrics:
    """Counters, gauges and one histogram; thread-safe; rendered in the text exposition format."""

    HELP: ClassVar[dict[str, tuple[str, str]]] = {
        "scheduler_schedule_attempts_total": ("counter", "Number of attempts to schedule pods, by result."),
        "scheduler_scheduling_attempt_duration_seconds": ("histogram", "Scheduling attempt latency in seconds."),
        "scheduler_pending_pods": ("gauge", "Number of pending pods, by the queue type."),
        "scheduler_pod_group_schedule_attempts_total": ("counter", "PodGroup scheduling cycles, by result."),
        "scheduler_pod_groups_scheduled": ("gauge", "PodGroups whose PodGroupScheduled condition is True."),
        "phalanx_bindings_total": ("counter", "pods/binding calls, by result."),
        "phalanx_preemption_victims_total": ("counter", "Preemption victims evicted or deleted, by result."),
        "phalanx_api_writes_total": ("counter", "Status patches and events written, by kind and result."),
        "phalanx_leader": ("gauge", "1 while this instance holds the leader lease."),
    }

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self.hist_counts = [0] * len(BUCKETS)
        self.hist_sum = 0.0
        self.hist_n = 0

    def inc(self, name: str, by: float = 1.0, **labels: str) -> None:
        key = (name, tuple(sorted(labels.items())))
        with self.lock:
            self.values[key] = self.values.get(key, 0.0) + by

    def set(self, name: str, value: float, **labels: str) -> None:
        with self.lock:
            self.values[(name, tuple(sorted(labels.items())))] = value

    def observe(self, seconds: float, n: int = 1) -> None:
        """Record ``n`` attempts of ``seconds`` each in the attempt-duration histogram."""
        with self.lock:
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.hist_counts[i] += n
            self.hist_sum += seconds * n
            self.hist_n += n

    def get(self, name: str, **labels: str) -> float:
        with self.lock:
            return self.values.get((name, tuple(sorted(labels.items()))), 0.0)

    def render(self) -> str:
        lines: list[str] = []
        with self.lock:
            for name, (kind, help_text) in self.HELP.items():
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
                if kind == "histogram":
                    for bound, count in zip(BUCKETS, self.hist_counts, strict=True):
                        lines.append(f'{name}_bucket{{le="{bound}"}} {count}')
                    lines += [f'{name}_bucket{{le="+Inf"}} {self.hist_n}', f"{name}_sum {self.hist_sum}"]
                    lines.append(f"{name}_count {self.hist_n}")
                    continue
                for (n, labels), value in sorted(self.values.items()):
                    if n == name:
                        lbl = ",".join(f'{k}="{v}"' for k, v in labels)
                        lines.append(f"{name}{{{lbl}}} {value:g}" if lbl else f"{name} {value:g}")
        return "\n".join(lines) + "\n"


def serve_health(address: str, port: int, metrics: Metrics, ready: Callable[[], bool]) -> ThreadingHTTPServer:
    """Start the health and metrics server in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/healthz":
                code, body, ctype = 200, "ok", "text/plain"
            elif self.path == "/readyz":
                code, body, ctype = (200, "ok", "text/plain") if ready() else (503, "not ready", "text/plain")
            elif self.path == "/metrics":
                code, body, ctype = 200, metrics.render(), "text/plain; version=0.0.4"
            else:
                code, body, ctype = 404, "not found", "text/plain"
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((address, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name="health").start()
    return server
