"""The run's view of the cgroup tree: in the child, after it joined the run's cgroup and before exec, a cgroup
namespace rooted at that cgroup and a mount namespace in which every cgroup2 mount is replaced by one of the
namespace. The run then sees its own cgroup as the root of the hierarchy: writing a pid to "the root's"
cgroup.procs keeps it where it is, and no path leads to a cgroup outside the run. Other mounts are untouched and
keep their propagation, so the host's mounts still appear in the run."""

from __future__ import annotations

import ctypes
from pathlib import Path

__all__ = ["cgroup2_mounts", "confine"]

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_RELATIME = 1 << 21
MS_PRIVATE = 1 << 18
MNT_DETACH = 2


def cgroup2_mounts(mountinfo: str) -> list[str]:
    """Mount points of cgroup2 file systems, from /proc/self/mountinfo (octal escapes decoded)."""
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if sep and right.split(" ", 1)[0] == "cgroup2":
            point = left.split()[4]
            out.append(point.encode().decode("unicode_escape"))
    return out


def confine() -> None:
    """Enter a new cgroup namespace (rooted at the current cgroup) and mount namespace, and remount cgroup2 there.
    Needs CAP_SYS_ADMIN: runs before the capabilities are dropped. Raises OSError with the step that failed."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWCGROUP | CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWCGROUP|CLONE_NEWNS)")
    for point in cgroup2_mounts(Path("/proc/self/mountinfo").read_text()):
        target = point.encode()
        # Private first, so neither the unmount nor the new mount propagates back to the host's namespace; the
        # kernel refuses a file system mounted on itself at the same place, hence unmount, then mount.
        if libc.mount(None, target, None, MS_PRIVATE, None) != 0:
            raise OSError(ctypes.get_errno(), f"making {point} private")
        if libc.umount2(target, MNT_DETACH) != 0:
            raise OSError(ctypes.get_errno(), f"unmounting the host's view of {point}")
        if libc.mount(b"cgroup2", target, b"cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME, None) != 0:
            raise OSError(ctypes.get_errno(), f"mounting the run's cgroup2 view on {point}")
