"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

A candidate takes the Lease when it does not exist, is held by nobody, or its record has not changed for
``lease_duration`` seconds on the candidate's own clock (clocks of different machines are never compared). The
leader renews every ``retry_period``; if it cannot renew within ``renew_deadline`` it stops leading. Writes carry
the resourceVersion read, so two candidates cannot both win (the loser gets 409). ``release`` empties the holder
on graceful shutdown so a standby takes over at once.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from phalanx.kube.api import Api, ApiError

__all__ = ["LeaderElector"]

log = logging.getLogger("phalanx.kube")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: Api,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.leading = threading.Event()
        self.lost = threading.Event()
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._last_renew = 0.0

    def run(self, stop: threading.Event) -> None:
        """Try to acquire, then renew, until ``stop`` is set or leadership is lost."""
        while not stop.is_set():
            ok = self._try()
            now = time.monotonic()
            if ok:
                self._last_renew = now
                if not self.leading.is_set():
                    log.info("%s became leader of %s/%s", self.identity, self.namespace, self.name)
                    self.leading.set()
            elif self.leading.is_set() and now - self._last_renew > self.renew_deadline:
                log.warning("%s lost the lease %s/%s", self.identity, self.namespace, self.name)
                self.leading.clear()
                self.lost.set()
                return
            stop.wait(self.retry_period)

    def _spec(self, transitions: int, acquired: str) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": acquired,
            "renewTime": _now(),
            "leaseTransitions": transitions,
        }

    def _try(self) -> bool:
        try:
            lease = self.api.get_lease(self.namespace, self.name)
            if lease is None:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(0, _now()),
                }
                self.api.create_lease(self.namespace, body)
                return True
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            record = (holder, str(spec.get("renewTime")))
            if record != self._observed:
                self._observed, self._observed_at = record, time.monotonic()
            expired = time.monotonic() - self._observed_at > self.lease_duration
            if holder and holder != self.identity and not expired:
                return False
            transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.identity else 1)
            acquired = spec.get("acquireTime") if holder == self.identity else _now()
            lease["spec"] = self._spec(transitions, str(acquired))
            self.api.replace_lease(self.namespace, self.name, lease)
            return True
        except ApiError as exc:
            log.info("lease %s/%s: %s", self.namespace, self.name, exc)
            return False

    def release(self) -> None:
        """Give the lease up (graceful shutdown): a standby need not wait for it to expire."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        try:
            lease = self.api.get_lease(self.namespace, self.name)
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
                self.api.replace_lease(self.namespace, self.name, lease)
        except ApiError as exc:
            log.info("releasing lease %s/%s: %s", self.namespace, self.name, exc)
