"""The shipped eBPF objects: they match their manifest and their sources (rebuilt byte for byte with the pinned
toolchain), a wheel carries them, and the guard runs from that wheel on a machine without clang or libbpf headers.

How "the objects match the sources" is checked, and why two ways: the manifest records the digest of the C sources
and headers, the toolchain (clang's version and the digest of every system header the build read) and each
object's digest. The first test needs nothing but Python and runs everywhere: a source edited without rebuilding,
or an object replaced, fails it. The second rebuilds with clang and compares bytes; clang output differs between
versions (and with header updates), so it runs only where the toolchain is the recorded one, and says so when it
skips. The build is run from the source directory with -fdebug-compilation-dir=., so the checkout's path does not
leak into the objects: on the recorded toolchain (Debian 12's clang 14) the rebuild is exact."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import PHALANX, RUN_TIMEOUT_S, Net, confined, guard_args, read_events, require_guard_support
from phalanx.guard import objects
from phalanx.guard.bpf import build
from phalanx.guard.errors import BpfError
from phalanx.guard.loader import CGROUP_OBJECTS, WATCH_OBJECT

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_objects_match_their_manifest_and_sources() -> None:
    manifest = build.read_manifest()
    assert build.sources_digest() == manifest.sources, "a C source changed: run python -m phalanx.guard.bpf.build"
    for name, digest in manifest.objects.items():
        assert build.file_digest(build.SOURCE_DIR / name) == digest, f"{name} differs from its manifest"
    assert set(manifest.objects) == {f"{n}.bpf.o" for n in build.PROGRAMS}
    assert set(build.PROGRAMS) == {*CGROUP_OBJECTS, WATCH_OBJECT[0]}  # every object the loader uses is built
    assert objects.verify() == manifest


def _pinned_toolchain_or_skip() -> None:
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed: the rebuild check needs the toolchain the objects were built with")
    here, shipped = build.toolchain(), build.read_manifest().toolchain
    if here != shipped:
        pytest.skip(f"this machine's toolchain ({here}) is not the recorded one ({shipped}): clang output differs")


def test_rebuilding_with_the_recorded_toolchain_gives_the_same_bytes() -> None:
    _pinned_toolchain_or_skip()
    assert build.check() == []


def _copy_of_the_objects(tmp_path: Path) -> Path:
    d = tmp_path / "bpf"
    shutil.copytree(build.SOURCE_DIR, d, ignore=shutil.ignore_patterns("__pycache__"))
    return d


def test_a_source_changed_without_rebuilding_is_refused(tmp_path: Path) -> None:
    d = _copy_of_the_objects(tmp_path)
    src = d / "egress.bpf.c"
    src.write_text(src.read_text() + "\n/* edited */\n")
    with pytest.raises(BpfError, match=r"older than their C sources.*python -m phalanx\.guard\.bpf\.build"):
        objects.verify.__wrapped__(d)


def test_a_corrupted_object_is_refused(tmp_path: Path) -> None:
    d = _copy_of_the_objects(tmp_path)
    obj = d / "connect.bpf.o"
    data = bytearray(obj.read_bytes())
    data[-1] ^= 0xFF
    obj.write_bytes(bytes(data))
    with pytest.raises(BpfError, match=r"connect\.bpf\.o does not match its manifest"):
        objects.verify.__wrapped__(d)
    obj.unlink()
    with pytest.raises(BpfError, match=r"connect\.bpf\.o is missing"):
        objects.verify.__wrapped__(d)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel .` of this checkout, offline (the build requirements come from the test extras), on a machine
    without clang when this one can hide it (root: a mount namespace), so building from source needs no compiler."""
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(out), "-q"]
    if os.geteuid() == 0:
        cmd = _without_clang(cmd)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (whl,) = out.glob("phalanx-*.whl")
    return whl


def test_the_wheel_ships_the_objects_and_their_manifest(wheel: Path) -> None:
    manifest = build.read_manifest()
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for name, digest in manifest.objects.items():
            member = f"phalanx/guard/bpf/{name}"
            assert member in names
            assert hashlib.sha256(z.read(member)).hexdigest() == digest
        assert "phalanx/guard/bpf/objects.json" in names


def _without_clang(cmd: list[str]) -> list[str]:
    """`cmd` in a mount namespace where clang, LLVM and the libbpf/UAPI headers are gone, as on a deploy host."""
    hide: list[str] = []
    for tool in ("clang", "llc", "clang-14"):
        found = shutil.which(tool)
        if found:
            real = Path(found).resolve()
            hide.append(str(real.parent if "/llvm" in str(real) else real))
    hide += [p for p in ("/usr/include/bpf", "/usr/include/linux", "/usr/lib/llvm-14") if Path(p).exists()]
    mounts = " && ".join(
        f"mount -t tmpfs none {p}" if Path(p).is_dir() else f"mount --bind /dev/null {p}" for p in dict.fromkeys(hide)
    )
    return ["unshare", "--mount", "sh", "-c", f'{mounts or "true"} && exec "$@"', "sh", *cmd]


def test_the_guard_runs_from_the_wheel_without_clang(wheel: Path, net: Net, tmp_path: Path) -> None:
    require_guard_support()
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel), "-q"],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    env = {"PYTHONPATH": str(target), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    probe = "import phalanx, shutil, pathlib; print(phalanx.__file__); print(shutil.which('clang')); "
    probe += "print(pathlib.Path('/usr/include/bpf/bpf_helpers.h').exists())"
    out = subprocess.run(_without_clang([sys.executable, "-c", probe]), capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout.split()  # fmt: skip
    assert out[0].startswith(str(target)) and out[1:] == ["None", "False"], out
    events = tmp_path / "events.jsonl"
    script = f"curl -sS -m 5 {net.url('allowed.test')}; curl -sS -m 5 {net.url('denied.test')}; echo curl=$?"
    cmd = [*guard_args(net, "--deny", "denied.test", events=events), "--", "sh", "-c", script]
    assert cmd[: len(PHALANX)] == PHALANX
    proc = subprocess.run(_without_clang(confined(net.resolv, cmd)), capture_output=True, text=True, env=env,
                          timeout=RUN_TIMEOUT_S)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "hello from 127.0.0.10" in proc.stdout and "curl=6" in proc.stdout, proc.stderr
    assert any(e["verdict"] == "deny" and e["name"] == "denied.test" for e in read_events(events))
