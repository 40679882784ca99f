"""The real-cluster tier: a session-scoped control plane per Kubernetes version (etcd, kube-apiserver,
kube-controller-manager built from source by scripts/kube-testenv/build), deploy/ applied with the real kubectl,
and one namespace per test. A failing test's report carries the tail of every component's log."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from realcluster import ROOT, Cluster, Serve, serving

from phalanx.testenv import AssetsError, ControlPlane, find_assets

VERSIONS = ("1.36.3", "1.37.2")


def _assets_or_skip(version: str) -> None:
    """Missing binaries fail on CI (the test command builds them first) and skip elsewhere, saying why."""
    try:
        find_assets(version)
    except AssetsError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the real-cluster tier cannot run: {exc}")
        pytest.skip(f"no Kubernetes v{version} control plane: {exc}")


@pytest.fixture(scope="session", params=VERSIONS, ids=[f"v{v}" for v in VERSIONS])
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    _assets_or_skip(request.param)
    cp = ControlPlane(request.param)
    cp.start()
    try:
        cp.kubectl("apply", "-f", str(ROOT / "deploy"))
        yield cp
    finally:
        cp.stop()
        if not os.environ.get("PHALANX_KEEP_TESTENV"):
            shutil.rmtree(cp.dir, ignore_errors=True)


@pytest.fixture
def cluster(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-")
    c = Cluster(control_plane, f"t-{name}")
    yield c
    c.close()


@pytest.fixture(scope="session")
def serve_kubeconfig(control_plane: ControlPlane) -> Path:
    """The phalanx-scheduler ServiceAccount's token, as the Deployment in deploy/ would mount it."""
    return control_plane.service_account_kubeconfig("phalanx-system", "phalanx-scheduler")


@pytest.fixture(scope="module")
def phalanx(control_plane: ControlPlane, serve_kubeconfig: Path) -> Iterator[Serve]:
    """One `phalanx serve` for a module's tests (each in its own namespace), leading; stopped gracefully after."""
    with serving(control_plane, serve_kubeconfig, "serve") as s:
        yield s


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.failed and "control_plane" in getattr(item, "fixturenames", ()):
        cp = item.funcargs.get("control_plane")  # type: ignore[attr-defined]
        if isinstance(cp, ControlPlane):
            report.sections.append(("control plane logs", cp.logs(60)))
        serve = item.funcargs.get("phalanx")  # type: ignore[attr-defined]
        if isinstance(serve, Serve):
            report.sections.append(("phalanx serve log", serve.tail(60)))
    return report
