// phalanx simulate's report: draws the charts from the JSON in #report-data with plotly.js (inlined above this
// script, so the file opens offline). Nothing is fetched. window.phalanxReport.ready turns true once every chart
// is drawn.
(function () {
  "use strict";

  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  const CLASS_COLORS = {"1 GPU": "#4c9be8", "2-8 GPUs": "#2ca02c", "multi-node gang": "#9467bd", "CPU only": "#8c8c8c"};
  const WAITING_COLOR = "#c8ccd2";
  const CUT_SHORT = {preemption: "preempted", drain: "drained", nodeFailure: "node failed", podFailure: "pod failed"};
  const CONFIG = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"]};
  const FONT = {family: "system-ui, -apple-system, Segoe UI, sans-serif", size: 12, color: "#222"};
  const drawing = [];
  let trace = DATA.traces[0];

  function color(i) {
    return COLORS[i % COLORS.length];
  }

  function axis(title, extra) {
    return Object.assign({title: {text: title}, ticks: "outside", showline: true, linecolor: "#888",
      gridcolor: "#e6e6e6", zeroline: false, automargin: true}, extra || {});
  }

  function layout(title, xTitle, yTitle, extra) {
    return Object.assign({title: {text: title, x: 0, xanchor: "left", font: {size: 15}}, font: FONT,
      xaxis: axis(xTitle, {hoverformat: ".2f"}), yaxis: axis(yTitle), margin: {l: 70, r: 30, t: 48, b: 56},
      legend: {orientation: "h", y: -0.22}, hovermode: "x unified", height: 340,
      paper_bgcolor: "#fff", plot_bgcolor: "#fff"}, extra || {});
  }

  function plot(id, data, lay) {
    const el = document.getElementById(id);
    if (!el) {
      return;
    }
    drawing.push(Plotly.react(el, data, lay, CONFIG));
  }

  function fixed(value, digits) {
    return Number(value).toFixed(digits);
  }

  // --- over time -------------------------------------------------------------------------------------------------

  function stepLines(key, unit) {
    return trace.policies.map((name, i) => ({
      type: "scatter", mode: "lines", name: name, x: trace.series[i].t, y: trace.series[i][key],
      line: {shape: "hv", width: 1.8, color: color(i)},
      hovertemplate: "%{y} " + unit + "<extra>" + name + "</extra>"
    }));
  }

  function overTime() {
    const seed = " (seed " + trace.seed + ")";
    const gpus = stepLines("allocated", "GPUs");
    const capacity = Math.max.apply(null, trace.capacity);
    const last = Math.max.apply(null, trace.series.map((s) => s.t[s.t.length - 1] || 0));
    gpus.push({type: "scatter", mode: "lines", name: "capacity", x: [0, last], y: [capacity, capacity],
      line: {dash: "dot", color: "#555", width: 1}, hovertemplate: "%{y} GPUs<extra>capacity</extra>"});
    plot("chart-gpus", gpus, layout("GPUs allocated" + seed, "time (h)", "GPUs allocated"));
    plot("chart-queue", stepLines("queued", "jobs"), layout("Jobs waiting to start" + seed, "time (h)", "jobs waiting"));
    plot("chart-held", stepLines("held", "GPUs"),
      layout("GPUs held by jobs that cannot start yet (partial gangs)" + seed, "time (h)", "GPUs held"));
    plot("chart-jct", cdf(trace.jct, "h"), layout("Job completion time, CDF" + seed,
      "job completion time (h, log scale)", "jobs completed (% of all jobs)",
      {xaxis: axis("job completion time (h, log scale)", {type: "log", dtick: "D2"}), hovermode: "closest"}));
    plot("chart-queue-cdf", cdf(trace.queue, "min"), layout("Queueing delay, CDF" + seed,
      "queueing delay (min)", "jobs started (% of all jobs)", {hovermode: "closest"}));
  }

  function cdf(curves, unit) {
    return trace.policies.map((name, i) => ({type: "scatter", mode: "lines", name: name, x: curves[i].x,
      y: curves[i].y, line: {shape: "hv", color: color(i)},
      hovertemplate: "%{y:.1f} % within %{x:.2f} " + unit + "<extra>" + name + "</extra>"}));
  }

  function racks() {
    const box = document.getElementById("racks");
    box.replaceChildren();
    trace.policies.forEach((name, i) => {
      const r = trace.racks[i];
      if (!r.names.length) {
        return;
      }
      const div = document.createElement("div");
      div.id = "chart-racks-" + i;
      div.className = "chart";
      box.appendChild(div);
      plot(div.id, [{type: "heatmap", x: r.t, y: r.names, z: r.z, zmin: 0, zmax: 100, colorscale: "Blues", reversescale: true,
        colorbar: {title: {text: "% of GPUs<br>allocated"}, ticksuffix: " %"},
        hovertemplate: "%{y}<br>%{x:.2f} h: %{z:.0f} % allocated<extra></extra>"}],
      layout("Rack GPU allocation over time: " + name, "time (h)", "rack",
        {height: Math.min(160 + 18 * r.names.length, 700), hovermode: "closest"}));
    });
  }

  // --- comparison ------------------------------------------------------------------------------------------------

  function meanSd(values) {
    const n = values.length;
    const mean = values.reduce((a, b) => a + b, 0) / n;
    const sd = n > 1 ? Math.sqrt(values.reduce((a, b) => a + (b - mean) * (b - mean), 0) / (n - 1)) : 0;
    return [mean, sd, n];
  }

  function multiples() {
    const heads = DATA.headlines;
    const traces = Array.from(new Set(DATA.runs.map((r) => r.trace)));
    const policies = Array.from(new Set(DATA.runs.map((r) => r.policy)));
    const several = traces.length > 1;
    const cols = 4;
    const rows = Math.ceil(heads.length / cols);
    const data = [];
    const annotations = [];
    const lay = {font: FONT, height: (several ? 310 : 270) * rows + 70, barmode: "group", hovermode: "closest",
      margin: {l: 50, r: 20, t: 30, b: several ? 70 : 30}, legend: {orientation: "h", y: 1.04, yanchor: "bottom"}};
    heads.forEach((h, k) => {
      const ax = k === 0 ? "" : String(k + 1);
      const col = k % cols;
      const row = Math.floor(k / cols);
      const x0 = col / cols + 0.05;
      const x1 = (col + 1) / cols - 0.02;
      const y1 = 1 - row / rows - 0.12;
      const y0 = 1 - (row + 1) / rows + (several ? 0.16 : 0.03);
      lay["xaxis" + ax] = axis("", {domain: [x0, x1], anchor: "y" + ax, type: "category", showticklabels: several,
        tickangle: -30});
      lay["yaxis" + ax] = axis(h.unit, {domain: [y0, y1], anchor: "x" + ax, rangemode: "tozero"});
      annotations.push({text: "<b>" + h.label + "</b><br>" + h.better + " is better", x: (x0 + x1) / 2, y: y1 + 0.015,
        xref: "paper", yref: "paper", showarrow: false, yanchor: "bottom", font: {size: 11}});
      const stats = (t, p) => meanSd(DATA.runs.filter((r) => r.trace === t && r.policy === p).map((r) => r.values[k]));
      const bar = (name, xs, ss, colorValue, legend) => ({type: "bar", name: name, legendgroup: name, showlegend: legend,
        x: xs, y: ss.map((s) => s[0]), xaxis: "x" + ax, yaxis: "y" + ax, marker: {color: colorValue},
        error_y: {type: "data", array: ss.map((s) => s[1]), visible: ss.some((s) => s[2] > 1)},
        customdata: ss.map((s) => [s[1], s[2]]),
        hovertemplate: "%{x}: %{y:.2f} " + h.unit + " (SD %{customdata[0]:.2f} over %{customdata[1]} seed(s))" +
          "<extra>" + name + "</extra>"});
      if (several) {  // bars grouped by policy, one colour per trace
        traces.forEach((t, ti) => data.push(bar(t, policies, policies.map((p) => stats(t, p)), color(ti), k === 0)));
      } else {  // one bar per policy, in the policy's colour everywhere in the report
        policies.forEach((p, pi) => data.push(bar(p, [p], [stats(traces[0], p)], color(pi), k === 0)));
      }
    });
    lay.annotations = annotations;
    plot("chart-multiples", data, lay);
  }

  function waiting() {
    const totals = {};
    trace.waiting.forEach((w) => Object.entries(w).forEach(([k, v]) => {
      totals[k] = (totals[k] || 0) + v;
    }));
    const top = Object.keys(totals).sort((a, b) => totals[b] - totals[a] || (a < b ? -1 : 1)).slice(0, 8);
    const data = top.map((cat, c) => ({type: "bar", orientation: "h", name: cat, y: trace.policies,
      x: trace.waiting.map((w) => w[cat] || 0), marker: {color: color(c + 2)},
      showlegend: true, hovertemplate: "%{y}: %{x:.1f} job-hours<extra>" + cat + "</extra>"}));
    const others = trace.waiting.map((w) => Object.entries(w).filter(([k]) => !top.includes(k))
      .reduce((a, [, v]) => a + v, 0));
    if (others.some((v) => v > 0)) {
      data.push({type: "bar", orientation: "h", name: "other reasons", y: trace.policies, x: others,
        marker: {color: "#999"}, hovertemplate: "%{y}: %{x:.1f} job-hours<extra>other reasons</extra>"});
    }
    plot("chart-waiting", data, layout("Why jobs waited: job-hours by the scheduler's reason (seed " + trace.seed + ")",
      "job-hours waiting", "", {barmode: "stack", hovermode: "closest",
        height: 170 + 38 * trace.policies.length, yaxis: axis("", {autorange: "reversed", type: "category"})}));
  }

  // --- jobs: timeline and why they waited ------------------------------------------------------------------------

  function describe(row, span) {
    const j = trace.jobs;
    const what = span[1] === "queued" ? "waiting" : "running";
    const ended = span[4] === "started" ? "started" : CUT_SHORT[span[4]] || span[4];
    return "<b>" + j.name[row] + "</b><br>" + j.gpus[row] + " GPU(s) x " + j.pods[row] + " pod(s), " + j.class[row] +
      (j.queue[row] ? ", queue " + j.queue[row] : "") + "<br>" + what + " " + fixed(span[2], 2) + " h to " +
      fixed(span[3], 2) + " h (" + fixed((span[3] - span[2]) * 60, 1) + " min), then " + ended;
  }

  function gantt() {
    const p = Number(document.getElementById("gantt-policy").value);
    const by = document.getElementById("gantt-colour").value;
    const spans = trace.gantt[p];
    const groups = new Map();
    const add = (key, colorValue, span) => {
      if (!groups.get(key)) {
        groups.set(key, {color: colorValue, base: [], x: [], y: [], text: [], customdata: []});
      }
      const g = groups.get(key);
      g.base.push(span[2]);
      g.x.push(Math.max(span[3] - span[2], 0));
      g.y.push(span[0]);
      g.text.push(describe(span[0], span));
      g.customdata.push(span[0]);
    };
    const queues = Array.from(new Set(trace.jobs.queue)).sort();
    // Legend in a fixed order: waiting first, then the job classes small to large.
    ["waiting", ...Object.keys(CLASS_COLORS).map((c) => "running: " + c)].forEach((key) => groups.set(key, null));
    spans.forEach((s) => {
      if (s[1] === "queued") {
        add("waiting", WAITING_COLOR, s);
      } else if (by === "queue") {
        const q = trace.jobs.queue[s[0]] || "(none)";
        add("running: queue " + q, color(queues.indexOf(trace.jobs.queue[s[0]])), s);
      } else {
        const c = trace.jobs.class[s[0]];
        add("running: " + c, CLASS_COLORS[c], s);
      }
    });
    const data = Array.from(groups.entries()).filter(([, g]) => g).map(([name, g]) => ({type: "bar", orientation: "h", name: name,
      base: g.base, x: g.x, y: g.y, text: g.text, customdata: g.customdata, textposition: "none",
      marker: {color: g.color}, width: 0.8, hovertemplate: "%{text}<extra></extra>"}));
    const marks = spans.filter((s) => s[1] === "running" && (CUT_SHORT[s[4]] || s[4] === "failed"));
    if (marks.length) {
      data.push({type: "scatter", mode: "markers", name: "attempt cut short (restarted) or failed",
        x: marks.map((s) => s[3]), y: marks.map((s) => s[0]), customdata: marks.map((s) => s[0]),
        text: marks.map((s) => describe(s[0], s)), marker: {symbol: "x", size: 8, color: "#b00020"},
        hovertemplate: "%{text}<extra></extra>"});
    }
    const n = trace.jobs.name.length;
    const shown = n < trace.jobCount ? "the first " + n + " of " + trace.jobCount + " jobs" : "all " + n + " jobs";
    const ticks = n <= 40 ? {tickvals: trace.jobs.name.map((_, k) => k), ticktext: trace.jobs.name} : {showticklabels: false};
    plot("chart-gantt", data, layout("Job timeline: " + trace.policies[p] + " (seed " + trace.seed + "; " + shown +
      " by arrival; click a job to see why it waited)", "time (h)", "jobs by arrival",
    {barmode: "overlay", hovermode: "closest", height: Math.min(200 + 7 * n, 4200),
      yaxis: axis("jobs by arrival", Object.assign({autorange: "reversed", zeroline: false}, ticks)),
      legend: {orientation: "h", y: 1.0, yanchor: "bottom", x: 1, xanchor: "right"}}));
  }

  function why(row) {
    const p = Number(document.getElementById("gantt-policy").value);
    const j = trace.jobs;
    const head = document.getElementById("why-job");
    const body = document.querySelector("#why-table tbody");
    body.replaceChildren();
    if (row === null || row < 0 || row >= j.name.length) {
      head.textContent = "Pick a job: type its name above or click its bar in the timeline.";
      return;
    }
    document.getElementById("why-search").value = j.name[row];
    const spans = trace.gantt[p].filter((s) => s[0] === row);
    const waited = spans.filter((s) => s[1] === "queued").reduce((a, s) => a + s[3] - s[2], 0);
    const cut = spans.filter((s) => CUT_SHORT[s[4]]).map((s) => CUT_SHORT[s[4]]);
    head.textContent = j.name[row] + " under " + trace.policies[p] + ": " + j.gpus[row] + " GPU(s) x " + j.pods[row] +
      " pod(s) (" + j.class[row] + "), submitted at " + fixed(j.submit[row], 2) + " h, waited " +
      fixed(waited * 60, 1) + " min in all" + (cut.length ? "; attempts cut short: " + cut.join(", ") : "") + ".";
    const reasons = trace.why[p][String(row)] || [];
    if (!reasons.length) {
      const tr = body.insertRow();
      const td = tr.insertCell();
      td.colSpan = 6;
      td.textContent = "It never waited: the scheduler placed it as soon as it arrived.";
      return;
    }
    reasons.forEach((r, k) => {
      const span = spans.find((s) => s[1] === "queued" && s[2] <= r[0] && r[0] <= s[3]);
      const next = k + 1 < reasons.length ? reasons[k + 1][0] : Infinity;
      const until = Math.min(next, span ? span[3] : r[0]);
      const cells = [fixed(r[0], 2), fixed(until, 2), fixed((until - r[0]) * 60, 1), String(r[3]),
        trace.strings[r[1]], trace.strings[r[2]]];
      const tr = body.insertRow();
      cells.forEach((c) => {
        tr.insertCell().textContent = c;
      });
    });
  }

  function longestWait(p) {
    let best = null;
    let most = -1;
    trace.gantt[p].forEach((s) => {
      if (s[1] === "queued" && s[3] - s[2] > most) {
        most = s[3] - s[2];
        best = s[0];
      }
    });
    return best;
  }

  // --- wiring ----------------------------------------------------------------------------------------------------

  function options(select, labels) {
    select.replaceChildren();
    labels.forEach((label, i) => select.add(new Option(label, String(i))));
  }

  function drawTrace() {
    document.getElementById("trace-title").textContent = trace.title;
    overTime();
    waiting();
    racks();
    const policy = document.getElementById("gantt-policy");
    options(policy, trace.policies);
    const names = document.getElementById("why-names");
    names.replaceChildren();
    trace.jobs.name.forEach((name) => names.appendChild(new Option(name)));
    document.getElementById("gantt-colour").querySelector("option[value=queue]").disabled =
      !trace.jobs.queue.some((q) => q);
    jobs();
  }

  function jobs() {
    gantt();
    why(longestWait(Number(document.getElementById("gantt-policy").value)));
  }

  function wire() {
    const select = document.getElementById("trace");
    options(select, DATA.traces.map((t) => t.name));
    select.closest("label").hidden = DATA.traces.length < 2;
    select.addEventListener("change", () => {
      trace = DATA.traces[Number(select.value)];
      drawTrace();
      Promise.all(drawing).then(hookClicks);
    });
    document.getElementById("gantt-policy").addEventListener("change", () => {
      jobs();
      Promise.all(drawing).then(hookClicks);
    });
    document.getElementById("gantt-colour").addEventListener("change", () => {
      gantt();
      Promise.all(drawing).then(hookClicks);
    });
    document.getElementById("why-search").addEventListener("change", (ev) => {
      why(trace.jobs.name.indexOf(ev.target.value));
    });
  }

  function hookClicks() {
    const el = document.getElementById("chart-gantt");
    el.removeAllListeners && el.removeAllListeners("plotly_click");
    el.on("plotly_click", (ev) => {
      if (ev.points && ev.points.length) {
        why(Number(ev.points[0].customdata));
      }
    });
  }

  window.phalanxReport = {ready: false, data: DATA};
  wire();
  multiples();
  drawTrace();
  Promise.all(drawing).then(() => {
    hookClicks();
    window.phalanxReport.ready = true;
  });
})();
