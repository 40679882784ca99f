"""The run's cgroup v2: find the unified hierarchy, create one child cgroup per run under `phalanx-guard/`, start
the command inside it, kill what is left and remove it on every exit path, and sweep cgroups of dead guards."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from phalanx.guard.errors import CgroupError, NotSupportedError

__all__ = [
    "EMPTY_WAIT_S",
    "PARENT",
    "RunCgroup",
    "create_run",
    "find_root",
    "join",
    "own_cgroup",
    "process_start_time",
    "sweep_stale",
]

PARENT = "phalanx-guard"
EMPTY_WAIT_S = 5.0


def find_root(mounts: str = "/proc/mounts") -> Path:
    """The cgroup v2 mount: /sys/fs/cgroup on unified systems, /sys/fs/cgroup/unified on hybrid ones."""
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError as exc:
        raise NotSupportedError(f"cannot read {mounts} to find cgroup v2: {exc}") from exc
    found = [Path(f.split()[1]) for f in lines if len(f.split()) > 2 and f.split()[2] == "cgroup2"]
    if not found:
        raise NotSupportedError(
            "cgroup v2 is not mounted, and the guard's eBPF programs attach to a cgroup v2; "
            "boot with systemd.unified_cgroup_hierarchy=1, or mount it: mount -t cgroup2 none /sys/fs/cgroup/unified"
        )
    return min(found, key=lambda p: len(p.parts))


def own_cgroup(pid: int | str = "self") -> str:
    """This process's cgroup v2 path relative to the root ('0::/path' in /proc/PID/cgroup)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    return "/"


def process_start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: with the pid, it identifies a process even after pid reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass
class RunCgroup:
    path: Path

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def open_fd(self) -> int:
        return os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self.procs.read_text().split()]
        except OSError:
            return []

    def populated(self) -> bool:
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL everything in the cgroup, including processes forked while we kill."""
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
                return
        # Kernels before 5.14 have no cgroup.kill: freeze-free loop until the list stays empty.
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left, wait (bounded) for the cgroup to empty, and remove it with any children."""
        if not self.path.exists():
            return
        self.kill()
        deadline = time.monotonic() + EMPTY_WAIT_S
        while self.populated() and time.monotonic() < deadline:
            time.sleep(0.005)
        for sub in sorted((p for p in self.path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                sub.rmdir()
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise CgroupError(
                f"cannot remove the run's cgroup {self.path}: {exc}; processes may still be exiting, "
                f"the next guard start removes it"
            ) from exc


def create_run(root: Path) -> RunCgroup:
    """A fresh cgroup for this run, named after the guard's pid and start time (how stale ones are recognised)."""
    parent = root / PARENT
    name = f"{os.getpid()}-{process_start_time(os.getpid())}-{time.monotonic_ns()}"
    try:
        parent.mkdir(exist_ok=True)
        (parent / name).mkdir()
    except PermissionError as exc:
        raise NotSupportedError(f"cannot create a cgroup under {root}: {exc}; run the guard as root") from exc
    except OSError as exc:
        raise CgroupError(f"cannot create a cgroup under {parent}: {exc}") from exc
    return RunCgroup(parent / name)


def sweep_stale(root: Path) -> list[Path]:
    """Remove the cgroups of guards that died without cleaning up (e.g. SIGKILL). Returns what was removed."""
    parent = root / PARENT
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for child in parent.iterdir():
        if not child.is_dir():
            continue
        pid, _, rest = child.name.partition("-")
        start = rest.partition("-")[0]
        if pid.isdigit() and process_start_time(int(pid)) == start:
            continue  # its guard is alive: not ours to touch
        try:
            RunCgroup(child).remove()
            removed.append(child)
        except CgroupError:
            pass
    return removed


def join(procs: Path) -> None:
    """Move the calling process into the cgroup; run between fork and exec so the command never runs outside."""
    try:
        fd = os.open(procs, os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise CgroupError(f"the run's cgroup disappeared: {procs}") from exc
        raise
