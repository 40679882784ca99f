"""Compiles the guard's eBPF C sources to objects with clang. Imported by setup.py at install time (so it must not
import anything from phalanx) and by the loader, which compiles into a cache on first use if an object is missing."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

__all__ = [
    "COMPILE_TIMEOUT_S",
    "PROGRAMS",
    "SOURCE_DIR",
    "CompileError",
    "compile_all",
    "compile_program",
    "sources_digest",
]

SOURCE_DIR = Path(__file__).resolve().parent
PROGRAMS = ("connect", "dns_udp", "egress", "sock_create")
COMPILE_TIMEOUT_S = 120


class CompileError(Exception):
    """clang is missing or failed; the message says which and how to fix it."""


def sources_digest(source_dir: Path = SOURCE_DIR) -> str:
    """A digest of every C source and header, so a cached object is never older than the code it came from."""
    h = hashlib.sha256()
    for path in sorted(source_dir.glob("*.[ch]")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _multiarch_include() -> list[str]:
    # <linux/bpf.h> includes <asm/types.h>, which Debian keeps under the multiarch directory.
    arch = sysconfig.get_config_var("MULTIARCH") or ""
    include = Path("/usr/include") / arch
    return [f"-I{include}"] if arch and include.is_dir() else []


def compile_program(name: str, out_dir: Path, source_dir: Path = SOURCE_DIR) -> Path:
    """Compile `<name>.bpf.c` to `<out_dir>/<name>.bpf.o` and return the object's path."""
    clang = shutil.which("clang")
    if clang is None:
        raise CompileError(
            "clang is not installed, so the guard's eBPF programs cannot be compiled; "
            "install it (Debian: apt-get install clang libbpf-dev linux-libc-dev) and reinstall phalanx"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}.bpf.o"
    tmp = out_dir / f".{name}.{os.getpid()}.bpf.o"
    cmd = [clang, "-O2", "-g", "-target", "bpf", "-Wall", "-Werror", *_multiarch_include()]
    cmd += ["-c", str(source_dir / f"{name}.bpf.c"), "-o", str(tmp)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"clang took longer than {COMPILE_TIMEOUT_S}s compiling {name}.bpf.c") from exc
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise CompileError(
            f"clang failed to compile {name}.bpf.c (are libbpf-dev and linux-libc-dev installed?):\n{proc.stderr}"
        )
    os.replace(tmp, out)  # atomic, so parallel guards never load a half-written object
    return out


def compile_all(out_dir: Path, source_dir: Path = SOURCE_DIR) -> list[Path]:
    return [compile_program(name, out_dir, source_dir) for name in PROGRAMS]
