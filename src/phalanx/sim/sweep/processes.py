"""N local worker processes, each running one attempt at a time. The parent knows which attempt every worker
holds, so a worker that dies (killed, out of memory, a crash in native code) fails exactly that attempt; a fresh
worker takes its place. Workers are spawned, not forked: the parent may have threads (the progress bar), and a
spawned worker starts from a clean interpreter on every platform."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import ForkingPickler
from typing import Any

from phalanx.sim.sweep.driver import Done, Task, describe, execute

__all__ = ["ProcessSession"]

_PROGRESS_EVERY = 0.2  # seconds between a worker's progress messages: the bar stays live, the pipe quiet
_STOP_GRACE = 5.0  # seconds a worker gets to exit after being told to


class _Worker:
    def __init__(self, ctx: Any) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.process: BaseProcess = ctx.Process(target=_serve, args=(child,), daemon=True, name="phalanx-sweep")
        self.process.start()
        child.close()
        self.index: int | None = None  # the attempt it holds


class ProcessSession:
    def __init__(self, workers: int) -> None:
        self.ctx = mp.get_context("spawn")
        self.size = workers
        self.workers: list[_Worker] = []
        self.queue: deque[tuple[int, Task[Any]]] = deque()
        self.ended: list[Done] = []  # attempts that ended, not yet reported

    def submit(self, index: int, task: Task[Any]) -> None:
        self.queue.append((index, task))
        self._dispatch()

    def _dispatch(self) -> None:
        while self.queue:
            idle = next((w for w in self.workers if w.index is None), None)
            if idle is None and len(self.workers) < self.size:
                idle = _Worker(self.ctx)
                self.workers.append(idle)
            if idle is None:
                return
            index, task = self.queue.popleft()
            data = ForkingPickler.dumps((index, task))  # a task that cannot be pickled is a bug: raise here
            try:
                idle.conn.send_bytes(data)
            except OSError:  # the worker died before it took the run: that attempt failed (and may be retried)
                self._replace(idle)
                self.ended.append(Done(index, "failed", "the worker process died before it took the run"))
                continue
            idle.index = index

    def wait(self, progress: Callable[[int, int], None]) -> list[Done]:
        while not self.ended:
            busy = [w for w in self.workers if w.index is not None]
            if not busy:
                raise RuntimeError("sweep: waiting with no attempt running")
            wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for w in busy:
                end = self._drain(w, progress)
                if end is not None:
                    self.ended.append(end)
            self._dispatch()
        ended, self.ended = self.ended, []
        return ended

    def _drain(self, w: _Worker, progress: Callable[[int, int], None]) -> Done | None:
        """Read what the worker sent; an ended attempt, or its death, frees the worker."""
        index = w.index
        assert index is not None
        try:
            while w.conn.poll():
                message = w.conn.recv()
                if message[0] == "progress":
                    progress(index, message[1])
                    continue
                w.index = None
                end: Done = message[1]
                return end
        except (EOFError, OSError):
            pass
        if w.process.is_alive():
            return None
        w.process.join()
        code = w.process.exitcode
        self._replace(w)
        return Done(index, "failed", f"the worker process {_exit_text(code)} while running it")

    def _replace(self, w: _Worker) -> None:
        w.conn.close()
        if w.process.is_alive():
            w.process.kill()
        w.process.join()
        self.workers.remove(w)

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(OSError):
                w.conn.send(None)
        deadline = time.monotonic() + _STOP_GRACE
        for w in self.workers:
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():  # busy with an attempt nobody waits for any more (an error or Ctrl-C)
                w.process.kill()
                w.process.join()
            w.conn.close()
        self.workers.clear()
        self.queue.clear()


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _serve(conn: Connection) -> None:
    """A worker's loop: take an attempt, run it, send progress and how it ended, until told to stop."""
    try:
        while (message := conn.recv()) is not None:
            index, task = message
            conn.send_bytes(_attempt(conn, index, task))
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        pass  # the parent stopped or went away: it reports; a worker has nothing to add


def _attempt(conn: Connection, index: int, task: Task[Any]) -> memoryview:
    """Run the attempt; the pickled message saying how it ended."""
    pending, last = 0, time.monotonic()

    def progress(units: int) -> None:
        nonlocal pending, last
        pending += units
        if time.monotonic() - last >= _PROGRESS_EVERY:
            conn.send(("progress", pending))
            pending, last = 0, time.monotonic()

    end = execute(task, index, progress)
    if pending:
        conn.send(("progress", pending))
    try:
        return ForkingPickler.dumps(("done", end))
    except Exception as exc:  # a result that cannot be pickled is this run's failure, not the worker's
        return ForkingPickler.dumps(("done", Done(index, "failed", "result cannot be sent back: " + describe(exc))))
