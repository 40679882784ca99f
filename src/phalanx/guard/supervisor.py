"""The guard's side of the run's seccomp filter (seccomp.py): it reads each call the filter hands over, decides,
answers (refuse with EPERM, or let the call continue), and records every refusal as an event with the caller's
pid, command line and executable. Reading /proc about the caller and its target is safe here: each answer is
checked still pending (SECCOMP_IOCTL_NOTIF_ID_VALID) after the reads, so a recycled pid cannot be judged."""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from phalanx.guard import procinfo, seccomp
from phalanx.guard.events import Event, Verdict, rfc3339

__all__ = ["Answer", "Supervisor"]

IOCTL_RECV = 0xC0502100
IOCTL_SEND = 0xC0182101
IOCTL_ID_VALID = 0x40082102
IOCTL_ID_VALID_OLD = 0x80082102  # before 5.17 the kernel knew it by this (wrong-direction) number only
FLAG_CONTINUE = 1
SYS_SOCKET = 1  # socketcall's number for socket()
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
_NS_ALLOWED = ("net:", "uts:", "ipc:")


@dataclass(frozen=True)
class Answer:
    allow: bool  # continue the call as the process made it
    event: Event | None = None


class Supervisor:
    """Answers the run's filtered calls. `protected` are the guard's and the reaper's pids (and -pgid); `run_path`
    is the run's cgroup path (as /proc/PID/cgroup shows it from the root); `audit` lets refused socket families
    through (recorded as audit), never attacks on the guard."""

    def __init__(
        self,
        listener: int,
        protected: tuple[int, ...],
        run_path: str,
        emit: Callable[[Event], None],
        audit: bool,
        stop_pids: frozenset[int],
    ) -> None:
        self.fd = listener
        self.protected = protected
        self.run_path = run_path.rstrip("/")
        self.emit = emit
        self.audit = audit
        self.stop_pids = stop_pids
        self.answered = 0
        arches = [seccomp.native_arch()]
        arches += [seccomp.ARCHES[c] for c in (seccomp.COMPAT.get(arches[0].name),) if c]
        self._names = {(a.audit, nr): name for a in arches for name in a.calls for nr in a.numbers(name)}

    def close(self) -> None:
        os.close(self.fd)

    # ---- the loop's reader ---------------------------------------------------------------------------------

    def on_readable(self) -> None:
        buf = bytearray(seccomp.Notification.SIZE)
        try:
            fcntl.ioctl(self.fd, IOCTL_RECV, buf)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EINTR, errno.EAGAIN):
                return  # the caller died (or was interrupted) before we read it
            raise
        n = seccomp.Notification.unpack(bytes(buf))
        answer = self.decide(n)
        if not self._still_pending(n.id):
            return  # the caller is gone: what we read about it may be about another process
        self._send(n.id, answer.allow)
        self.answered += 1
        if answer.event is not None:
            self.emit(answer.event)

    def _still_pending(self, nid: int) -> bool:
        for request in (IOCTL_ID_VALID, IOCTL_ID_VALID_OLD):
            try:
                fcntl.ioctl(self.fd, request, struct.pack("=Q", nid))
                return True
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOTTY):
                    return False  # ENOENT: the call is gone
        return False

    def _send(self, nid: int, allow: bool) -> None:
        resp = struct.pack("=QqiI", nid, 0, 0 if allow else -errno.EPERM, FLAG_CONTINUE if allow else 0)
        try:
            fcntl.ioctl(self.fd, IOCTL_SEND, bytearray(resp))
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # ENOENT: the caller died meanwhile
                raise

    # ---- decisions -----------------------------------------------------------------------------------------

    def decide(self, n: seccomp.Notification) -> Answer:
        call = self._names.get((n.arch, n.nr), f"syscall {n.nr}")
        low = [a & 0xFFFFFFFF for a in n.args]
        if call == "socket":
            if low[0] == seccomp.AF_INET and low[1] & seccomp.SOCK_TYPE_MASK == seccomp.SOCK_PACKET:
                return self._family(n, 17)  # the filter only hands these over: they are AF_PACKET sockets
            return self._family(n, low[0])
        if call == "socketcall":
            if low[0] != SYS_SOCKET:
                return Answer(True)
            return self._refuse(n, "socket", "socketcall(SYS_SOCKET)", "32-bit socketcall(SYS_SOCKET) is refused: "
                                "its family cannot be read safely")  # fmt: skip
        if call in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"):
            target = struct.unpack("=i", struct.pack("=I", low[0]))[0]
            return self._tamper(n, f"{call} {self._who(target)}", "signals to the guard and its reaper are refused")
        if call == "pidfd_send_signal":
            pid = self._pidfd_target(n.tid, low[0])
            if pid in self.protected:
                return self._tamper(n, f"{call} {self._who(pid)}", "signals to the guard and its reaper are refused")
            return Answer(True)
        if call in ("pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev"):
            pid = self._pidfd_target(n.tid, low[0]) if call == "pidfd_getfd" else low[1] if call == "ptrace" else low[0]
            if pid is None or self._inside(pid):
                return Answer(True)
            return self._tamper(n, f"{call} on pid {pid}", "reaching into a process outside the run is refused")
        if call == "setns":
            kind = self._fd_link(n.tid, low[0])
            if low[1] in (CLONE_NEWUTS, CLONE_NEWIPC) or kind.startswith(_NS_ALLOWED):
                return Answer(True)
            what = kind.split(":")[0] or f"nstype {low[1]:#x}"
            return self._tamper(n, f"setns into a {what} namespace", "only network, UTS and IPC namespaces may be "
                                "entered: the others lead out of the run's view")  # fmt: skip
        if call == "open_by_handle_at":
            return self._tamper(n, call, "open_by_handle_at is refused: it opens files outside the run's view")
        if call == "bpf":
            return self._tamper(n, call, "the bpf() system call is refused: it could detach the guard's programs")
        return Answer(True)

    def _family(self, n: seccomp.Notification, family: int) -> Answer:
        name = seccomp.FAMILY_NAMES.get(family, f"family {family}")
        rule = f"socket family {name} is refused: it sends below the IP layer, where the guard sees nothing"
        if self.audit:
            return Answer(True, self._event(n, "socket", name, rule, "audit"))
        return self._refuse(n, "socket", name, rule)

    def _tamper(self, n: seccomp.Notification, what: str, rule: str) -> Answer:
        return self._refuse(n, "tamper", what, rule)

    def _refuse(self, n: seccomp.Notification, kind: str, what: str, rule: str) -> Answer:
        return Answer(False, self._event(n, kind, what, rule, "deny"))

    def _event(self, n: seccomp.Notification, kind: str, what: str, rule: str, verdict: Verdict) -> Event:
        pid = procinfo.tgid(n.tid) or n.tid
        argv, parents = procinfo.snapshot(pid, self.stop_pids, fallback=procinfo.comm(pid))
        return Event(
            time=rfc3339(time.time()),
            verdict=verdict,
            rule=rule,
            kind=kind,  # type: ignore[arg-type]
            name=what,
            addresses=(),
            port=None,
            protocol="",
            pid=pid,
            cmdline=argv,
            parents=parents,
            comm=procinfo.comm(pid),
            exe=procinfo.exe(pid),
        )

    # ---- what the caller's arguments refer to --------------------------------------------------------------

    def _who(self, pid: int) -> str:
        if pid == -1:
            return "every process (-1)"
        if pid < 0:
            return f"process group {-pid} (the guard's)"
        return f"pid {pid} (the guard)" if pid == self.protected[0] else f"pid {pid} (the guard's reaper)"

    def _inside(self, pid: int) -> bool:
        path = procinfo.cgroup_path(pid)
        return path is None or path == self.run_path or path.startswith(self.run_path + "/")

    @staticmethod
    def _fd_link(tid: int, fd: int) -> str:
        try:
            return os.readlink(f"/proc/{tid}/fd/{fd}")
        except OSError:
            return ""

    def _pidfd_target(self, tid: int, fd: int) -> int | None:
        """The pid a pidfd (or a /proc/PID directory fd) of the caller refers to."""
        link = self._fd_link(tid, fd)
        if link.startswith("/proc/") and link[6:].isdigit():
            return int(link[6:])
        try:
            for line in Path(f"/proc/{tid}/fdinfo/{fd}").read_text().splitlines():
                if line.startswith("Pid:"):
                    return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        return None
