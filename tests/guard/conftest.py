"""Fixtures for the guard's tests: the fake internet on loopback, and a helper that runs `phalanx guard` as a
real subprocess (as root) with every guarded command confined to a mount namespace whose /etc/resolv.conf points
at a loopback address, so that even a broken guard cannot send a DNS packet off the machine."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakenet import FakeDns, FakeHttp

from phalanx.guard.errors import NotSupportedError

PHALANX = [sys.executable, "-m", "phalanx"]
RUN_TIMEOUT_S = 60
OTHER_DNS = "127.0.0.153"  # "another DNS server": a loopback address with nothing listening

ALLOWED_IP = "127.0.0.10"
DENIED_IP = "127.0.0.20"
WILD_IP = "127.0.0.30"
HARDCODED_IP = "127.0.0.11"  # serves HTTP, no name points to it


def require_guard_support() -> None:
    """Skip only on a recognised 'not supported' answer (not root, no cgroup v2); anything else must fail."""
    from phalanx.guard import runner

    try:
        runner.preflight()
    except NotSupportedError as exc:
        pytest.skip(f"the guard is not supported here: {exc}")


@dataclass
class Net:
    dns: FakeDns
    http: dict[str, FakeHttp]
    port: int
    tmp: Path
    resolv: Path

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, object]]


def _http_servers(hosts: list[str]) -> dict[str, FakeHttp]:
    """One HTTP server per address, all on one port (so a URL differs only by host); retried if a port is taken."""
    for _ in range(20):
        servers: dict[str, FakeHttp] = {}
        try:
            for ip in hosts:
                port = servers[hosts[0]].port if servers else 0
                servers[ip] = FakeHttp(ip, port).start()
            return servers
        except OSError:
            for srv in servers.values():
                srv.stop()
    raise RuntimeError("no port free on every test address")


@pytest.fixture(scope="session")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Net]:
    tmp = tmp_path_factory.mktemp("fakenet")
    servers = _http_servers([ALLOWED_IP, DENIED_IP, WILD_IP, HARDCODED_IP, "::1"])
    first = servers[ALLOWED_IP]
    zone = {
        "allowed.test": [ALLOWED_IP],
        "denied.test": [DENIED_IP],
        "api.wild.test": [WILD_IP],
        "v6.test": ["::1"],
        "dual.test": [ALLOWED_IP, "::1"],
    }
    dns = FakeDns(zone).start()
    resolv = tmp / "resolv.conf"
    resolv.write_text(f"nameserver {OTHER_DNS}\noptions timeout:2 attempts:1\n")
    yield Net(dns, servers, first.port, tmp, resolv)
    dns.stop()
    for s in servers.values():
        s.stop()


def confined(resolv: Path, cmd: list[str], hosts: Path | None = None) -> list[str]:
    """`cmd` (a whole guard invocation) in a private mount namespace with the test's resolv.conf (and hosts file)
    bound in: the guarded command inherits it, and needs no capability of its own to set it up."""
    mounts = f"mount --bind {shlex.quote(str(resolv))} /etc/resolv.conf"
    if hosts is not None:
        mounts += f" && mount --bind {shlex.quote(str(hosts))} /etc/hosts"
    return ["unshare", "--mount", "sh", "-c", f'{mounts} && exec "$@"', "sh", *cmd]


def guarded(net: Net, script: str, *opts: str, events: Path | None = None, hosts: Path | None = None) -> list[str]:
    """`phalanx guard OPTS -- sh -c SCRIPT`, confined to the test's resolv.conf."""
    return confined(net.resolv, [*guard_args(net, *opts, events=events), "--", "sh", "-c", script], hosts)


def guard_args(net: Net, *opts: str, events: Path | None = None) -> list[str]:
    args = [*PHALANX, "guard", "--upstream", net.dns.upstream, *opts]
    if events is not None:
        args += ["--events", str(events)]
    return args


def read_events(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def guard(net: Net, tmp_path: Path) -> object:
    require_guard_support()

    def run(script: str, *opts: str, hosts: Path | None = None, env: dict[str, str] | None = None) -> Result:
        events = tmp_path / f"events-{len(list(tmp_path.glob('events-*')))}.jsonl"
        cmd = guarded(net, script, *opts, events=events, hosts=hosts)
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env={**os.environ, **(env or {})}
        )
        return Result(proc.returncode, proc.stdout, proc.stderr, read_events(events))

    return run


def denied(events: list[dict[str, object]], kind: str | None = None) -> list[dict[str, object]]:
    return [e for e in events if e["verdict"] == "deny" and (kind is None or e["kind"] == kind)]
