"""Finds the compiled eBPF objects: those built at install time next to the sources if they are current, else a
copy compiled on first use into a per-user cache keyed by the sources' digest."""

from __future__ import annotations

import os
from pathlib import Path

from phalanx.guard.bpf import build
from phalanx.guard.errors import NotSupportedError

__all__ = ["cache_dir", "object_path"]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "phalanx" / "bpf" / build.sources_digest()


def _installed_is_current(obj: Path) -> bool:
    if not obj.exists():
        return False
    sources = list(build.SOURCE_DIR.glob("*.[ch]"))
    return all(obj.stat().st_mtime >= src.stat().st_mtime for src in sources)


def object_path(name: str) -> Path:
    """The path of `<name>.bpf.o`, compiling it into the cache if no current object was installed."""
    installed = build.SOURCE_DIR / f"{name}.bpf.o"
    if _installed_is_current(installed):
        return installed
    cached = cache_dir() / f"{name}.bpf.o"
    if cached.exists():
        return cached
    try:
        return build.compile_program(name, cache_dir())
    except build.CompileError as exc:
        raise NotSupportedError(str(exc)) from exc
