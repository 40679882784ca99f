"""Typed access to the guard's BPF maps from user space: the address policy (deny/allow CIDRs, learned addresses)
and the proxy's client-port -> process lookup."""

from __future__ import annotations

import ctypes
import ipaddress
import time
from dataclasses import dataclass

from phalanx.guard.abi import COUNT_MAX, Learned, Lpm4Key, Lpm6Key, Owner, PortKey
from phalanx.guard.errors import BpfError
from phalanx.guard.libbpf import BPF_ANY, Libbpf, errno_text, last_errno

__all__ = ["ClientOwner", "IPAddress", "IPNetwork", "PolicyMaps"]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class ClientOwner:
    pid: int
    comm: str


class PolicyMaps:
    """Writes the policy into the maps shared by all programs of one run."""

    def __init__(self, lib: Libbpf, fds: dict[str, int]) -> None:
        self._update = lib.lib.bpf_map_update_elem
        self._lookup = lib.lib.bpf_map_lookup_elem
        self._fds = fds
        self._port_key = PortKey()
        self._owner = Owner()
        self._cpus = max(1, int(lib.call("libbpf_num_possible_cpus")))

    def _put(self, map_name: str, key: ctypes.Structure | ctypes.Array[ctypes.c_uint8], value: ctypes._CData) -> None:
        if self._update(self._fds[map_name], ctypes.byref(key), ctypes.byref(value), BPF_ANY):
            raise BpfError(f"updating map {map_name}: {errno_text(last_errno())}")

    def put_cidr(self, kind: str, net: IPNetwork, rule: int) -> None:
        """Add `net` to the `deny` or `allow` LPM trie with the rule id that events will name."""
        key: Lpm4Key | Lpm6Key
        if net.version == 4:
            key = Lpm4Key(net.prefixlen, (ctypes.c_uint8 * 4)(*net.network_address.packed))
        else:
            key = Lpm6Key(net.prefixlen, (ctypes.c_uint8 * 16)(*net.network_address.packed))
        self._put(f"{kind}{net.version}", key, ctypes.c_uint32(rule))

    def learn(self, addr: IPAddress, rule: int, ttl_s: float) -> None:
        """Allow `addr` (strict mode) until now + ttl, on the kernel's monotonic clock."""
        expires = time.monotonic_ns() + int(ttl_s * 1e9)
        value = Learned(expires, rule, 0)
        if addr.version == 4:
            self._put("learned4", (ctypes.c_uint8 * 4)(*addr.packed), value)
        else:
            self._put("learned6", (ctypes.c_uint8 * 16)(*addr.packed), value)

    def counters(self) -> list[int]:
        """What the programs could not report (abi.COUNT_*), summed over CPUs."""
        out = []
        values = (ctypes.c_uint64 * self._cpus)()
        for i in range(COUNT_MAX):
            key = ctypes.c_uint32(i)
            if self._lookup(self._fds["counters"], ctypes.byref(key), ctypes.byref(values)):
                out.append(0)
            else:
                out.append(int(sum(values)))
        return out

    def client(self, protocol: int, port: int) -> ClientOwner | None:
        """Which process sent from this local port to the proxy (recorded by the egress program)."""
        self._port_key.port = ((port & 0xFF) << 8) | (port >> 8)  # network byte order
        self._port_key.protocol = protocol
        if self._lookup(self._fds["client_ports"], ctypes.byref(self._port_key), ctypes.byref(self._owner)):
            return None
        return ClientOwner(self._owner.pid, self._owner.comm.decode(errors="replace"))
