"""The run's seccomp filter: a classic-BPF program installed in the child before exec (inherited by every
descendant, removable by none, root with all capabilities included) that hands the guard the few system calls a
process could use to leave or blind the guard. The guard answers each one (see supervisor.py); if the guard is
gone, those calls fail with ENOSYS, so the filter fails closed.

Handed to the guard (SECCOMP_RET_USER_NOTIF):
- socket() of any family but AF_UNIX, AF_INET, AF_INET6, AF_NETLINK and AF_ALG, and (AF_INET, SOCK_PACKET): AF_PACKET
  and AF_XDP send frames below the IP layer, where no cgroup hook sees them (the cgroup sock_create hook runs for
  IP sockets only);
- kill, tkill, tgkill, rt_(tg)sigqueueinfo and pidfd_open aimed at the guard, its reaper, their process group,
  or every process (-1); pidfd_send_signal (the guard resolves its target);
- ptrace attach/seize, process_vm_readv/writev and pidfd_getfd (the guard refuses targets outside the run);
- open_by_handle_at and bpf (always refused), setns (refused but for network, UTS and IPC namespaces).
Everything else is allowed in the filter, so the cost falls only on those calls."""

from __future__ import annotations

import ctypes
import platform
import struct
from dataclasses import dataclass

from phalanx.guard.errors import NotSupportedError

__all__ = [
    "ALLOWED_FAMILIES",
    "ARCHES",
    "FAMILY_NAMES",
    "Arch",
    "Notification",
    "build_filter",
    "install",
    "native_arch",
]

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_ALG = 1, 2, 10, 16, 38
ALLOWED_FAMILIES = (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_ALG)
FAMILY_NAMES = {
    3: "AF_AX25", 4: "AF_IPX", 5: "AF_APPLETALK", 9: "AF_X25", 17: "AF_PACKET", 21: "AF_RDS", 24: "AF_PPPOX",
    26: "AF_LLC", 29: "AF_CAN", 30: "AF_TIPC", 31: "AF_BLUETOOTH", 36: "AF_IEEE802154", 40: "AF_VSOCK",
    41: "AF_KCM", 42: "AF_QIPCRTR", 43: "AF_SMC", 44: "AF_XDP", 45: "AF_MCTP",
}  # fmt: skip
SOCK_TYPE_MASK = 0xF  # the rest of socket()'s type are flags (SOCK_CLOEXEC, SOCK_NONBLOCK)
SOCK_PACKET = 10
PTRACE_ATTACH = 16
PTRACE_SEIZE = 0x4206
CLONE_NEWNET = 0x40000000

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 8
RET_ALLOW = 0x7FFF0000
RET_USER_NOTIF = 0x7FC00000
RET_KILL_PROCESS = 0x80000000
X32_BIT = 0x40000000

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_AND_K = 0x54
_RET_K = 0x06
# struct seccomp_data offsets: nr (0), arch (4), instruction_pointer (8), args[6] (16, 8 bytes each; low word first)
_NR, _ARCH = 0, 4


def _arg(i: int) -> int:
    return 16 + 8 * i


@dataclass(frozen=True)
class Arch:
    """One system-call ABI: its AUDIT_ARCH value and the numbers of the calls the filter looks at."""

    name: str
    audit: int
    calls: dict[str, int]
    x32: bool = False  # x86_64: the x32 ABI shares the arch value and sets bit 30 of the number
    aliases: tuple[tuple[str, int], ...] = ()  # more numbers for a call (x32's own variants, 512 and up)

    def numbers(self, name: str) -> tuple[int, ...]:
        return (self.calls[name], *(nr for alias, nr in self.aliases if alias == name))


_COMMON = {"pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438}
ARCHES: dict[str, Arch] = {
    "x86_64": Arch(
        "x86_64",
        0xC000003E,
        {
            "socket": 41, "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "open_by_handle_at": 304, "bpf": 321,
            "setns": 308, **_COMMON,
        },
        x32=True,
        aliases=(("ptrace", 521), ("rt_sigqueueinfo", 524), ("rt_tgsigqueueinfo", 536), ("process_vm_readv", 539),
                 ("process_vm_writev", 540)),
    ),
    "i386": Arch(
        "i386",
        0x40000003,
        {
            "socket": 359, "socketcall": 102, "kill": 37, "tkill": 238, "tgkill": 270, "rt_sigqueueinfo": 178,
            "rt_tgsigqueueinfo": 335, "ptrace": 26, "process_vm_readv": 347, "process_vm_writev": 348,
            "open_by_handle_at": 342, "bpf": 357, "setns": 346, **_COMMON,
        },
    ),
    "aarch64": Arch(
        "aarch64",
        0xC00000B7,
        {
            "socket": 198, "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
            "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "open_by_handle_at": 265, "bpf": 280,
            "setns": 268, **_COMMON,
        },
    ),
}  # fmt: skip
# The second ABI a native kernel may run; any other arch value is killed (fail closed: its numbers are unknown).
COMPAT = {"x86_64": "i386"}
_SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
_SIGNAL_CALLS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open")
_NOTIFY_CALLS = (
    "pidfd_send_signal",
    "pidfd_getfd",
    "process_vm_readv",
    "process_vm_writev",
    "open_by_handle_at",
    "bpf",
)


def native_arch() -> Arch:
    machine = platform.machine()
    if machine not in ARCHES or machine not in _SYS_SECCOMP:
        raise NotSupportedError(f"the guard's seccomp filter does not know the system calls of {machine}")
    return ARCHES[machine]


class _Program:
    """A classic-BPF program with symbolic jump targets, resolved at the end."""

    def __init__(self) -> None:
        self.insns: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def stmt(self, code: int, k: int) -> None:
        self.insns.append((code, 0, 0, k))

    def jump(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.insns.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.insns)

    def assemble(self) -> bytes:
        out = []
        for i, (code, jt, jf, k) in enumerate(self.insns):
            t = self.labels[jt] - i - 1 if isinstance(jt, str) else jt
            f = self.labels[jf] - i - 1 if isinstance(jf, str) else jf
            if not (0 <= t < 256 and 0 <= f < 256):
                raise ValueError(f"seccomp jump out of range at {i}")
            out.append(struct.pack("=HBBI", code, t, f, k & 0xFFFFFFFF))
        return b"".join(out)


def _abi(prog: _Program, arch: Arch, protected: tuple[int, ...]) -> None:
    """The checks for one ABI; the syscall number is in the accumulator."""
    p, n = prog, arch.name
    targets = [(name, f"{n}_target") for name in _SIGNAL_CALLS] + [(name, "notify") for name in _NOTIFY_CALLS]
    targets += [("socket", f"{n}_family"), ("ptrace", f"{n}_ptrace"), ("setns", f"{n}_setns")]
    if "socketcall" in arch.calls:
        targets.append(("socketcall", "notify"))  # its arguments are in memory: the guard decides
    for name, label in targets:
        for nr in arch.numbers(name):
            p.jump(_JEQ_K, nr, label, 0)
    p.stmt(_RET_K, RET_ALLOW)
    p.label(f"{n}_target")  # the first argument (a pid) names the guard, its reaper or their group?
    p.stmt(_LD_W_ABS, _arg(0))
    for pid in protected:
        p.jump(_JEQ_K, pid, "notify", 0)
    p.stmt(_RET_K, RET_ALLOW)
    p.label(f"{n}_family")
    p.stmt(_LD_W_ABS, _arg(0))
    p.jump(_JEQ_K, AF_INET, f"{n}_inet", 0)
    for family in ALLOWED_FAMILIES:
        p.jump(_JEQ_K, family, "allow", 0)
    p.stmt(_RET_K, RET_USER_NOTIF)
    p.label(f"{n}_inet")  # (AF_INET, SOCK_PACKET) is an AF_PACKET socket by another name
    p.stmt(_LD_W_ABS, _arg(1))
    p.stmt(_AND_K, SOCK_TYPE_MASK)
    p.jump(_JEQ_K, SOCK_PACKET, "notify", "allow")
    p.label(f"{n}_ptrace")
    p.stmt(_LD_W_ABS, _arg(0))
    p.jump(_JEQ_K, PTRACE_ATTACH, "notify", 0)
    p.jump(_JEQ_K, PTRACE_SEIZE, "notify", "allow")
    p.label(f"{n}_setns")
    p.stmt(_LD_W_ABS, _arg(1))
    p.jump(_JEQ_K, CLONE_NEWNET, "allow", "notify")


def build_filter(arch: Arch, protected: tuple[int, ...]) -> bytes:
    """The filter for `arch` (and its compat ABI), notifying on signals to the `protected` pids (negative for a
    process group; -1 is always protected)."""
    protected = tuple(dict.fromkeys((*protected, -1)))
    p = _Program()
    compat = ARCHES.get(COMPAT.get(arch.name, ""))
    p.stmt(_LD_W_ABS, _ARCH)
    p.jump(_JEQ_K, arch.audit, "native", 0)
    if compat is not None:
        p.jump(_JEQ_K, compat.audit, "compat", 0)
    p.stmt(_RET_K, RET_KILL_PROCESS)
    p.label("native")
    p.stmt(_LD_W_ABS, _NR)
    if arch.x32:
        p.stmt(_AND_K, ~X32_BIT)  # x32 calls are the native ones with bit 30 set
    _abi(p, arch, protected)
    if compat is not None:
        p.label("compat")
        p.stmt(_LD_W_ABS, _NR)
        _abi(p, compat, protected)
    p.label("allow")
    p.stmt(_RET_K, RET_ALLOW)
    p.label("notify")
    p.stmt(_RET_K, RET_USER_NOTIF)
    return p.assemble()


class _Fprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install(code: bytes) -> int:
    """In the child: install the filter and return the listener fd (close-on-exec). Needs CAP_SYS_ADMIN or
    no_new_privs; the guard's child still has the former."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Fprog(len(code) // 8, ctypes.addressof(buf))
    nr = _SYS_SECCOMP[platform.machine()]
    fd = int(libc.syscall(nr, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, ctypes.byref(prog)))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "installing the seccomp filter")
    return fd


@dataclass(frozen=True)
class Notification:
    """struct seccomp_notif: one call waiting for the guard's answer."""

    id: int
    tid: int  # the calling thread, as the guard's pid namespace sees it
    nr: int
    arch: int
    args: tuple[int, ...]

    SIZE = 80

    @classmethod
    def unpack(cls, data: bytes) -> Notification:
        nid, tid, _flags, nr, arch, _ip = struct.unpack_from("=QIIiIQ", data)
        return cls(
            nid, tid, nr & ~X32_BIT if arch == ARCHES["x86_64"].audit else nr, arch, struct.unpack_from("=6Q", data, 32)
        )
