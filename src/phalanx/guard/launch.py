"""How the guarded command starts: what its child does between fork and exec, in this order, each step needing the
privileges the previous ones have not yet given up:
1. join the run's cgroup (the command never runs an instruction outside it);
2. confine its view of the cgroup tree (cgroup and mount namespaces, confine.py);
3. install the seccomp filter and hand its listener to the guard (seccomp.py);
4. drop capabilities, and switch user with --user (privilege.py);
5. take the terminal, if the guard had it, for its new process group."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from phalanx.guard import cgroup, confine, privilege, seccomp

__all__ = ["ChildSetup", "child_setup", "ignoring"]


@dataclass(frozen=True)
class ChildSetup:
    procs: Path  # the run's cgroup.procs
    privileges: privilege.Privileges
    confine: bool
    seccomp_filter: bytes | None  # None: no filter (the machine cannot, and the guard said so)
    listener_to: socket.socket | None  # where to send the filter's listener fd
    terminal: int | None


@contextlib.contextmanager
def ignoring(sig: signal.Signals) -> Iterator[None]:
    old = signal.signal(sig, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(sig, old)


def child_setup(s: ChildSetup) -> None:
    """In the child, between fork and exec. Any exception aborts the start (Popen reports it to the guard)."""
    cgroup.join(s.procs)
    if s.confine:
        confine.confine()
    if s.seccomp_filter is not None and s.listener_to is not None:
        listener = seccomp.install(s.seccomp_filter)
        socket.send_fds(s.listener_to, [b"L"], [listener])
        os.close(listener)
        s.listener_to.close()
    privilege.apply(s.privileges)
    if s.terminal is not None:
        with contextlib.suppress(OSError), ignoring(signal.SIGTTOU):
            os.tcsetpgrp(s.terminal, os.getpgrp())
