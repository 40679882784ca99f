"""Finds the compiled eBPF objects shipped in the package (built once with clang, committed, installed as package
data) and checks them against their manifest. Nothing is compiled at run time: a missing or stale object is an
error that says how to rebuild it."""

from __future__ import annotations

import functools
from pathlib import Path

from phalanx.guard.bpf import build
from phalanx.guard.errors import BpfError

__all__ = ["object_path", "verify"]

REBUILD = "rebuild them with `python -m phalanx.guard.bpf.build` (needs clang) or reinstall phalanx"


@functools.cache
def verify(source_dir: Path = build.SOURCE_DIR) -> build.Manifest:
    """The manifest, once its objects and (when shipped) sources are checked; raises BpfError otherwise."""
    try:
        manifest = build.read_manifest(source_dir)
    except (OSError, ValueError) as exc:
        raise BpfError(f"the guard's eBPF object manifest cannot be read ({exc}); {REBUILD}") from exc
    if any(source_dir.glob("*.bpf.c")) and build.sources_digest(source_dir) != manifest.sources:
        raise BpfError(f"the eBPF objects in {source_dir} are older than their C sources; {REBUILD}")
    for name, digest in manifest.objects.items():
        path = source_dir / name
        try:
            ok = build.file_digest(path) == digest
        except OSError as exc:
            raise BpfError(
                f"{path} is missing ({exc.strerror}): the package lacks its eBPF objects; {REBUILD}"
            ) from exc
        if not ok:
            raise BpfError(f"{path} does not match its manifest (corrupted or replaced); {REBUILD}")
    return manifest


def object_path(name: str, source_dir: Path = build.SOURCE_DIR) -> Path:
    """The path of the shipped `<name>.bpf.o`, after checking the shipped objects once per process."""
    manifest = verify(source_dir)
    if f"{name}.bpf.o" not in manifest.objects:
        raise BpfError(f"no eBPF object {name}.bpf.o in the manifest; {REBUILD}")
    return source_dir / f"{name}.bpf.o"
