"""The HTML report in a real headless Chromium: it renders, logs no console error, fetches nothing, and its
charts carry data. Chromium comes from Debian's package (scripts/system-packages.txt); without it the test is
skipped locally and fails in CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from phalanx.sim.metrics import summary
from phalanx.sim.report import render_html
from phalanx.sim.simulator import POLICIES, simulate
from phalanx.sim.workload import ClusterSpec, Pool, generate_jobs, nodes_of

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nodes = nodes_of(ClusterSpec([Pool("gpu", 8, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8}, 4, 2)]))
    jobs = generate_jobs("philly", 60, seed=2, mean_gap=15)
    results = [simulate(nodes, jobs, POLICIES[p]) for p in ("pod-by-pod", "gang")]
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(results, [summary(r) for r in results], "browser test"))
    return path


def test_report_renders_in_chromium(report: Path, tmp_path: Path) -> None:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (scripts/system-packages.txt installs it in CI)")
        pytest.skip("chromium is not installed")
    run = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert re.search(r"<table id=\"summary\">.*pod-by-pod.*gang", dom, re.S)
    points = [int(n) for n in re.findall(r'class="series" data-policy="[^"]+" data-points="(\d+)"', dom)]
    assert len(points) == 6 and all(n > 1 for n in points)  # 3 charts x 2 policies, each with data
    assert dom.count('<svg class="heatmap"') == 2
    assert "http://" not in dom and "https://" not in dom
