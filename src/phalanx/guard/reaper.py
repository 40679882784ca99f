"""The reaper: a small forked process that outlives a killed guard. It holds the programs' links (so the run stays
guarded) and, when the guard's pipe closes for any reason, kills and removes the run's cgroup, then exits, which
detaches the programs. A SIGKILLed guard thus leaves neither a live unguarded process nor a stale cgroup."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from phalanx.guard.cgroup import RunCgroup

__all__ = ["Reaper", "start"]


@dataclass
class Reaper:
    pid: int
    pipe_w: int

    def stop(self) -> None:
        """The guard cleaned up itself: release the reaper and collect it."""
        os.close(self.pipe_w)
        os.waitpid(self.pid, 0)


def _close_all_but(keep: set[int]) -> None:
    low = 3
    for fd in sorted(k for k in keep if k >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def start(cgroup_path: Path, keep_fds: list[int]) -> Reaper:
    """Fork the reaper; call before any thread exists and before the command starts."""
    r, w = os.pipe()
    os.set_inheritable(w, False)
    pid = os.fork()
    if pid == 0:  # the reaper
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the guard, which forwards it
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            _close_all_but({r, *keep_fds})
            while os.read(r, 1):
                pass
            RunCgroup(cgroup_path).remove()
        finally:
            os._exit(0)
    os.close(r)
    return Reaper(pid, w)
