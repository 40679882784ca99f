"""List then watch one collection, turning what the API server says into deltas on a queue.

A ``Reflector`` lists, hands the whole list over as one ``Replace`` (the consumer diffs it against its cache, so a
relist neither loses a deletion nor applies an unchanged object twice), then watches from the list's
resourceVersion. BOOKMARKs only advance the version. A dropped connection re-watches from the last version seen;
a 410 Gone (an ERROR event or an HTTP 410) relists.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from phalanx.kube.api import Api, ApiError, Resource

__all__ = ["Delta", "Reflector", "Replace"]

log = logging.getLogger("phalanx.kube")


@dataclass(frozen=True, slots=True)
class Delta:
    resource: str
    type: str  # ADDED, MODIFIED, DELETED
    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Replace:
    resource: str
    items: list[dict[str, Any]]


class _Relist(Exception):
    pass


class Reflector:
    def __init__(self, api: Api, res: Resource, out: queue.Queue[Any], stop: threading.Event, backoff: float = 0.1):
        self.api, self.res, self.out, self.stop, self.backoff = api, res, out, stop, backoff
        self.rv = ""
        self.relists = 0
        self.thread = threading.Thread(target=self._run, name=f"reflector-{res.plural}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                if not self.rv:
                    items, self.rv = self.api.list(self.res)
                    self.relists += 1
                    self.out.put(Replace(self.res.plural, items))
                self._watch()
            except _Relist:
                log.info("watch %s: resourceVersion %s expired, relisting", self.res.plural, self.rv)
                self.rv = ""
            except ApiError as exc:
                if self.stop.is_set():
                    return  # shutting down: the watch was cut on purpose
                if exc.code == 410:
                    self.rv = ""
                elif exc.code == 404 and not self.rv:
                    log.warning("%s is not served (%s); not watching it", self.res.plural, exc)
                    self.out.put(Replace(self.res.plural, []))  # synced, and empty
                    return
                else:
                    log.info("watch %s: %s; resuming from %s", self.res.plural, exc, self.rv or "a new list")
                self.stop.wait(self.backoff)

    def _watch(self) -> None:
        for ev in self.api.watch(self.res, self.rv):
            if self.stop.is_set():
                return
            if ev.type == "ERROR":
                if ev.object.get("code") == 410:
                    raise _Relist()
                raise ApiError(int(ev.object.get("code") or 500), str(ev.object.get("message", "")))
            rv = (ev.object.get("metadata") or {}).get("resourceVersion")
            if ev.type != "BOOKMARK":
                self.out.put(Delta(self.res.plural, ev.type, ev.object))
            if rv:
                self.rv = rv
