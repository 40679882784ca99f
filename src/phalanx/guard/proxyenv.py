"""Forward proxies in the command's environment (`https_proxy` and friends). A guard that judges sockets sees a
connection to the proxy, never the names fetched through it: with https_proxy set, `curl https://github.com`
reaches the code host through a proxy outside the cgroup and the name never appears. So the guard says so, records
each proxy as an event, and `--http-proxy-policy` decides: `warn` (keep it), `deny` (remove the variables from the
command's environment and deny the proxies' addresses, so clients go direct, where the guard sees every name), or
`allow` (keep it, no warning: the proxy enforces its own policy)."""

from __future__ import annotations

import ipaddress
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from phalanx.guard.events import Event, Verdict, rfc3339

__all__ = ["PROXY_VARS", "ProxyPolicy", "ProxySetting", "environment", "events", "find"]

ProxyPolicy = Literal["warn", "deny", "allow"]
PROXY_VARS = (
    "http_proxy",
    "https_proxy",
    "ftp_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "FTP_PROXY",
    "ALL_PROXY",
)


@dataclass(frozen=True)
class ProxySetting:
    var: str
    value: str
    host: str  # '' if the value names no host
    port: int | None


def _parse(var: str, value: str) -> ProxySetting:
    url = urllib.parse.urlsplit(value if "://" in value else f"http://{value}")
    try:
        port = url.port
    except ValueError:
        port = None
    return ProxySetting(var, value, url.hostname or "", port)


def find(env: Mapping[str, str]) -> list[ProxySetting]:
    """The proxy variables set (non-empty) in `env`."""
    return [_parse(v, env[v]) for v in PROXY_VARS if env.get(v, "").strip()]


def environment(env: Mapping[str, str], policy: ProxyPolicy) -> dict[str, str]:
    """The command's environment: without the proxy variables under `deny`."""
    out = dict(env)
    if policy == "deny":
        for v in PROXY_VARS:
            out.pop(v, None)
    return out


def deny_entries(settings: list[ProxySetting]) -> list[str]:
    """Policy entries that deny the proxies themselves (addresses, or names the guard resolves at start)."""
    out = []
    for s in settings:
        if not s.host:
            continue
        try:
            out.append(str(ipaddress.ip_network(s.host)))
        except ValueError:
            out.append(s.host.lower())
    return list(dict.fromkeys(out))


def events(settings: list[ProxySetting], policy: ProxyPolicy) -> list[Event]:
    verdict: Verdict = {"warn": "audit", "deny": "deny", "allow": "allow"}[policy]  # type: ignore[assignment]
    rule = {
        "warn": "http proxy: requests through it are judged by the proxy's address, not by the names they fetch",
        "deny": "http proxy: removed from the environment and its address denied (--http-proxy-policy deny)",
        "allow": "http proxy: allowed (--http-proxy-policy allow); the proxy's own policy applies",
    }[policy]
    return [
        Event(
            time=rfc3339(time.time()),
            verdict=verdict,
            rule=rule,
            kind="proxy",
            name=s.host or None,
            addresses=(),
            port=s.port,
            protocol="",
            pid=None,
            cmdline=(f"{s.var}={s.value}",),
        )
        for s in settings
    ]
