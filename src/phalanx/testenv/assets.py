"""Where the control-plane binaries are: ``PHALANX_K8S_ASSETS`` (prebuilt, like envtest's ``KUBEBUILDER_ASSETS``),
else the build cache ``${PHALANX_K8S_CACHE:-~/.cache/phalanx/k8s}/vVERSION/`` that ``scripts/kube-testenv/build``
fills, building on first use when the script and Go are at hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BINARIES", "Assets", "AssetsError", "build_script", "cache_dir", "find_assets"]

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")


class AssetsError(Exception):
    """The binaries for a version are missing and cannot be built here; the message says why and what to do."""


@dataclass(frozen=True)
class Assets:
    version: str  # "1.36.3"
    dir: Path

    def path(self, binary: str) -> str:
        return str(self.dir / binary)


def cache_dir() -> Path:
    return Path(os.environ.get("PHALANX_K8S_CACHE") or Path.home() / ".cache" / "phalanx" / "k8s")


def build_script() -> Path | None:
    """scripts/kube-testenv/build of the source tree this package runs from, if it runs from one."""
    script = Path(__file__).resolve().parents[3] / "scripts" / "kube-testenv" / "build"
    return script if script.is_file() else None


def _complete(d: Path) -> bool:
    return all(os.access(d / b, os.X_OK) for b in BINARIES)


def find_assets(version: str, build: bool = True) -> Assets:
    """The binaries of ``version``; built (once, then cached) when missing and ``build`` allows it."""
    v = version.removeprefix("v")
    prebuilt = os.environ.get("PHALANX_K8S_ASSETS")
    if prebuilt:
        for d in (Path(prebuilt) / f"v{v}", Path(prebuilt)):
            if _complete(d):
                return Assets(v, d)
        raise AssetsError(f"PHALANX_K8S_ASSETS={prebuilt} has no complete set of {', '.join(BINARIES)} for v{v}")
    cached = cache_dir() / f"v{v}"
    if (cached / ".complete").is_file() and _complete(cached):
        return Assets(v, cached)
    script = build_script()
    if not build or script is None:
        raise AssetsError(f"no Kubernetes v{v} binaries in {cached}: run scripts/kube-testenv/build {v}")
    if shutil.which("go") is None:
        raise AssetsError(f"no Kubernetes v{v} binaries in {cached}, and no Go toolchain to build them")
    done = subprocess.run(["bash", str(script), v], check=False)
    if done.returncode != 0 or not _complete(cached):
        raise AssetsError(f"building Kubernetes v{v} failed (exit {done.returncode}); see the output above")
    return Assets(v, cached)
