"""Build hook: compile the deploy guard's eBPF programs (src/phalanx/guard/bpf/*.bpf.c) with clang as part of the
install. Without clang the install still succeeds; the guard then compiles them on first use, or says what to
install. Everything else about the package is in pyproject.toml."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_py import build_py

BPF_DIR = Path(__file__).resolve().parent / "src" / "phalanx" / "guard" / "bpf"


def _bpf_build() -> ModuleType:
    # Load the compile helper by path: the package is not importable while it is being built.
    spec = importlib.util.spec_from_file_location("_phalanx_bpf_build", BPF_DIR / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithBpf(build_py):
    def run(self) -> None:
        super().run()
        build = _bpf_build()
        out = BPF_DIR if getattr(self, "editable_mode", False) else Path(self.build_lib) / "phalanx/guard/bpf"
        try:
            build.compile_all(out, BPF_DIR)
        except build.CompileError as exc:
            self.announce(f"phalanx: eBPF objects not built now ({exc}); the guard compiles them on first use", 3)


setup(cmdclass={"build_py": BuildPyWithBpf})
