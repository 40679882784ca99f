"""The HTML report: one self-contained file (inline SVG and CSS, no scripts, nothing fetched at view time) with
the comparison table and the charts: GPU allocation over time, queue length, job completion time CDF and a heat
map of rack allocation over time."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.sim.metrics import COMPARISON_HEADER, comparison_rows
from phalanx.sim.simulator import SimulationResult

__all__ = ["render_html"]

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
_W, _H, _PAD = 720, 260, 48
_MAX_POINTS = 600


def render_html(results: Sequence[SimulationResult], summaries: Sequence[dict[str, Any]], title: str) -> str:
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        _table(summaries),
        _causes(summaries),
        _chart(
            "GPUs allocated over time",
            "hours",
            "GPUs",
            [(r.policy, _series(r, lambda s: s.allocated_gpus)) for r in results],
        ),
        _chart(
            "Jobs waiting over time",
            "hours",
            "jobs",
            [(r.policy, _series(r, lambda s: s.queued_jobs)) for r in results],
        ),
        _chart("Job completion time (CDF)", "hours", "fraction of jobs", [(r.policy, _cdf(r)) for r in results]),
        *[_heatmap(r) for r in results if r.racks],
    ]
    return _PAGE.format(title=html.escape(title), body="\n".join(parts))


def _table(summaries: Sequence[dict[str, Any]]) -> str:
    body = []
    for row in comparison_rows(list(summaries)):
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    header = "".join(f"<th>{html.escape(h)}</th>" for h in COMPARISON_HEADER)
    return f'<table id="summary"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _causes(summaries: Sequence[dict[str, Any]]) -> str:
    """Restarts and GPU-hours lost by cause, per policy: shown only when something was cut short."""
    if not any(r["restarts"] or r["failedJobs"] for r in summaries):
        return ""
    causes = list(summaries[0]["restartsByCause"])
    header = "".join(f"<th>{html.escape(c)}: restarts (GPU-h lost)</th>" for c in causes)
    body = []
    for r in summaries:
        cells = [r["policy"]] + [f"{r['restartsByCause'][c]} ({r['lostGpuHoursByCause'][c]})" for c in causes]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return f'<table id="causes"><thead><tr><th>policy</th>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _series(r: SimulationResult, value: Any) -> tuple[np.ndarray, np.ndarray]:
    t = np.array([s.time for s in r.samples], dtype=float) / 3600
    v = np.array([value(s) for s in r.samples], dtype=float)
    if len(t) > _MAX_POINTS:
        idx = np.linspace(0, len(t) - 1, _MAX_POINTS).astype(int)
        t, v = t[idx], v[idx]
    return t, v


def _cdf(r: SimulationResult) -> tuple[np.ndarray, np.ndarray]:
    jct = np.sort([x.end - x.job.submit for x in r.runs if x.end is not None]) / 3600
    if len(jct) == 0:
        return np.zeros(0), np.zeros(0)
    frac = np.arange(1, len(jct) + 1) / len(r.runs)
    if len(jct) > _MAX_POINTS:
        idx = np.linspace(0, len(jct) - 1, _MAX_POINTS).astype(int)
        jct, frac = jct[idx], frac[idx]
    return jct, frac


def _chart(title: str, xlabel: str, ylabel: str, lines: list[tuple[str, tuple[np.ndarray, np.ndarray]]]) -> str:
    xs = np.concatenate([x for _, (x, _) in lines if len(x)] or [np.zeros(1)])
    ys = np.concatenate([y for _, (_, y) in lines if len(y)] or [np.zeros(1)])
    x0, x1 = float(xs.min()), float(xs.max()) or 1.0
    y1 = float(ys.max()) or 1.0

    def px(x: float, y: float) -> str:
        sx = _PAD + (x - x0) / ((x1 - x0) or 1) * (_W - 2 * _PAD)
        sy = _H - _PAD - y / y1 * (_H - 2 * _PAD)
        return f"{sx:.1f},{sy:.1f}"

    paths, legend = [], []
    for i, (name, (x, y)) in enumerate(lines):
        color = _COLORS[i % len(_COLORS)]
        points = " ".join(px(a, b) for a, b in zip(x.tolist(), y.tolist(), strict=True))
        paths.append(
            f'<polyline class="series" data-policy="{html.escape(name)}" data-points="{len(x)}" '
            f'fill="none" stroke="{color}" stroke-width="1.6" points="{points}"/>'
        )
        legend.append(f'<tspan fill="{color}">■ {html.escape(name)}</tspan> ')
    axes = (
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#444"/>'
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#444"/>'
        f'<text x="{_W / 2}" y="{_H - 12}" text-anchor="middle">{xlabel} ({x0:.1f} to {x1:.1f})</text>'
        f'<text x="12" y="{_PAD - 12}">{ylabel} (max {y1:g})</text>'
        f'<text x="{_W - _PAD}" y="{_PAD - 12}" text-anchor="end">{"".join(legend)}</text>'
    )
    return (
        f'<figure><figcaption>{html.escape(title)}</figcaption><svg class="chart" viewBox="0 0 {_W} {_H}" '
        f'width="{_W}" height="{_H}">{axes}{"".join(paths)}</svg></figure>'
    )


def _heatmap(r: SimulationResult) -> str:
    samples = r.samples
    if not samples:
        return ""
    cols = min(len(samples), 200)
    idx = np.linspace(0, len(samples) - 1, cols).astype(int)
    racks = len(r.racks)
    cw, ch = max(1.0, (_W - 2 * _PAD) / cols), max(4.0, min(14.0, 300 / max(racks, 1)))
    cells = []
    for c, i in enumerate(idx.tolist()):
        for k, v in enumerate(samples[i].rack_allocation):
            shade = int(255 - 200 * v)
            cells.append(
                f'<rect x="{_PAD + c * cw:.1f}" y="{20 + k * ch:.1f}" width="{cw:.1f}" height="{ch:.1f}" '
                f'fill="rgb({shade},{shade},255)"/>'
            )
    height = 40 + racks * ch
    return (
        f"<figure><figcaption>Rack GPU allocation over time: {html.escape(r.policy)} (darker = fuller; one row "
        f'per rack)</figcaption><svg class="heatmap" viewBox="0 0 {_W} {height:.0f}" width="{_W}" '
        f'height="{height:.0f}">{"".join(cells)}</svg></figure>'
    )


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 2em; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ margin: 1.5em 0; }} figcaption {{ font-weight: 600; margin-bottom: .4em; }}
svg text {{ font-size: 11px; fill: #333; }}
</style></head>
<body>
{body}
<p>Generated by phalanx simulate. Self-contained: no scripts, nothing loaded from the network.</p>
</body></html>
"""
