"""The HTML report: one self-contained file that opens offline. The comparison tables are plain HTML; the charts
are drawn by plotly.js, inlined from the plotly package (axes with ticks and units, legends, hover values, zoom),
from the run's data embedded as JSON (``report_data``): small multiples of the headline metrics, GPUs, waiting
jobs and partial gangs over time, completion-time and queueing-delay CDFs, a per-job timeline (Gantt) with the
scheduler's reasons for each wait, waiting time by reason, and rack allocation heat maps."""

from __future__ import annotations

import html
import importlib
import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from phalanx.sim.metrics import (
    COMPARISON_HEADER,
    MIN_COUNT_HEADER,
    aggregate,
    aggregate_tables,
    comparison_rows,
    min_count_rows,
)
from phalanx.sim.report_data import payload
from phalanx.sim.runs import RunOutput, sweep_title

__all__ = ["render_report"]


def render_report(outputs: Sequence[RunOutput], title: str | None = None) -> str:
    """The page for the runs of one sweep (at least one run)."""
    heading = title or sweep_title(outputs)
    data = json.dumps(payload(outputs), separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")
    return _PAGE.format(
        title=html.escape(heading),
        meta=html.escape(_meta(outputs)),
        tables="\n".join(_trace_tables(outputs)),
        css=_asset("report.css"),
        plotly=_plotly_js(),
        data=data,
        script=_asset("report.js"),
        version=html.escape(_plotly_version()),
    )


def _meta(outputs: Sequence[RunOutput]) -> str:
    traces = list(dict.fromkeys(o.key.trace for o in outputs))
    seeds = sorted({o.key.seed for o in outputs})
    policies = list(dict.fromkeys(o.key.policy for o in outputs))
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)})"
    return f"{len(outputs)} run(s): {', '.join(traces)}; {seed_text}; policies {', '.join(policies)}"


def _trace_tables(outputs: Sequence[RunOutput]) -> list[str]:
    """Per trace: the comparison of its first seed, the headline metrics over seeds, and restart causes."""
    parts: list[str] = []
    traces: dict[str, list[RunOutput]] = {}
    for o in outputs:
        traces.setdefault(o.key.trace, []).append(o)
    for k, (name, runs) in enumerate(traces.items()):
        seed = runs[0].key.seed
        first = [o.summary for o in runs if o.key.seed == seed]
        parts.append(f"<h3>{html.escape(name)}: {html.escape(runs[0].title)}</h3>")
        rows = comparison_rows(first)
        parts.append(_table("summary" if k == 0 else f"summary-{k}", COMPARISON_HEADER, rows, f"seed {seed}"))
        seeds = {o.key.seed for o in runs}
        if len(seeds) > 1:
            by_policy: dict[str, list[dict[str, Any]]] = {}
            for o in runs:
                by_policy.setdefault(o.key.policy, []).append(o.summary)
            for title, header, body in aggregate_tables([(p, aggregate(s)) for p, s in by_policy.items()]):
                parts.append(_table(f"aggregate-{k}", header, body, f"{title} ({len(seeds)} seeds)"))
        parts.append(_causes(first, k))
        parts.append(_min_count_changes(first, k))
    return parts


def _table(table_id: str, header: Sequence[str], rows: Sequence[Sequence[str]], caption: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<table id="{table_id}" class="compare"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _causes(summaries: Sequence[dict[str, Any]], k: int) -> str:
    """Restarts and GPU-hours lost by cause, per policy: shown only when something was cut short."""
    if not any(r["restarts"] or r["failedJobs"] for r in summaries):
        return ""
    causes = list(summaries[0]["restartsByCause"])
    header = ["policy", *(f"{c}: restarts (GPU-h lost)" for c in causes)]
    rows = [
        [str(r["policy"]), *(f"{r['restartsByCause'][c]} ({r['lostGpuHoursByCause'][c]})" for c in causes)]
        for r in summaries
    ]
    return _table("causes" if k == 0 else f"causes-{k}", header, rows, "restarts and lost GPU-hours by cause")


def _min_count_changes(summaries: Sequence[dict[str, Any]], k: int) -> str:
    """The trace's minCount changes (elastic gangs) and what each did to queueing, per policy: shown only when the
    trace has some."""
    rows = min_count_rows(summaries)
    if not rows:
        return ""
    table_id = "min-count" if k == 0 else f"min-count-{k}"
    return _table(table_id, MIN_COUNT_HEADER, rows, "minCount changes (trace jobEvents)")


@cache
def _asset(name: str) -> str:
    return resources.files("phalanx.sim").joinpath("report_assets", name).read_text(encoding="utf-8")


@cache
def _plotly_js() -> str:
    """plotly.js as the plotly package ships it (minified), to inline: the report fetches nothing."""
    offline = importlib.import_module("plotly.offline")  # untyped package: the one call is checked by the tests
    return str(offline.get_plotlyjs())


def _plotly_version() -> str:
    return str(importlib.import_module("plotly").__version__)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{css}</style></head>
<body>
<header><h1>{title}</h1><p class="meta">{meta}</p>
<nav><a href="#comparison">Policies compared</a> <a href="#time">Over time</a> <a href="#jobs">Jobs and why they
waited</a> <a href="#rack-section">Racks</a></nav></header>
<noscript><p class="warn">The charts need JavaScript (inlined in this file; nothing is fetched). The tables below
do not.</p></noscript>
<section id="comparison"><h2>Policies compared</h2>
{tables}
<div id="chart-multiples" class="chart"></div>
</section>
<section id="time"><h2>Over time</h2>
<p class="controls"><label>Trace <select id="trace"></select></label> <span id="trace-title"></span></p>
<div id="chart-gpus" class="chart"></div>
<div id="chart-queue" class="chart"></div>
<div id="chart-held" class="chart"></div>
<div class="pair"><div id="chart-queue-cdf" class="chart"></div><div id="chart-jct" class="chart"></div></div>
</section>
<section id="jobs"><h2>Jobs and why they waited</h2>
<p class="controls"><label>Policy <select id="gantt-policy"></select></label>
<label>Colour running jobs by <select id="gantt-colour"><option value="class">job class</option>
<option value="queue">queue (virtual cluster)</option></select></label></p>
<div id="chart-gantt" class="chart"></div>
<h3>Why it waited</h3>
<p class="controls"><label>Job <input id="why-search" list="why-names" size="40" autocomplete="off"></label>
<datalist id="why-names"></datalist></p>
<p id="why-job"></p>
<table id="why-table"><thead><tr><th>from (h)</th><th>to (h)</th><th>for (min)</th><th>pods bound</th>
<th>reason</th><th>message (the scheduler's)</th></tr></thead><tbody></tbody></table>
<div id="chart-waiting" class="chart"></div>
</section>
<section id="rack-section"><h2>Racks</h2><div id="racks"></div></section>
<footer>Generated by phalanx simulate. Charts by plotly.js (from the plotly {version} Python package), inlined:
this file opens offline and loads nothing from the network.</footer>
<script>{plotly}</script>
<script type="application/json" id="report-data">{data}</script>
<script>
{script}</script>
</body></html>
"""
