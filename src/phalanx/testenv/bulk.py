"""Create many objects in a control plane quickly: a few threads, each with its own keep-alive HTTPS connection,
posting JSON bodies (benchmarks fill the API server with thousands of nodes and pods this way)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from phalanx.testenv.controlplane import ControlPlane, RequestError

__all__ = ["create_many"]


def create_many(
    cp: ControlPlane,
    items: Iterable[tuple[str, dict[str, Any]]],
    workers: int = 8,
    created_hook: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    """POST each ``(path, body)``; returns how many were created. The first error is raised (RequestError).
    ``created_hook`` is called with each body as soon as the API server has answered (benchmarks timestamp pods
    with it), from the worker thread that posted it."""
    source: Iterator[tuple[str, dict[str, Any]]] = iter(items)
    lock = threading.Lock()
    created = [0]
    failures: list[Exception] = []

    def work() -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", cp.port, context=cp._ssl(), timeout=60)
        try:
            while not failures:
                with lock:
                    item = next(source, None)
                if item is None:
                    return
                path, body = item
                conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                if resp.status >= 300:
                    raise RequestError(resp.status, data)
                if created_hook is not None:
                    created_hook(body)
                with lock:
                    created[0] += 1
        except Exception as exc:  # handed to the caller below
            failures.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return created[0]
