"""Fixtures for the guard's tests: the fake internet on loopback, and a helper that runs `phalanx guard` as a
real subprocess (as root) with every guarded command confined to a mount namespace whose /etc/resolv.conf points
at a loopback address, so that even a broken guard cannot send a DNS packet off the machine."""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fakenet import FakeDns, FakeHttp, FakeUdpSink

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


# ---- the guarded host and the fake internet as two network namespaces ---------------------------------------

CLONE_NEWNET = 0x40000000
HOST_IP = "192.0.2.1"  # TEST-NET-1: exists only inside the tests' namespaces
INET = "192.0.2.2"  # allowed.test, and a DoH-style lookup service on /resolve
HARDCODED = "192.0.2.3"  # serves HTTP, no name points to it
DENIED = "192.0.2.4"  # denied.test
DENIED2 = "192.0.2.5"  # denied.test's second address: in no answer the proxy sees
RESOLVER = "192.0.2.6"  # another resolver, on a port that is not 53
EVIL = "192.0.2.7"  # www.evil.test, cdn.evil.test (denied by *.evil.test)
SINK = "192.0.2.9"  # a UDP sink that logs every datagram
NS_ADDRS = (INET, HARDCODED, DENIED, DENIED2, RESOLVER, EVIL, SINK)
NS_ZONE = {
    "allowed.test": [INET],
    "denied.test": [DENIED],
    "alias.test": ["CNAME cdn.evil.test"],  # an allowed name that is a CNAME of a denied one
    "cdn.evil.test": [EVIL],
    "www.evil.test": [EVIL],
    "corp.test": ["DNAME evil.test"],  # every name under corp.test is one under evil.test
}


@dataclass
class NsNet:
    """The guarded host (`host_ns`) and the fake internet (`inet_ns`), joined by a veth pair."""

    host_ns: str
    inet_ns: str
    host_dev: str
    inet_mac: str
    dns: FakeDns
    other_dns: FakeDns  # on RESOLVER, another port: answers denied.test with DENIED2
    http: dict[str, FakeHttp]
    sink: FakeUdpSink
    resolv: Path
    tmp: Path

    @property
    def port(self) -> int:
        return self.http[INET].port

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def hits(self, addr: str) -> list[tuple[str, str]]:
        return list(self.http[addr].hits)

    def clear(self) -> None:
        for srv in self.http.values():
            srv.hits.clear()
        self.sink.hits.clear()


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, timeout=30, capture_output=True, text=True).stdout


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


@dataclass
class _InNetns:
    """Runs the block with this thread in netns `name` (servers' sockets are made there)."""

    name: str
    old: int = field(default=-1)

    def __enter__(self) -> None:
        self.old = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            _setns(fd)
        finally:
            os.close(fd)

    def __exit__(self, *exc: object) -> None:
        try:
            _setns(self.old)
        finally:
            os.close(self.old)


@pytest.fixture(scope="session")
def nsnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NsNet]:
    """Nothing is added to the machine's own network namespace: both ends are namespaces of the tests' own."""
    require_guard_support()
    tag = str(os.getpid())
    host, inet = f"pxg-host-{tag}", f"pxg-inet-{tag}"
    veth_h, veth_i = f"pxgh{tag}"[:15], f"pxgi{tag}"[:15]
    _ip("netns", "add", host)
    _ip("netns", "add", inet)
    try:
        _ip("link", "add", veth_h, "type", "veth", "peer", "name", veth_i)
        _ip("link", "set", veth_h, "netns", host)
        _ip("link", "set", veth_i, "netns", inet)
        _ip("-n", host, "addr", "add", f"{HOST_IP}/24", "dev", veth_h)
        for addr in NS_ADDRS:
            _ip("-n", inet, "addr", "add", f"{addr}/24", "dev", veth_i)
        for ns, dev in ((host, veth_h), (inet, veth_i)):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", inet, "route", "add", "default", "dev", veth_i)  # answers to addresses the host invents (tun)
        mac = json.loads(_ip("-j", "-n", inet, "link", "show", veth_i))[0]["address"]
        with _InNetns(inet):
            dns = FakeDns(dict(NS_ZONE), host=INET).start()
            other = FakeDns({"denied.test": [DENIED2]}, host=RESOLVER).start()
            first = FakeHttp(INET).start()
            http = {INET: first, **{a: FakeHttp(a, first.port).start() for a in (HARDCODED, DENIED, DENIED2, EVIL)}}
            sink = FakeUdpSink(SINK, 9999).start()
        first.lookup["denied.test"] = DENIED2
        tmp = tmp_path_factory.mktemp("nsnet")
        resolv = tmp / "resolv.conf"
        resolv.write_text("nameserver 127.0.0.153\noptions timeout:2 attempts:1\n")
        yield NsNet(host, inet, veth_h, mac, dns, other, http, sink, resolv, tmp)
        for srv in (dns, other, sink, *http.values()):
            srv.stop()
    finally:
        subprocess.run(["ip", "netns", "del", host], timeout=30, check=False)
        subprocess.run(["ip", "netns", "del", inet], timeout=30, check=False)


def in_host_ns(nsnet: NsNet, cmd: list[str]) -> list[str]:
    """`cmd` in the guarded host's network namespace (joined with nsenter: the cgroup mounts stay visible)."""
    return ["nsenter", f"--net=/run/netns/{nsnet.host_ns}", "--", *cmd]


def ns_guard(nsnet: NsNet, tmp_path: Path, script: str, *opts: str, env: dict[str, str] | None = None) -> Result:
    """`phalanx guard OPTS -- sh -c SCRIPT` in the guarded host, its DNS upstream across the veth."""
    events = tmp_path / f"events-{len(list(tmp_path.glob('events-*')))}.jsonl"
    guard = [*PHALANX, "guard", "--upstream", f"{INET}:{nsnet.dns.port}", "--events", str(events), *opts]
    cmd = in_host_ns(nsnet, confined(nsnet.resolv, [*guard, "--", "sh", "-c", script]))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env={**os.environ, **(env or {})})
    return Result(proc.returncode, proc.stdout, proc.stderr, read_events(events))


def unguarded(nsnet: NsNet, script: str) -> subprocess.CompletedProcess[str]:
    """The same script without the guard, in the same place: the control that shows a technique really works."""
    return subprocess.run(
        in_host_ns(nsnet, ["sh", "-c", script]), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
