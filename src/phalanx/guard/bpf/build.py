"""Builds the guard's eBPF objects from their C sources, once, on a developer's machine. The objects (CO-RE: they
relocate against the running kernel's BTF when loaded) and a manifest are committed and shipped in the package, so
nothing is compiled where the guard runs. The manifest (objects.json) records the digest of the sources, the
toolchain (clang's version and the digest of every system header the build read) and each object's digest.

    python -m phalanx.guard.bpf.build            rebuild the objects and the manifest in place (needs clang)
    python -m phalanx.guard.bpf.build --check    rebuild into a temporary directory and compare, byte for byte

The build is reproducible for one toolchain: it runs in the source directory with relative paths and
-fdebug-compilation-dir=., so neither the checkout's location nor the time leaks into an object. Stands alone (no
phalanx imports), so it runs from a bare checkout."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MANIFEST",
    "PROGRAMS",
    "SOURCE_DIR",
    "CompileError",
    "Manifest",
    "Toolchain",
    "build_all",
    "file_digest",
    "read_manifest",
    "sources_digest",
    "toolchain",
]

SOURCE_DIR = Path(__file__).resolve().parent
MANIFEST = "objects.json"
PROGRAMS = ("connect", "dns_udp", "egress", "sock_create", "device", "cgroup_watch")
COMPILE_TIMEOUT_S = 120
# -target bpfel: the objects are little-endian (x86_64, arm64, riscv64, ...), whatever machine builds them.
FLAGS = ("-O2", "-g", "-target", "bpfel", "-Wall", "-Werror", "-fdebug-compilation-dir=.")


class CompileError(Exception):
    """clang is missing or failed; the message says which and how to fix it."""


@dataclass(frozen=True)
class Toolchain:
    clang: str  # first line of `clang --version`
    headers: str  # digest of the system headers the sources include


@dataclass(frozen=True)
class Manifest:
    sources: str
    toolchain: Toolchain
    flags: tuple[str, ...]
    objects: dict[str, str]  # object file name -> sha256


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sources_digest(source_dir: Path = SOURCE_DIR) -> str:
    """A digest of every C source and header of the guard (names and contents)."""
    h = hashlib.sha256()
    for path in sorted(source_dir.glob("*.[ch]")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _clang() -> str:
    clang = shutil.which("clang")
    if clang is None:
        raise CompileError(
            "clang is not installed, so the guard's eBPF programs cannot be rebuilt; install it "
            "(Debian: apt-get install clang libbpf-dev linux-libc-dev). Running the guard does not need it."
        )
    return clang


def _includes() -> list[str]:
    # <linux/bpf.h> includes <asm/types.h>, which Debian keeps under the multiarch directory.
    arch = sysconfig.get_config_var("MULTIARCH") or ""
    include = Path("/usr/include") / arch
    return [f"-I{include}"] if arch and include.is_dir() else []


def _run(cmd: list[str], cwd: Path, what: str) -> str:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"clang took longer than {COMPILE_TIMEOUT_S}s {what}") from exc
    if proc.returncode != 0:
        raise CompileError(f"clang failed {what} (are libbpf-dev and linux-libc-dev installed?):\n{proc.stderr}")
    return proc.stdout


def toolchain(source_dir: Path = SOURCE_DIR) -> Toolchain:
    """This machine's clang and the digest of the system headers the guard's sources read (from clang -M)."""
    clang = _clang()
    version = _run([clang, "--version"], source_dir, "reporting its version").splitlines()[0].strip()
    headers: set[Path] = set()
    for name in PROGRAMS:
        deps = _run([clang, *FLAGS, *_includes(), "-M", f"{name}.bpf.c"], source_dir, f"listing {name}'s headers")
        for word in deps.replace("\\\n", " ").split()[1:]:
            if word.startswith("/"):  # the guard's own files are relative: covered by sources_digest
                headers.add(Path(word))
    h = hashlib.sha256()
    for path in sorted(headers):
        h.update(str(path).encode() + b"\0" + path.read_bytes())
    return Toolchain(version, h.hexdigest())


def compile_program(name: str, out_dir: Path, source_dir: Path = SOURCE_DIR) -> Path:
    """Compile `<name>.bpf.c` to `<out_dir>/<name>.bpf.o` (atomically) and return the object's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}.bpf.o"
    tmp = out_dir / f".{name}.{os.getpid()}.bpf.o"
    try:
        _run([_clang(), *FLAGS, *_includes(), "-c", f"{name}.bpf.c", "-o", str(tmp)], source_dir, f"compiling {name}")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def build_all(out_dir: Path, source_dir: Path = SOURCE_DIR) -> Manifest:
    """Compile every program into `out_dir` and write the manifest next to them."""
    objects = {p.name: file_digest(p) for p in (compile_program(n, out_dir, source_dir) for n in PROGRAMS)}
    manifest = Manifest(sources_digest(source_dir), toolchain(source_dir), FLAGS, objects)
    doc = {
        "sources": manifest.sources,
        "toolchain": {"clang": manifest.toolchain.clang, "headers": manifest.toolchain.headers},
        "flags": list(manifest.flags),
        "objects": dict(sorted(objects.items())),
    }
    (out_dir / MANIFEST).write_text(json.dumps(doc, indent=2) + "\n")
    return manifest


def read_manifest(source_dir: Path = SOURCE_DIR) -> Manifest:
    """The committed manifest; raises OSError or ValueError when it is missing or malformed."""
    doc = json.loads((source_dir / MANIFEST).read_text())
    try:
        tc = Toolchain(str(doc["toolchain"]["clang"]), str(doc["toolchain"]["headers"]))
        return Manifest(
            str(doc["sources"]), tc, tuple(doc["flags"]), {str(k): str(v) for k, v in doc["objects"].items()}
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{source_dir / MANIFEST}: not a guard object manifest ({exc!r})") from exc


def check(source_dir: Path = SOURCE_DIR) -> list[str]:
    """Rebuild into a temporary directory and list every difference from the committed objects (empty: identical)."""
    shipped = read_manifest(source_dir)
    with tempfile.TemporaryDirectory(prefix="phalanx-bpf-") as d:
        rebuilt = build_all(Path(d), source_dir)
        problems = []
        if rebuilt.toolchain != shipped.toolchain:
            problems.append(f"toolchain differs: shipped {shipped.toolchain}, here {rebuilt.toolchain}")
        for name, digest in rebuilt.objects.items():
            if shipped.objects.get(name) != digest:
                problems.append(f"{name}: the rebuilt object differs from the shipped one")
        if set(shipped.objects) != set(rebuilt.objects):
            problems.append(f"objects differ: shipped {sorted(shipped.objects)}, built {sorted(rebuilt.objects)}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m phalanx.guard.bpf.build", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="rebuild elsewhere and compare with the shipped objects")
    args = ap.parse_args(argv)
    try:
        if args.check:
            problems = check()
            for p in problems:
                print(f"build: {p}", file=sys.stderr)
            print("build: the shipped objects match their sources" if not problems else "build: MISMATCH")
            return 1 if problems else 0
        manifest = build_all(SOURCE_DIR)
    except CompileError as exc:
        print(f"build: {exc}", file=sys.stderr)
        return 1
    for name, digest in sorted(manifest.objects.items()):
        print(f"{name}  {digest[:16]}")
    print(f"build: wrote {SOURCE_DIR / MANIFEST} ({manifest.toolchain.clang})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
