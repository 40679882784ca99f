"""The guard's watch over its own integrity during a run: the reaper must stay alive, the programs' links must stay
attached, and no process of the run may be moved to a cgroup outside it (by itself, or by a daemon such as
systemd). Any of these ends the run: the cgroup and the moved process are killed, and the guard exits 75 with a
`tamper` event. Refusing comes first (seccomp, the cgroup view, dropped capabilities); this catches what slips
through, and says so."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from phalanx.guard import procinfo
from phalanx.guard.errors import TamperError
from phalanx.guard.events import Event, rfc3339
from phalanx.guard.kernel_events import CgroupMove
from phalanx.guard.libbpf import Libbpf

__all__ = ["Integrity", "Tamper"]

BPF_LINK_TYPE_CGROUP = 3
LINK_CHECK_S = 0.5
MAX_ANCESTRY = 64


class _LinkInfo(ctypes.Structure):
    # struct bpf_link_info: type, id, prog_id, then a union whose cgroup member is {__u64 cgroup_id; ...}.
    _fields_ = (
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("prog_id", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
        ("cgroup_id", ctypes.c_uint64),
        ("attach_type", ctypes.c_uint32),
        ("rest", ctypes.c_uint8 * 44),
    )


@dataclass(frozen=True)
class Tamper:
    what: str
    rule: str
    pid: int | None


class Integrity:
    """Judges cgroup moves and checks the links; `stop(tamper)` is called once, for the first breach."""

    def __init__(
        self,
        lib: Libbpf,
        run_path: str,
        command_pid: Callable[[], int | None],
        stop: Callable[[Tamper], None],
        emit: Callable[[Event], None],
        stop_pids: frozenset[int],
    ) -> None:
        self.lib = lib
        self.run_path = run_path.rstrip("/")
        self.command_pid = command_pid
        self._stop = stop
        self.emit = emit
        self.stop_pids = stop_pids
        self._joined = False  # the command's own entry into the run's cgroup, between fork and exec
        self.breached: Tamper | None = None

    def _inside(self, path: str | None) -> bool:
        return path is not None and (path == self.run_path or path.startswith(self.run_path + "/"))

    def _from_run(self, pid: int) -> bool:
        """Was this process (now elsewhere) part of the run? Its ancestors tell: the command, or one still in the
        run's cgroup."""
        command = self.command_pid()
        p = pid
        for _ in range(MAX_ANCESTRY):
            p = procinfo.parent_pid(p)
            if p <= 1:
                return False
            if p == command or self._inside(procinfo.cgroup_path(p)):
                return True
        return False

    def on_move(self, move: CgroupMove) -> None:
        if self.breached is not None:
            return
        dst = move.dst_path.rstrip("/") or "/"
        if not self._joined and dst == self.run_path and move.pid == move.mover == self.command_pid():
            self._joined = True
            return
        if self._inside(dst):
            # The run sees its own cgroup as the root: a move "to the root" keeps a process where it was.
            if dst == self.run_path and self._inside(procinfo.cgroup_path(move.mover)):
                self._event(move.mover, f"move pid {move.pid} to the cgroup root", "the run's cgroup is the root of "
                            "its view: the process stays in the run, guarded")  # fmt: skip
            return
        if move.pid == self.command_pid() or self._from_run(move.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(move.pid, signal.SIGKILL)
            self.breach(
                Tamper(
                    f"move pid {move.pid} to {dst} (by pid {move.mover}, {move.mover_comm})",
                    "a process of the run was moved out of its cgroup: it was killed, and the run stopped",
                    move.pid,
                )
            )

    def check_links(self, links: list[int]) -> None:
        for link in links:
            info = _LinkInfo()
            size = ctypes.c_uint32(ctypes.sizeof(info))
            fd = self.lib.call("bpf_link__fd", link)
            if self.lib.call("bpf_obj_get_info_by_fd", fd, ctypes.byref(info), ctypes.byref(size)) != 0:
                continue
            if info.type == BPF_LINK_TYPE_CGROUP and info.cgroup_id == 0:
                self.breach(Tamper(f"program link {info.id} detached", "a program of the run was detached from its "
                                   "cgroup: the run stopped", None))  # fmt: skip
                return

    def reaper_died(self) -> None:
        self.breach(Tamper("the reaper exited", "the guard's reaper died during the run: the run stopped", None))

    def breach(self, t: Tamper) -> None:
        if self.breached is not None:
            return
        self.breached = t
        self._event(t.pid, t.what, t.rule)
        self._stop(t)

    def _event(self, pid: int | None, what: str, rule: str) -> None:
        argv, parents = procinfo.snapshot(pid, self.stop_pids) if pid else ((), ())
        self.emit(
            Event(
                time=rfc3339(time.time()),
                verdict="deny",
                rule=rule,
                kind="tamper",
                name=what,
                addresses=(),
                port=None,
                protocol="",
                pid=pid,
                cmdline=argv,
                parents=parents,
                comm=procinfo.comm(pid) if pid else "",
                exe=procinfo.exe(pid) if pid else "",
            )
        )

    def error(self) -> TamperError:
        assert self.breached is not None
        return TamperError(f"{self.breached.rule} ({self.breached.what})")
