"""The deploy guard's errors, sorted by what the caller should do, each carrying the guard's exit code.

    GuardError                      the guard could not do its job; exit_code says which part failed
    ├── PolicyError          (2)    the policy (file or flags) is invalid: fix the input
    ├── NotSupportedError    (71)   this machine cannot run the guard (not root, no cgroup v2, no BPF, no clang)
    ├── CgroupError          (72)   creating or entering the run's cgroup failed (removal failures only warn)
    ├── BpfError             (73)   loading or attaching the eBPF programs, or a map update, failed
    ├── ProxyError           (74)   the DNS proxy could not start or died: the run was killed (fail closed)
    ├── TamperError          (75)   the guard's integrity was attacked (its reaper died, a program was detached,
    │                               a process was moved out of the run's cgroup): the run was killed
    └── CommandStartError (126/127) the guarded command could not be started (not executable / not found)

Anything else escaping the guard is a bug and exits 70. Code branches on these types, never on message text.
"""

from __future__ import annotations

__all__ = [
    "EXIT_BPF",
    "EXIT_CGROUP",
    "EXIT_INTERNAL",
    "EXIT_NOT_EXECUTABLE",
    "EXIT_NOT_FOUND",
    "EXIT_NOT_SUPPORTED",
    "EXIT_PROXY",
    "EXIT_TAMPER",
    "EXIT_USAGE",
    "BpfError",
    "CgroupError",
    "CommandStartError",
    "GuardError",
    "NotSupportedError",
    "PolicyError",
    "ProxyError",
    "TamperError",
]

EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_NOT_SUPPORTED = 71
EXIT_CGROUP = 72
EXIT_BPF = 73
EXIT_PROXY = 74
EXIT_TAMPER = 75
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127


class GuardError(Exception):
    """The guard could not do its job. The message says what failed, why, and how to fix it."""

    exit_code = EXIT_INTERNAL


class PolicyError(GuardError):
    exit_code = EXIT_USAGE


class NotSupportedError(GuardError):
    """The machine lacks something the guard needs; tests skip on this (and only this) error."""

    exit_code = EXIT_NOT_SUPPORTED


class CgroupError(GuardError):
    exit_code = EXIT_CGROUP


class BpfError(GuardError):
    exit_code = EXIT_BPF


class ProxyError(GuardError):
    exit_code = EXIT_PROXY


class TamperError(GuardError):
    exit_code = EXIT_TAMPER


class CommandStartError(GuardError):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code
