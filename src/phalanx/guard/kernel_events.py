"""Kernel events -> guard events: decodes what the eBPF programs put in the ring buffer (struct guard_event) into
the JSON-line Event, adding the command line and parent chain (kernel-captured first, /proc as the fallback) and
the executable's path."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass

from phalanx.guard import procinfo
from phalanx.guard.abi import (
    EXE_PARTS,
    HOOK_CGROUP,
    HOOK_CONNECT,
    HOOK_DEVICE,
    HOOK_EGRESS,
    VERDICT_ALLOW,
    VERDICT_AUDIT,
    GuardEvent,
)
from phalanx.guard.events import PROTOCOLS, Event, Kind, Verdict, rfc3339
from phalanx.guard.maps import IPAddress

__all__ = ["CgroupMove", "Decoder", "cgroup_move", "kernel_exe", "monotonic_to_unix"]

_KINDS: dict[int, Kind] = {HOOK_CONNECT: "connect", HOOK_EGRESS: "packet", HOOK_DEVICE: "device"}


def monotonic_to_unix(ts_ns: int) -> float:
    """Kernel monotonic nanoseconds -> unix seconds."""
    return time.time() - (time.monotonic_ns() - ts_ns) / 1e9


def kernel_exe(raw: GuardEvent) -> str:
    """The executable's path as the kernel walked it at decision time ('' if it did not)."""
    n = int(raw.exe_parts)
    if n == 0:
        return ""
    parts = [bytes(raw.exe[i].value).decode(errors="replace") for i in range(min(n, EXE_PARTS))]
    path = "/" + "/".join(reversed(parts))
    return ".../" + path.lstrip("/") if n > EXE_PARTS else path


@dataclass(frozen=True)
class CgroupMove:
    """A process moved between cgroups (the cgroup_attach_task tracepoint), anywhere on the machine."""

    pid: int  # the process moved
    mover: int  # the process that moved it
    mover_comm: str
    dst_root: int  # hierarchy id: the moves that matter are on the cgroup v2 one
    dst_id: int
    dst_level: int
    dst_path: str
    time: float


def cgroup_move(raw: GuardEvent) -> CgroupMove:
    return CgroupMove(
        pid=int(raw.pid),
        mover=int(raw.ppid),
        mover_comm=raw.parent_comm.decode(errors="replace"),
        dst_root=int(raw.port),
        dst_id=int(raw.cookie),
        dst_level=int(raw.family),
        dst_path=bytes(raw.args).split(b"\0", 1)[0].decode(errors="replace"),
        time=monotonic_to_unix(int(raw.ts_ns)),
    )


@dataclass
class Decoder:
    """Turns a raw socket/device event into an Event. `rule_text` names rule ids; `names` maps an address to the
    DNS name it was learned from; `stop_pids` end the parent walk (the guard)."""

    rule_text: Callable[[int], str]
    names: dict[str, str]
    stop_pids: frozenset[int]

    def event(self, raw: GuardEvent) -> Event:
        assert raw.hook != HOOK_CGROUP, "cgroup moves are judged by the watch, not reported as they come"
        verdict: Verdict = (
            "allow" if raw.verdict == VERDICT_ALLOW else "audit" if raw.verdict == VERDICT_AUDIT else "deny"
        )
        kind = _KINDS.get(int(raw.hook), "sendmsg")
        comm = raw.comm.decode(errors="replace")
        pid = int(raw.pid)
        argv, parents = (
            procinfo.snapshot(
                pid,
                self.stop_pids,
                procinfo.split_args(bytes(raw.args)),
                int(raw.ppid),
                comm,
                raw.parent_comm.decode(errors="replace"),
            )
            if pid
            else ((), ())
        )
        name: str | None
        addresses: tuple[str, ...]
        port: int | None
        if kind == "device":
            name, addresses, port, protocol = f"/dev/net/tun (char {raw.dev_major}:{raw.dev_minor})", (), None, ""
        else:
            addr = _address(raw)
            name, addresses = self.names.get(addr), (addr,)
            port = int.from_bytes(int(raw.port).to_bytes(2, "little"), "big") or None
            protocol = PROTOCOLS.get(raw.protocol, str(raw.protocol))
        return Event(
            time=rfc3339(monotonic_to_unix(int(raw.ts_ns))),
            verdict=verdict,
            rule=self.rule_text(int(raw.rule)),
            kind=kind,
            name=name,
            addresses=addresses,
            port=port,
            protocol=protocol,
            pid=pid or None,
            cmdline=argv,
            parents=parents,
            comm=comm,
            # Decision-time path from the kernel first; /proc only for events the kernel did not walk (packets).
            exe=kernel_exe(raw) or (procinfo.exe(pid) if pid else ""),
        )


def _address(raw: GuardEvent) -> str:
    """The event's address as text (IPv4-mapped IPv6 shown as IPv4)."""
    addr: IPAddress = (
        ipaddress.IPv4Address(bytes(raw.addr[:4])) if raw.family == 4 else ipaddress.IPv6Address(bytes(raw.addr))
    )
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return str(addr)
