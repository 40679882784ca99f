"""The HTML report in a real headless Chromium, driven over the DevTools protocol (tests/sim/chromium.py): it
renders a screenshot, logs no console error or warning, requests nothing but itself (DNS is mapped to nowhere, so
a fetch would fail loudly), and its charts carry the run's own values: the time series point by point, the
hover labels, the small multiples, every job's timeline bars and the scheduler's reasons for a wait. Chromium
comes from Debian's package (scripts/system-packages.txt); without it the test is skipped locally and fails in
CI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from chromium import CHROMIUM, Browser

from phalanx.sim.metrics import HEADLINES
from phalanx.sim.report import render_report
from phalanx.sim.report_data import payload
from phalanx.sim.runs import RunKey, RunOutput, SimulationRun
from phalanx.sim.scenario import Scenario
from phalanx.sim.simulator import POLICIES
from phalanx.sim.workload import ClusterSpec, Pool, generate_jobs, nodes_of

POLICY_NAMES = ("pod-by-pod", "gang-tas-preemption")
READY = "window.phalanxReport && window.phalanxReport.ready"


@pytest.fixture(scope="module")
def runs() -> list[RunOutput]:
    nodes = nodes_of(ClusterSpec([Pool("gpu", 8, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8}, 4, 2)]))
    scenario = Scenario("browser test", nodes, generate_jobs("philly", 60, seed=2, mean_gap=15))
    return [SimulationRun(RunKey("t", 1, p), scenario, POLICIES[p]).run(lambda _: None) for p in POLICY_NAMES]


@pytest.fixture(scope="module")
def page(runs: list[RunOutput], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (scripts/system-packages.txt installs it in CI)")
        pytest.skip("chromium is not installed")
    base = tmp_path_factory.mktemp("report")
    report = base / "report.html"
    report.write_text(render_report(runs, "browser test"))
    with Browser(base / "profile") as browser:
        browser.open(report.as_uri(), READY)
        yield browser


def js(page: Browser, expression: str) -> Any:
    return page.evaluate(expression)


def test_it_renders_with_no_console_error_and_fetches_nothing(page: Browser) -> None:
    shot = page.screenshot()
    assert shot.startswith(b"\x89PNG") and len(shot) > 30_000  # a blank page compresses to a few kB
    assert page.problems() == []
    assert [u for u in page.requests() if not u.startswith(("file://", "data:"))] == []
    assert js(page, "document.querySelectorAll('.js-plotly-plot').length") >= 8


def test_time_series_carry_every_sample(page: Browser, runs: list[RunOutput]) -> None:
    drawn = js(page, "document.getElementById('chart-gpus').data.map(t => [t.name, t.x, t.y])")
    for (name, x, y), run in zip(drawn, runs, strict=False):
        assert name == run.key.policy
        assert x == [round(s.time / 3600, 4) for s in run.result.samples]
        assert y == [s.allocated_gpus for s in run.result.samples]
    assert drawn[-1][0] == "capacity" and drawn[-1][2] == [64, 64]
    queued = js(page, "document.getElementById('chart-queue').data.map(t => t.y)")
    assert queued == [[s.queued_jobs for s in r.result.samples] for r in runs]


def test_axes_have_titles_ticks_legend_and_hover_values(page: Browser, runs: list[RunOutput]) -> None:
    assert js(page, "document.querySelector('#chart-gpus .g-xtitle').textContent") == "time (h)"
    assert js(page, "document.querySelector('#chart-gpus .g-ytitle').textContent") == "GPUs allocated"
    assert js(page, "document.querySelectorAll('#chart-gpus .xtick').length") >= 3
    assert js(page, "document.querySelectorAll('#chart-gpus .ytick').length") >= 3
    legend = js(page, "Array.from(document.querySelectorAll('#chart-gpus .legendtext')).map(e => e.textContent)")
    assert legend == [*POLICY_NAMES, "capacity"]
    samples = runs[0].result.samples
    k = max(range(len(samples)), key=lambda i: samples[i].allocated_gpus)  # a busy moment
    hours = round(samples[k].time / 3600, 4)
    labels = js(
        page,
        f"(Plotly.Fx.hover('chart-gpus', {{xval: {hours}}}), "
        "Array.from(document.querySelectorAll('#chart-gpus .hoverlayer text')).map(e => e.textContent))",
    )
    assert f"{POLICY_NAMES[0]} : {samples[k].allocated_gpus} GPUs" in labels


def test_small_multiples_show_each_policys_headline_metrics(page: Browser, runs: list[RunOutput]) -> None:
    bars = js(page, "document.getElementById('chart-multiples').data.map(t => [t.name, t.x, t.y])")
    assert len(bars) == len(HEADLINES) * len(runs)
    for k, h in enumerate(HEADLINES):
        for p, run in enumerate(runs):
            name, x, y = bars[k * len(runs) + p]
            assert (name, x) == (run.key.policy, [run.key.policy])
            assert y[0] == pytest.approx(h.value(run.summary), abs=1e-4)
    titles = js(
        page, "Array.from(document.querySelectorAll('#chart-multiples .annotation-text')).map(e => e.textContent)"
    )
    assert titles[0] == "Jobs completedhigher is better" and len(titles) == len(HEADLINES)
    table = js(
        page,
        "Array.from(document.querySelectorAll('#summary tbody tr')).map(r => r.cells[0].textContent + ' ' + r.cells[1].textContent)",
    )
    assert table == [f"{r.key.policy} {r.summary['completed']}/{r.summary['jobs']}" for r in runs]


def test_the_timeline_draws_every_span_of_every_job(page: Browser, runs: list[RunOutput]) -> None:
    data = payload(runs)["traces"][0]
    for p, run in enumerate(runs):
        js(page, f"(document.getElementById('gantt-policy').value = '{p}', "
                 "document.getElementById('gantt-policy').dispatchEvent(new Event('change')), true)")  # fmt: skip
        bars = js(page, "document.getElementById('chart-gantt').data.filter(t => t.type === 'bar')"
                        ".map(t => [t.name, t.y, t.base, t.x])")  # fmt: skip
        drawn = sorted(
            (row, round(base, 4), round(base + width, 4), name.startswith("running"))
            for name, rows, bases, widths in bars
            for row, base, width in zip(rows, bases, widths, strict=True)
        )
        spans = sorted(
            (row, round(s.start / 3600, 4), round(s.end / 3600, 4), s.state == "running")
            for row, i in enumerate(sorted(range(len(run.timelines)), key=lambda i: (run.result.runs[i].job.submit, i)))
            for s in run.timelines[i].spans
        )
        assert [d[:1] + d[3:] for d in drawn] == [s[:1] + s[3:] for s in spans]
        assert all(d[1] == pytest.approx(s[1], abs=2e-4) and d[2] == pytest.approx(s[2], abs=2e-4)
                   for d, s in zip(drawn, spans, strict=True))  # fmt: skip
        title = js(page, "document.querySelector('#chart-gantt .gtitle').textContent")
        assert title.startswith(f"Job timeline: {run.key.policy}")
    cut = [s for s in data["gantt"][1] if s[4] == "preemption"]
    marks = js(page, "document.getElementById('chart-gantt').data.filter(t => t.type === 'scatter').map(t => t.x)")
    assert cut and marks == [[s[3] for s in cut]]  # preempted attempts are marked where they were cut short


def test_why_a_job_waited_in_the_schedulers_words(page: Browser, runs: list[RunOutput]) -> None:
    js(page, "(document.getElementById('gantt-policy').value = '0', "
             "document.getElementById('gantt-policy').dispatchEvent(new Event('change')), true)")  # fmt: skip
    run = runs[0]
    order = sorted(range(len(run.timelines)), key=lambda i: (run.result.runs[i].job.submit, i))
    waited = [row for row, i in enumerate(order) if run.timelines[i].reasons]
    assert waited
    row = waited[-1]
    job = run.result.runs[order[row]].job
    js(page, f"(document.getElementById('why-search').value = {json.dumps(job.name)}, "
             "document.getElementById('why-search').dispatchEvent(new Event('change')), true)")  # fmt: skip
    assert js(page, "document.getElementById('why-job').textContent").startswith(f"{job.name} under pod-by-pod:")
    cells = js(
        page,
        "Array.from(document.querySelectorAll('#why-table tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))",
    )
    reasons = run.timelines[order[row]].reasons
    assert [(c[0], c[3], c[4], c[5]) for c in cells] == [
        (f"{w.time / 3600:.2f}", str(w.bound), w.reason, w.message) for w in reasons
    ]
    # Clicking a job's bar in the timeline shows the same panel for that job.
    other = waited[0]
    clicked = js(page, f"(document.getElementById('chart-gantt').emit('plotly_click', {{points: [{{customdata: {other}}}]}}), "
                       "document.getElementById('why-job').textContent)")  # fmt: skip
    assert clicked.startswith(run.result.runs[order[other]].job.name + " under pod-by-pod:")
    assert page.problems() == []
