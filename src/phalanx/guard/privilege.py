"""What the guarded command may do as a user: by default the capabilities that could take it out of the guard are
dropped from its bounding set (no descendant, not even a setuid-root program, gets them back); `--user` runs it as
another uid with no_new_privs. The parsing runs in the guard; `apply` runs in the child between fork and exec."""

from __future__ import annotations

import ctypes
import grp
import os
import pwd
from dataclasses import dataclass

from phalanx.guard.errors import PolicyError

__all__ = ["CAPS", "DEFAULT_DROP", "Privileges", "RunAs", "apply", "parse_caps", "parse_user"]

# capability(7) numbers (stable kernel ABI)
CAPS = {
    "chown": 0, "dac_override": 1, "dac_read_search": 2, "fowner": 3, "fsetid": 4, "kill": 5, "setgid": 6,
    "setuid": 7, "setpcap": 8, "linux_immutable": 9, "net_bind_service": 10, "net_broadcast": 11, "net_admin": 12,
    "net_raw": 13, "ipc_lock": 14, "ipc_owner": 15, "sys_module": 16, "sys_rawio": 17, "sys_chroot": 18,
    "sys_ptrace": 19, "sys_pacct": 20, "sys_admin": 21, "sys_boot": 22, "sys_nice": 23, "sys_resource": 24,
    "sys_time": 25, "sys_tty_config": 26, "mknod": 27, "lease": 28, "audit_write": 29, "audit_control": 30,
    "setfcap": 31, "mac_override": 32, "mac_admin": 33, "syslog": 34, "wake_alarm": 35, "block_suspend": 36,
    "audit_read": 37, "perfmon": 38, "bpf": 39, "checkpoint_restore": 40,
}  # fmt: skip

# Each of these lets a root process undo the guard; a deploy script rarely needs one (say so with --keep-cap).
DEFAULT_DROP: dict[str, str] = {
    "sys_admin": "mount, setns, and most ways around the run's cgroup and its programs",
    "net_admin": "network devices, routes, netfilter, attaching BPF programs",
    "net_raw": "raw and packet sockets (AF_PACKET, AF_XDP)",
    "bpf": "loading BPF programs",
    "perfmon": "tracing programs and reading kernel memory",
    "sys_ptrace": "ptrace, pidfd_getfd and process_vm_* on processes outside the run (the guard's sockets)",
    "sys_module": "loading kernel modules",
    "sys_rawio": "/dev/mem and port I/O",
    "dac_read_search": "open_by_handle_at, which opens files outside the run's view of the cgroup tree",
    "mac_admin": "changing the LSM policy",
    "mac_override": "overriding the LSM policy",
}

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_V3 = 0x20080522


@dataclass(frozen=True)
class RunAs:
    uid: int
    gid: int
    groups: tuple[int, ...]
    name: str
    home: str


@dataclass(frozen=True)
class Privileges:
    drop: frozenset[int]  # capability numbers removed from the bounding set
    user: RunAs | None = None

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(n for n in DEFAULT_DROP if CAPS[n] not in self.drop)


def parse_caps(keep: list[str], flag: str = "--keep-cap") -> frozenset[int]:
    """The capabilities to drop, given the names the user keeps (`net_raw`, `CAP_NET_RAW`, or `all`)."""
    kept: set[str] = set()
    for i, raw in enumerate(keep):
        name = raw.strip().lower().removeprefix("cap_")
        if name == "all":
            kept.update(DEFAULT_DROP)
        elif name in CAPS:
            kept.add(name)
        else:
            raise PolicyError(f"{flag}[{i}]: {raw!r} is not a capability name (see capabilities(7), or 'all')")
    return frozenset(CAPS[n] for n in DEFAULT_DROP if n not in kept)


def parse_user(text: str, flag: str = "--user") -> RunAs:
    """USER or UID, optionally :GROUP or :GID, resolved now (in the guard, not in the child)."""
    user, _, group = text.partition(":")
    try:
        pw = pwd.getpwuid(int(user)) if user.isascii() and user.isdigit() else pwd.getpwnam(user)
    except (KeyError, OverflowError, ValueError):  # ValueError: a NUL in the name
        raise PolicyError(f"{flag}: no such user {user!r}") from None
    gid = pw.pw_gid
    if group:
        try:
            gid = int(group) if group.isascii() and group.isdigit() else grp.getgrnam(group).gr_gid
        except (KeyError, OverflowError, ValueError):
            raise PolicyError(f"{flag}: no such group {group!r}") from None
        if not 0 <= gid < 2**32 - 1:
            raise PolicyError(f"{flag}: group id {gid} is out of range")
    groups = tuple(os.getgrouplist(pw.pw_name, gid))
    return RunAs(pw.pw_uid, gid, groups, pw.pw_name, pw.pw_dir)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))


def _clear_inheritable(libc: ctypes.CDLL) -> None:
    # exec gives root its bounding set plus the inheritable set: make sure nothing dropped comes back from there.
    header = _CapHeader(_CAP_V3, 0)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    for d in data:
        d.inheritable = 0
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def apply(p: Privileges) -> None:
    """In the child, before exec: drop capabilities from the bounding set, then switch user (no_new_privs)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in sorted(p.drop):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: kernel lacks it
            raise OSError(ctypes.get_errno(), f"dropping capability {cap} from the bounding set")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _clear_inheritable(libc)
    if p.user is not None:
        os.setgroups(list(p.user.groups))
        os.setgid(p.user.gid)
        os.setuid(p.user.uid)  # clears the permitted and effective sets
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "setting no_new_privs")
