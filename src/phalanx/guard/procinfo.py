"""Snapshots of a process at event time: its command line and its parent chain up to the guarded command. Read
from /proc while the process is alive; the kernel-captured argv and parent pid fill in when it is already gone."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

__all__ = [
    "ProcessRef",
    "cgroup_path",
    "cmdline",
    "comm",
    "exe",
    "parent_pid",
    "parents",
    "snapshot",
    "split_args",
    "tgid",
]

MAX_DEPTH = 32


class ProcessRef(msgspec.Struct, frozen=True):
    pid: int
    cmdline: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "cmdline": list(self.cmdline)}


def cmdline(pid: int) -> tuple[str, ...]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ()
    if not raw:  # kernel threads and zombies
        return ()
    return tuple(a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0"))


def exe(pid: int) -> str:
    """The executable's path (/proc/PID/exe), '' when the process is gone or not ours to read."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def tgid(tid: int) -> int:
    """The process (thread group) a thread belongs to; 0 if it is gone."""
    try:
        for line in Path(f"/proc/{tid}/status").read_text().splitlines():
            if line.startswith("Tgid:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def cgroup_path(pid: int) -> str | None:
    """The process's cgroup v2 path as the guard sees it (from the root of the hierarchy), None if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        return None
    return None


def parent_pid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def split_args(raw: bytes) -> tuple[str, ...]:
    """argv as captured by the kernel: NUL-separated, possibly truncated."""
    raw = raw.rstrip(b"\0")
    return tuple(a.decode(errors="replace") for a in raw.split(b"\0")) if raw else ()


def parents(first_parent: int, stop: frozenset[int], parent_comm: str = "") -> tuple[ProcessRef, ...]:
    """Ancestors from the outermost (the guarded command) down to the direct parent. The walk stops at a pid in
    `stop` (the guard itself), at init, or when a daemonised process's chain leaves the run. A parent that has
    already exited is named by the comm the kernel captured."""
    chain: list[ProcessRef] = []
    pid = first_parent
    while pid > 1 and pid not in stop and len(chain) < MAX_DEPTH:
        name = comm(pid) or (parent_comm if pid == first_parent else "")
        chain.append(ProcessRef(pid, cmdline(pid) or ((name,) if name else ())))
        pid = parent_pid(pid)
    return tuple(reversed(chain))


def snapshot(
    pid: int,
    stop: frozenset[int],
    kernel_args: tuple[str, ...] = (),
    kernel_ppid: int = 0,
    fallback: str = "",
    parent_comm: str = "",
) -> tuple[tuple[str, ...], tuple[ProcessRef, ...]]:
    """(cmdline, parents) of `pid` now, preferring what the kernel captured at decision time."""
    argv = kernel_args or cmdline(pid) or ((fallback,) if fallback else ())
    ppid = kernel_ppid or parent_pid(pid)
    return argv, parents(ppid, stop, parent_comm)
