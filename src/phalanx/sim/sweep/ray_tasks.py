"""Runs as Ray tasks (``pip install 'phalanx[ray]'``). Ray's own retries are off (``max_retries=0``): the driver
retries a lost run once, as it does for local workers, so every backend reports failures alike. Progress is
counted per finished run. The workers must run the same phalanx as this driver; a task checks it first."""

from __future__ import annotations

import contextlib
import importlib
import socket
import time
from collections.abc import Callable
from typing import Any

import phalanx
from phalanx.api.errors import InputError
from phalanx.sim.sweep.driver import Done, Task, describe, execute

__all__ = ["RaySession", "connect"]

_INSTALL = "--ray needs Ray in this environment: pip install 'phalanx[ray]'"
_REACH_TIMEOUT = 10.0  # seconds to open a TCP connection to the head
_CLIENT_ATTEMPTS = 3  # Ray Client connections aborted by a busy head's proxy: tries before giving up


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise InputError([_INSTALL]) from exc


def connect(address: str) -> Any:
    """Join the cluster at ``address`` (``local`` starts a private one); the ``ray`` module, ready."""
    ray = _ray()
    _check_reachable(address)
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR", "namespace": "phalanx"}
    if address == "local":
        options.update(address=None, include_dashboard=False)
    else:
        options["address"] = address
    for attempt in range(1, _CLIENT_ATTEMPTS + 1):
        try:
            ray.init(**options)
            break
        except (ConnectionError, ValueError, RuntimeError) as exc:
            ray.shutdown()
            # The Ray Client proxy starts a server per client; on a busy head it can miss its start-up deadline
            # and abort the connection ("Initialization failure from server"). That is worth a retry; nothing
            # else is.
            transient = address.startswith("ray://") and isinstance(exc, ConnectionAbortedError)
            if not transient or attempt == _CLIENT_ATTEMPTS:
                raise InputError([f"--ray {address}: cannot join a Ray cluster: {describe(exc)}"]) from exc
            time.sleep(2.0 * attempt)
    return ray


def _check_reachable(address: str) -> None:
    """Fail fast on an address nothing answers at: Ray itself retries such a connection for minutes."""
    if address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise InputError([f"--ray {address}: want auto, local, HOST:PORT or ray://HOST:PORT"])
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_REACH_TIMEOUT).close()
    except OSError as exc:
        raise InputError([f"--ray {address}: nothing answers at {host}:{port} ({exc.strerror or exc})"]) from exc


def _run_remote(version: str, index: int, task: Task[Any]) -> Done:
    """What a Ray task does: refuse a different phalanx (results would differ), then run the attempt."""
    if phalanx.__version__ != version:
        lines = [f"a Ray worker runs phalanx {phalanx.__version__}, this driver {version}: install the same on both"]
        return Done(index, "input", lines)
    return execute(task, index, lambda _units: None)


class RaySession:
    def __init__(self, address: str) -> None:
        self.ray = connect(address)
        self.remote = self.ray.remote(max_retries=0, num_cpus=1)(_run_remote)
        self.running: dict[Any, int] = {}  # object ref -> index

    def submit(self, index: int, task: Task[Any]) -> None:
        self.running[self.remote.remote(phalanx.__version__, index, task)] = index

    def wait(self, progress: Callable[[int, int], None]) -> list[Done]:
        ready, _ = self.ray.wait(list(self.running), num_returns=1)
        ended = []
        for ref in ready:
            index = self.running.pop(ref)
            try:
                ended.append(self.ray.get(ref))
            except self.ray.exceptions.RayError as exc:  # the worker or its node died, or the task could not run
                ended.append(_lost(index, exc))
        return ended

    def close(self) -> None:
        for ref in self.running:  # an error or Ctrl-C left runs going: stop them, best effort
            with contextlib.suppress(Exception):  # a cancel that fails changes nothing for the caller
                self.ray.cancel(ref, force=True)
        self.running.clear()
        self.ray.shutdown()


def _lost(index: int, exc: BaseException) -> Done:
    text = str(exc)
    if "No module named 'phalanx'" in text:
        return Done(
            index, "input", ["the Ray workers cannot import phalanx: install it on the cluster (docs/simulate.md)"]
        )
    return Done(index, "failed", f"Ray: {describe(exc)}")
