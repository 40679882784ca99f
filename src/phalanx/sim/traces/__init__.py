"""Public GPU-cluster trace formats, read from the files their publishers ship, as simulation jobs: Microsoft
Philly's ``cluster_job_log`` (``philly``) and SenseTime Helios's ``cluster_log.csv`` (``helios``). phalanx's own
CSV/YAML format stays with ``sim.workload``. The field mapping and its assumptions are in docs/simulate.md."""

from __future__ import annotations

from pathlib import Path

from phalanx.api.errors import InputError
from phalanx.sim.traces.common import LoadedTrace, TraceWindow
from phalanx.sim.traces.helios import HELIOS_COLUMNS, load_helios
from phalanx.sim.traces.philly import load_philly

__all__ = ["FORMATS", "LoadedTrace", "TraceWindow", "detect_format", "load_jobs"]

FORMATS = ("auto", "phalanx", "philly", "helios")


def detect_format(path: str) -> str:
    """``philly`` for a JSON list of jobs with ``jobid`` and ``attempts``, ``helios`` for a CSV whose header has
    Helios's columns, else ``phalanx``. Reads the file's first few kilobytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError as exc:
        raise InputError([f"{path}: cannot read workload: {exc.strerror or exc}"]) from exc
    text = head.lstrip()
    if text.startswith("[") and '"jobid"' in text and '"attempts"' in text:
        return "philly"
    first = text.splitlines()[0] if text else ""
    columns = {c.strip() for c in first.split(",")}
    if columns >= HELIOS_COLUMNS:
        return "helios"
    return "phalanx"


def load_jobs(path: str, fmt: str = "auto", window: TraceWindow | None = None) -> LoadedTrace | None:
    """The jobs of a public-format trace (None for phalanx's own format, which the scenario reads with its node
    events). ``window`` keeps the jobs submitted in it, its start becoming time 0."""
    if fmt not in FORMATS:
        raise InputError([f'--workload-format: unknown format "{fmt}" (known: {", ".join(FORMATS)})'])
    chosen = detect_format(path) if fmt == "auto" else fmt
    if chosen == "phalanx":
        if window is not None:
            raise InputError([f"{path}: --trace-window applies to the public trace formats (philly, helios)"])
        if not Path(path).is_file():
            raise InputError([f"{path}: no such trace file"])
        return None
    trace = load_philly(path) if chosen == "philly" else load_helios(path)
    return trace.within(window) if window is not None else trace
