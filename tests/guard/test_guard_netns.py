"""The guard in a setting closer to production: the guarded host and the fake internet are two network namespaces
of the test's own, joined by a veth pair (192.0.2.0/24, TEST-NET-1, which exists only inside them). The guard
runs in the host namespace (joined with nsenter, so the cgroup mounts stay visible) and must behave exactly as on
loopback. Nothing is added to the machine's own network namespace."""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PHALANX, RUN_TIMEOUT_S, Result, confined, denied, read_events, require_guard_support
from fakenet import FakeDns, FakeHttp

CLONE_NEWNET = 0x40000000
INET, HARDCODED, DENIED = "192.0.2.2", "192.0.2.3", "192.0.2.4"


@dataclass
class NsNet:
    host_ns: str
    dns: FakeDns
    http: dict[str, FakeHttp]
    resolv: Path

    @property
    def port(self) -> int:
        return self.http[INET].port

    def url(self, host: str) -> str:
        return f"http://{host}:{self.port}/"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, timeout=30, capture_output=True)


def _in_netns(name: str) -> int:
    """Switch this thread into netns `name`; returns an fd of the previous one for `_back`."""
    libc = ctypes.CDLL(None, use_errno=True)
    old = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        os.close(fd)
    return old


def _back(old: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        if libc.setns(old, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(old)


@pytest.fixture(scope="module")
def nsnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NsNet]:
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
        _ip("-n", host, "addr", "add", "192.0.2.1/24", "dev", veth_h)
        for addr in (INET, HARDCODED, DENIED):
            _ip("-n", inet, "addr", "add", f"{addr}/24", "dev", veth_i)
        for ns, dev in ((host, veth_h), (inet, veth_i)):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", dev, "up")
        old = _in_netns(inet)  # the servers' sockets are created in the fake internet's namespace
        try:
            dns = FakeDns({"allowed.test": [INET], "denied.test": [DENIED]}, host=INET).start()
            first = FakeHttp(INET).start()
            http = {INET: first, **{a: FakeHttp(a, first.port).start() for a in (HARDCODED, DENIED)}}
        finally:
            _back(old)
        resolv = tmp_path_factory.mktemp("nsnet") / "resolv.conf"
        resolv.write_text("nameserver 127.0.0.153\noptions timeout:2 attempts:1\n")
        yield NsNet(host, dns, http, resolv)
        dns.stop()
        for srv in http.values():
            srv.stop()
    finally:
        subprocess.run(["ip", "netns", "del", host], timeout=30, check=False)
        subprocess.run(["ip", "netns", "del", inet], timeout=30, check=False)


def _guard(nsnet: NsNet, tmp_path: Path, script: str, *opts: str) -> Result:
    events = tmp_path / "events.jsonl"
    cmd = [
        "nsenter", f"--net=/run/netns/{nsnet.host_ns}", "--",
        *confined(nsnet.resolv, [*PHALANX, "guard", "--upstream", f"{INET}:{nsnet.dns.port}", "--events", str(events),
                                 *opts, "--", "sh", "-c", script]),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    return Result(proc.returncode, proc.stdout, proc.stderr, read_events(events))


def test_names_and_addresses_across_a_veth(nsnet: NsNet, tmp_path: Path) -> None:
    script = (
        f"curl -sS -m 5 {nsnet.url('allowed.test')}; curl -sS -m 5 {nsnet.url('denied.test')}; echo name=$?; "
        f"curl -sS -m 5 {nsnet.url(DENIED)}; echo addr=$?"
    )
    r = _guard(nsnet, tmp_path, script, "--deny", "denied.test")
    assert f"hello from {INET}" in r.stdout, r.stderr
    assert "name=6" in r.stdout and "addr=7" in r.stdout
    assert denied(r.events, "connect")[0]["addresses"] == [DENIED]
    assert ("allowed.test", "A", "udp") in nsnet.dns.asked  # the query crossed the veth to the upstream


def test_strict_mode_stops_a_hard_coded_address(nsnet: NsNet, tmp_path: Path) -> None:
    script = f"curl -sS -m 5 {nsnet.url('allowed.test')}; curl -sS -m 5 {nsnet.url(HARDCODED)}; echo hard=$?"
    r = _guard(nsnet, tmp_path, script, "--strict")
    assert f"hello from {INET}" in r.stdout and "hard=7" in r.stdout, r.stderr
    ev = denied(r.events, "connect")
    assert ev[0]["addresses"] == [HARDCODED] and ev[0]["rule"].startswith("strict")
