"""The binder in a process of its own, so API writes do not compete with the engine for one interpreter's GIL.

The child runs an ordinary :class:`Binder` over its own official client. The parent sends it calls (``prebind``,
``deallocate``, ``bind``, ``preempt``, ``nominate``, ``unschedulable``, ``pod_group_condition``, ``event``) through
a pipe; the child answers each call with its result, and sends its binder metrics about every 20 ms. A ``done``
callback runs on the receiving thread when the call succeeded (it only queues a delta), and on the local pool when
it failed (the controller then re-reads the pod over HTTP). Anything else submitted (a re-read) runs on the local pool.
``shutdown(wait=False)`` (a crash, a lost lease) kills the child at once, so nothing more is written. A child that
dies on its own is an error: ``on_exit`` is called (``phalanx serve`` then stops and gives its Lease up).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing as mp
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from phalanx.kube.api import Api, make_api_client
from phalanx.kube.binder import Binder
from phalanx.kube.metrics import Metrics

__all__ = ["ProcessBinder", "WriterOptions"]

log = logging.getLogger("phalanx.kube")
_REMOTE = frozenset({"bind", "prebind", "deallocate", "preempt", "nominate", "unschedulable", "pod_group_condition"})
_METRICS_PERIOD = 0.02


@dataclass(frozen=True)
class WriterOptions:
    """What the child needs to build its own client and binder (sent to it when it starts)."""

    kubeconfig: str | None
    host: str | None
    qps: float
    burst: int
    identity: str
    workers: int
    eviction: bool = True


class ProcessBinder(Binder):
    """A :class:`Binder` whose writes are made by a child process; the local pool runs re-reads and callbacks."""

    def __init__(
        self, api: Api, metrics: Metrics, opts: WriterOptions, on_exit: Callable[[], None] | None = None
    ) -> None:
        super().__init__(api, metrics, opts.identity, workers=4, eviction=opts.eviction)
        self.on_exit = on_exit
        self.stopping = False
        self.ready.clear()  # until the child has imported the client and built its binder (about a second)
        ctx = mp.get_context("spawn")  # fork is unsafe in a process that already runs threads
        calls_in, self.calls = ctx.Pipe(duplex=False)
        self.answers, answers_out = ctx.Pipe(duplex=False)
        self.child = ctx.Process(target=_child, args=(opts, calls_in, answers_out), name="phalanx-writer", daemon=True)
        self.child.start()
        calls_in.close()
        answers_out.close()
        self.send_lock = threading.Lock()
        self.pending: dict[int, Callable[[Any], None] | None] = {}
        self.next_id = 0
        self.closed = False
        self.receiver = threading.Thread(target=self._receive, name="writer-answers", daemon=True)
        self.receiver.start()

    def _send(self, msg: tuple[Any, ...]) -> bool:
        with self.send_lock:
            if self.closed:
                return False
            try:
                self.calls.send(msg)
            except (OSError, ValueError):  # the child is gone
                self.closed = True
                return False
        return True

    def submit(self, fn: Callable[..., Any], *args: Any, done: Callable[[Any], None] | None = None) -> None:
        name = getattr(fn, "__name__", "")
        if getattr(fn, "__self__", None) is not self or name not in _REMOTE:
            super().submit(fn, *args, done=done)
            return
        with self.send_lock:
            self.next_id += 1
            call_id = self.next_id
            self.pending[call_id] = done
        if not self._send((call_id, name, args)):
            self.pending.pop(call_id, None)

    def event(self, namespace: str, regarding: dict[str, Any], etype: str, reason: str, action: str, note: str) -> None:
        self._send((0, "event", (namespace, regarding, etype, reason, action, note)))

    def _receive(self) -> None:
        while True:
            try:
                call_id, result = self.answers.recv()
            except (EOFError, OSError):
                if not self.stopping:
                    log.error("the writer process exited (code %s); stopping", self.child.exitcode)
                    if self.on_exit is not None:
                        self.on_exit()
                return
            if call_id == 0:
                self.ready.set()
                for (name, labels), value in result:
                    self.metrics.set(name, value, **dict(labels))
                continue
            with self.send_lock:
                done = self.pending.pop(call_id, None)
            if done is None:
                continue
            if result is not None:
                super().submit(done, result)
                continue
            try:
                done(result)
            except Exception:  # a callback's bug must not stop every later answer
                log.exception("writer answer %d", call_id)

    def shutdown(self, wait: bool = True) -> None:
        """Graceful: the child finishes every write it was sent, then exits. Otherwise it is killed."""
        self.stopping = True
        if wait:
            self._send((0, "shutdown", ()))
            self.child.join(60)
        with self.send_lock:
            self.closed = True
        if self.child.is_alive():
            self.child.kill()
            self.child.join(5)
        self.receiver.join(5)
        super().shutdown(wait=wait)


def _child(opts: WriterOptions, calls: Connection, answers: Connection) -> None:
    """The writer process: run every call on a binder, answer it, and send the binder's metrics."""
    # Ctrl-C and a SIGTERM sent to the whole process group are the parent's to handle: it drains this process
    # (graceful) or kills it. The child stops by itself when the parent's end of the pipe closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    api = Api(make_api_client(opts.kubeconfig, opts.host, pool=opts.workers + 4), opts.qps, opts.burst)
    metrics = Metrics()
    binder = Binder(api, metrics, opts.identity, workers=opts.workers, eviction=opts.eviction)
    lock = threading.Lock()
    stop = threading.Event()

    def answer(call_id: int, result: Any) -> None:
        with lock:
            answers.send((call_id, result))

    answer(0, [])  # ready

    def report() -> None:
        last: dict[Any, float] = {}
        while not stop.wait(_METRICS_PERIOD):
            last = _send_metrics(metrics, last, answer)

    reporter = threading.Thread(target=report, name="writer-metrics", daemon=True)
    reporter.start()
    while True:
        try:
            call_id, name, args = calls.recv()
        except (EOFError, OSError):  # the parent is gone: stop writing
            break
        if name == "shutdown":
            break
        if name == "event":
            binder.event(*args)
            continue
        binder.submit(getattr(binder, name), *args, done=functools.partial(answer, call_id))
    binder.shutdown(wait=True)
    stop.set()
    reporter.join()
    _send_metrics(metrics, {}, answer)
    api.close()


def _send_metrics(metrics: Metrics, last: dict[Any, float], answer: Callable[[int, Any], None]) -> dict[Any, float]:
    with metrics.lock:
        now = dict(metrics.values)
    changed = [(k, v) for k, v in now.items() if last.get(k) != v]
    if changed:
        with contextlib.suppress(OSError, ValueError):  # the parent is gone
            answer(0, changed)
    return now
