"""The eBPF programs driven directly through the library (no proxy, no CLI): a real cgroup, the real programs and
maps, a real process connecting. Here strict mode's learned addresses and their expiry are checked without waiting
for a TTL."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import partial

import pytest

from conftest import HARDCODED_IP, Net, require_guard_support
from phalanx.guard import cgroup
from phalanx.guard.abi import FIRST_POLICY_RULE, GuardConfig
from phalanx.guard.libbpf import Libbpf
from phalanx.guard.loader import Programs, load_and_attach
from phalanx.guard.maps import PolicyMaps


@pytest.fixture
def strict_run() -> Iterator[tuple[cgroup.RunCgroup, Programs, PolicyMaps]]:
    require_guard_support()
    cg = cgroup.create_run(cgroup.find_root())
    config = GuardConfig(proxy_ip4=int.from_bytes(bytes([127, 0, 0, 1]), "little"), proxy_port=0x3500, strict=1)
    fd = cg.open_fd()
    try:
        lib = Libbpf()
        programs = load_and_attach(lib, config, fd)
    finally:
        os.close(fd)
    try:
        yield cg, programs, PolicyMaps(lib, programs.map_fds)
    finally:
        cg.remove()
        programs.close()


def _connect_in(cg: cgroup.RunCgroup, port: int) -> str:
    code = f"import socket;print(socket.socket().connect_ex(('{HARDCODED_IP}',{port})))"
    return subprocess.run(
        [sys.executable, "-c", code], preexec_fn=partial(cgroup.join, cg.procs), capture_output=True, text=True,
        timeout=30,
    ).stdout.strip()  # fmt: skip


def test_learned_addresses_open_strict_mode_until_they_expire(strict_run, net: Net) -> None:
    cg, _programs, maps = strict_run
    addr = ipaddress.ip_address(HARDCODED_IP)
    assert _connect_in(cg, net.port) == "1"  # EPERM: not learned
    maps.learn(addr, FIRST_POLICY_RULE, ttl_s=60)
    assert _connect_in(cg, net.port) == "0"
    maps.learn(addr, FIRST_POLICY_RULE, ttl_s=-1)  # expired
    assert _connect_in(cg, net.port) == "1"
    maps.put_cidr("allow", ipaddress.ip_network("127.0.0.8/29"), FIRST_POLICY_RULE)
    assert _connect_in(cg, net.port) == "0"  # an allowed CIDR needs no learning
    maps.put_cidr("deny", ipaddress.ip_network(f"{HARDCODED_IP}/32"), FIRST_POLICY_RULE + 1)
    assert _connect_in(cg, net.port) == "1"  # deny rules win over allow rules
