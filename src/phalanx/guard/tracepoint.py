"""The kernel tracepoint the guard watches (cgroup:cgroup_attach_task): its id and field offsets, read from tracefs,
and a perf event to attach a program to it. When the host has not mounted tracefs, a short-lived child mounts it
in a mount namespace of its own, reads the two files and exits, so the host's mounts never change."""

from __future__ import annotations

import ctypes
import os
import re
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from phalanx.guard.errors import NotSupportedError

__all__ = ["Tracepoint", "open_perf_event", "parse_format", "read"]

TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PERF_TYPE_TRACEPOINT = 2
PERF_FLAG_FD_CLOEXEC = 8
_FIELD = re.compile(r"field:[^;]*?\s\**(\w+)(?:\[\d*\])?;\s*offset:(\d+);\s*size:(\d+);")
_SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "riscv64": 241}


@dataclass(frozen=True)
class Tracepoint:
    id: int
    offsets: dict[str, int]  # field name -> offset in the record
    sizes: dict[str, int]


def parse_format(tp_id: str, fmt: str) -> Tracepoint:
    """The tracepoint from its `id` and `format` files."""
    offsets, sizes = {}, {}
    for m in _FIELD.finditer(fmt):
        offsets[m.group(1)] = int(m.group(2))
        sizes[m.group(1)] = int(m.group(3))
    return Tracepoint(int(tp_id.strip()), offsets, sizes)


def _read_from(root: Path, category: str, name: str) -> tuple[str, str]:
    base = root / "events" / category / name
    return (base / "id").read_text(), (base / "format").read_text()


def _read_private(category: str, name: str) -> tuple[str, str]:
    """Mount tracefs in a private mount namespace of a forked child and read the files there."""
    libc = ctypes.CDLL(None, use_errno=True)
    r, w = os.pipe()
    with tempfile.TemporaryDirectory(prefix="phalanx-tracefs-") as mnt:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(r)
                if (
                    libc.unshare(CLONE_NEWNS) == 0
                    and libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) == 0
                    and libc.mount(b"nodev", mnt.encode(), b"tracefs", 0, None) == 0
                ):
                    tp_id, fmt = _read_from(Path(mnt), category, name)
                    os.write(w, f"{tp_id}\0{fmt}".encode())
                    code = 0
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        chunks = []
        while chunk := os.read(r, 65536):
            chunks.append(chunk)
        os.close(r)
        _, status = os.waitpid(pid, 0)
    data = b"".join(chunks).decode()
    if os.waitstatus_to_exitcode(status) != 0 or "\0" not in data:
        raise NotSupportedError(f"cannot mount tracefs to read the tracepoint {category}:{name}")
    tp_id, _, fmt = data.partition("\0")
    return tp_id, fmt


def read(category: str, name: str) -> Tracepoint:
    """The tracepoint `category:name`; raises NotSupportedError if this kernel has none or tracefs is unusable."""
    for root in TRACEFS:
        try:
            return parse_format(*_read_from(Path(root), category, name))
        except (OSError, ValueError):
            continue
    try:
        return parse_format(*_read_private(category, name))
    except (OSError, ValueError) as exc:
        raise NotSupportedError(f"the tracepoint {category}:{name} is not available: {exc}") from exc


def open_perf_event(tp: Tracepoint) -> int:
    """A perf event on the tracepoint (all processes, CPU 0: a program attached to it runs on every CPU)."""
    machine = os.uname().machine
    nr = _SYS_PERF_EVENT_OPEN.get(machine)
    if nr is None:
        raise NotSupportedError(f"perf_event_open's number on {machine} is not known to the guard")
    attr = bytearray(128)  # struct perf_event_attr: type, size, config, sample_period; the rest zero
    struct.pack_into("IIQQ", attr, 0, PERF_TYPE_TRACEPOINT, len(attr), tp.id, 1)
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = int(libc.syscall(nr, buf, -1, 0, -1, PERF_FLAG_FD_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise NotSupportedError(f"perf_event_open on tracepoint {tp.id}: {os.strerror(err)}")
    return fd
