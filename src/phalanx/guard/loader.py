"""Loads the guard's eBPF objects and attaches them to one cgroup, linearly: open -> configure -> share maps ->
load -> attach; `close()` undoes it in reverse. Holding the returned `Programs` keeps the programs attached: the
bpf_links die with the last fd that refers to them."""

from __future__ import annotations

import ctypes
import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from phalanx.guard import tracepoint
from phalanx.guard.abi import GuardConfig
from phalanx.guard.errors import BpfError, NotSupportedError
from phalanx.guard.libbpf import BPF_F_ALLOW_MULTI, Libbpf, errno_text, last_errno
from phalanx.guard.objects import object_path

__all__ = ["CGROUP_OBJECTS", "SHARED_MAPS", "WATCH_OBJECT", "Programs", "load_and_attach"]

# object name -> programs in it (function names in the C source), each attached to the run's cgroup
CGROUP_OBJECTS: dict[str, tuple[str, ...]] = {
    "connect": ("guard_connect4", "guard_connect6"),
    "dns_udp": ("guard_sendmsg4", "guard_sendmsg6", "guard_recvmsg4", "guard_recvmsg6"),
    "egress": ("guard_egress",),
    "sock_create": ("guard_sock_create",),
    "device": ("guard_device",),
}
# attached to the cgroup:cgroup_attach_task tracepoint (system-wide) when the kernel offers it
WATCH_OBJECT = ("cgroup_watch", "guard_cgroup_watch")
SHARED_MAPS = (
    "deny4",
    "deny6",
    "allow4",
    "allow6",
    "learned4",
    "learned6",
    "sock_owner",
    "orig_dst",
    "client_ports",
    "seen",
    "counters",
    "events",
)
_NOT_SUPPORTED = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.ENOTSUP}


@dataclass
class Programs:
    """The loaded objects, their links to the cgroup, and the fds of the shared maps."""

    lib: Libbpf
    objects: list[int] = field(default_factory=list)
    links: list[int] = field(default_factory=list)
    legacy: list[tuple[int, int, int]] = field(default_factory=list)  # (prog fd, cgroup fd, attach type)
    map_fds: dict[str, int] = field(default_factory=dict)
    fallback_log: list[str] = field(default_factory=list)

    def close(self) -> None:
        """Detach and unload, in reverse order of creation. Safe to call twice."""
        for link in reversed(self.links):
            self.lib.call("bpf_link__destroy", link)
        self.links.clear()
        for prog_fd, cg_fd, attach_type in reversed(self.legacy):
            self.lib.call("bpf_prog_detach2", prog_fd, cg_fd, attach_type)
        self.legacy.clear()
        for obj in reversed(self.objects):
            self.lib.call("bpf_object__close", obj)
        self.objects.clear()
        self.map_fds.clear()


def _open(lib: Libbpf, path: Path) -> int:
    obj = lib.call("bpf_object__open_file", str(path).encode(), None)
    if not obj:
        raise BpfError(f"opening {path}: {errno_text(last_errno())}; reinstall phalanx to rebuild the object")
    return int(obj)


def _configure(lib: Libbpf, obj: int, name: str, config: GuardConfig) -> None:
    rodata = lib.call("bpf_object__find_map_by_name", obj, b".rodata")
    if not rodata:
        raise BpfError(f"configuring {name}: the object has no .rodata section for its settings")
    err = lib.call("bpf_map__set_initial_value", rodata, ctypes.byref(config), ctypes.sizeof(config))
    if err:
        raise BpfError(f"configuring {name}: {errno_text(err)} (guard.h and abi.py disagree?)")


def _share_maps(lib: Libbpf, obj: int, name: str, map_fds: dict[str, int]) -> None:
    for map_name, fd in map_fds.items():
        m = lib.call("bpf_object__find_map_by_name", obj, map_name.encode())
        if m and lib.call("bpf_map__reuse_fd", m, fd):
            raise BpfError(f"sharing map {map_name} with {name}: {errno_text(last_errno())}")


def _load(lib: Libbpf, obj: int, name: str) -> None:
    err = lib.call("bpf_object__load", obj)
    if err:
        log = lib.take_log()[-3000:]
        msg = f"loading {name}.bpf.o into the kernel: {errno_text(err)}"
        if abs(err) in _NOT_SUPPORTED:
            # The kernel refuses BPF itself (no CAP_BPF/CAP_NET_ADMIN, lockdown, an unprivileged container, a kernel
            # without cgroup BPF): nothing the policy can change.
            raise NotSupportedError(
                f"{msg}: this kernel or context does not allow cgroup eBPF programs; run the guard as root on the "
                "host (not in an unprivileged container), with a kernel built with CONFIG_CGROUP_BPF (5.7 or newer)"
            )
        raise BpfError(f"{msg} (the verifier rejected it; its log follows)\n{log}")


def _attach(programs: Programs, obj: int, prog_name: str, cgroup_fd: int) -> None:
    lib = programs.lib
    prog = lib.call("bpf_object__find_program_by_name", obj, prog_name.encode())
    if not prog:
        raise BpfError(f"attaching {prog_name}: no such program in the object")
    link = lib.call("bpf_program__attach_cgroup", prog, cgroup_fd)
    if link:
        programs.links.append(int(link))
        return
    link_err = last_errno()
    # Kernels before 5.7 have no cgroup bpf_link: fall back to a legacy multi attachment, and say so.
    attach_type = lib.call("bpf_program__expected_attach_type", prog)
    prog_fd = lib.call("bpf_program__fd", prog)
    if lib.call("bpf_prog_attach", prog_fd, cgroup_fd, attach_type, BPF_F_ALLOW_MULTI):
        raise BpfError(f"attaching {prog_name} to the cgroup: {errno_text(link_err)}")
    programs.legacy.append((prog_fd, cgroup_fd, attach_type))
    programs.fallback_log.append(f"{prog_name}: bpf_link failed ({errno_text(link_err)}), used legacy attach")


def _load_object(programs: Programs, name: str, config: GuardConfig) -> int:
    lib = programs.lib
    # Open the shipped object (compiled once, with the package; relocated against this kernel's BTF at load).
    obj = _open(lib, object_path(name))
    programs.objects.append(obj)
    # Bake the run's settings into .rodata before load, so the verifier prunes unused branches.
    _configure(lib, obj, name, config)
    # Reuse the maps the first object created, so all programs share one policy and one ring buffer.
    _share_maps(lib, obj, name, programs.map_fds)
    # Load into the kernel (the verifier runs here).
    _load(lib, obj, name)
    for map_name in SHARED_MAPS:
        m = lib.call("bpf_object__find_map_by_name", obj, map_name.encode())
        if m and map_name not in programs.map_fds:
            programs.map_fds[map_name] = lib.call("bpf_map__fd", m)
    return obj


def _attach_tracepoint(programs: Programs, obj: int, prog_name: str, tp: tracepoint.Tracepoint) -> None:
    lib = programs.lib
    prog = lib.call("bpf_object__find_program_by_name", obj, prog_name.encode())
    if not prog:
        raise BpfError(f"attaching {prog_name}: no such program in the object")
    pfd = tracepoint.open_perf_event(tp)
    link = lib.call("bpf_program__attach_perf_event", prog, pfd)
    if not link:
        os.close(pfd)
        raise NotSupportedError(f"attaching {prog_name} to its tracepoint: {errno_text(last_errno())}")
    programs.links.append(int(link))  # the link owns the perf event fd now


def load_and_attach(
    lib: Libbpf, config: GuardConfig, cgroup_fd: int, watch: tracepoint.Tracepoint | None = None
) -> Programs:
    """Load every object with `config` baked in, share one set of maps between them, attach all to the cgroup;
    with `watch`, also the cgroup-move watcher to its tracepoint (a failure there is a NotSupportedError the
    caller may treat as a warning: the cgroup programs are attached by then)."""
    programs = Programs(lib=lib)
    try:
        for name, prog_names in CGROUP_OBJECTS.items():
            obj = _load_object(programs, name, config)
            # Attach every program of the object to the run's cgroup.
            for prog_name in prog_names:
                _attach(programs, obj, prog_name, cgroup_fd)
    except BaseException:
        programs.close()
        raise
    if watch is not None:
        try:
            _attach_tracepoint(programs, _load_object(programs, WATCH_OBJECT[0], config), WATCH_OBJECT[1], watch)
        except NotSupportedError as exc:
            programs.fallback_log.append(f"not watching cgroup moves: {exc}")
        except BaseException:
            programs.close()
            raise
    return programs
