"""Every command that reads user input, as a fuzz target: a seed that is valid, the command line that reads it,
and the rules its fields follow (``mutations.Schema``). ``cases`` turns a target into every mutated input,
``run`` runs one (in this process, or as a subprocess under a timeout) and ``classify`` judges the outcome by
the rule of docs/validation.md: exit 0, or exit 2 with every line naming the file or flag; never a traceback,
exit 1, a hang, Python's own text or a half-written output.

Targets owned elsewhere are listed in ``PENDING`` with the reason; ``all_targets(pending=True)`` includes them
(the campaign measures them, the pytest suite does not fail on them).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from mutations import (
    ALWAYS,
    ANY,
    HOSTILE,
    OPTIONAL_REFERENCE,
    Rule,
    Schema,
    dns_name,
    integer,
    mutations_of,
    number,
    one_of,
    quantity,
    text,
)

from phalanx.cli import cli

SEEDS = Path(__file__).resolve().parent / "seeds"
ROOT = SEEDS.parent.parent.parent
INT32 = (-(2**31), 2**31 - 1)
MAX_SECONDS = 3_155_760_000
MAX_HOURS = 876_600
CLEAN = ("accepted", "rejected")

# --- schemas ------------------------------------------------------------------------------------------------------

_K8S_INT32 = integer(*INT32, strict=True)
KUBERNETES = Schema(
    rules=(
        (r"(\w+\.)*apiVersion|kind", ANY),  # an object skipped is a warning naming file and line
        (r"metadata\.name", dns_name()),
        (r"spec\.devices\[\*\]\.capacity\.[^.]+\.value", quantity(negative=True)),  # any quantity, as upstream
        (r"spec\.devices\[\*\]\.capacity\.[^.]+", ANY),  # a DeviceCapacity object, not a quantity
        (r".*\.(requests|limits|allocatable|capacity|overhead)\.[^.]+", quantity()),
        (r"spec\.priority", _K8S_INT32),
        (r"value", integer(INT32[0], 1_000_000_000, required=True, strict=True)),
        (r".*\.gang\.minCount", integer(1, INT32[1], required=True, strict=True)),
        (r".*\.maxSkew", integer(1, INT32[1], required=True, strict=True)),
        (r"spec\.(parallelism|completions|backoffLimit)", integer(0, 100_000, strict=True)),
        (r".*\.containerPort", integer(1, 65535, required=True, strict=True)),
    ),
    strict=False,
)

_EVENTS: tuple[tuple[str, Rule], ...] = (
    (r"nodeEvents\[\*\]", ALWAYS),
    (r"nodeEvents\[\*\]\.time", number(0, MAX_SECONDS, required=True)),
    (r"nodeEvents\[\*\]\.duration", number(0, MAX_SECONDS, above=True)),
    (r"nodeEvents\[\*\]\.(node|pool)", ALWAYS),  # no hostile value names a node or pool of the cluster
    (r"nodeEvents\[\*\]\.count", integer(1, INT32[1])),
    (r"nodeEvents\[\*\]\.action", one_of("fail", "drain", "recover")),
)
_ATTRIBUTE = Rule(lambda v: not isinstance(v, str | int) or len(str(v)) > 64 or v in (2**63, 10**30), nullable=False)
CLUSTER = Schema(
    rules=(
        (r"pools|pools\[\*\]|pools\[\*\]\.allocatable", ALWAYS),
        (r"pools\[\*\]\.devices", OPTIONAL_REFERENCE),  # optional, and no hostile value is a devices mapping
        (r"pools\[0\]\.name", ALWAYS),  # the node events name its nodes
        (r"pools\[\*\]\.name", dns_name(50, strict=False)),
        (r"pools\[0\]\.count", integer(2, 100_000, required=True)),  # gpu-0001 must exist
        (r"pools\[\*\]\.count", integer(0, 100_000, required=True)),
        (r"pools\[\*\]\.allocatable\.[^.]+", quantity()),
        (r"pools\[\*\]\.(nodesPerRack|racksPerBlock)", integer(0, 100_000)),
        (r"pools\[\*\]\.devices\.(productName)", text(64)),
        (r"pools\[\*\]\.devices\.memory", quantity(nullable=True)),
        (r"pools\[\*\]\.devices\.numaNodes", integer(1, 128)),
        (r"pools\[\*\]\.devices\.attributes", Rule(lambda v: not isinstance(v, dict))),  # {"a": 1} is one
        (r"pools\[\*\]\.devices\.attributes\.[^.]+", _ATTRIBUTE),
        (r"nodeEvents|failures", OPTIONAL_REFERENCE),
        *_EVENTS,
        (r"failures\.mtbfHours", number(0, MAX_HOURS, required=True, above=True)),
        (r"failures\.repairHours", number(0, MAX_HOURS, above=True)),
    ),
    strict=True,
    open_maps=(r"pools\[\*\]\.devices\.attributes",),
)

_BOOL = one_of(True, False, "true", "false", "True", "False", required=False)
_COLUMNS: tuple[tuple[str, Rule], ...] = (
    ("name", dns_name(63, required=False, strict=False)),
    ("submit|duration", number(0, MAX_SECONDS, required=True)),
    ("pods", integer(1, 100_000, required=True)),
    ("cpu|memory", quantity(nullable=True)),
    ("gpus", integer(0, INT32[1])),
    ("minCount", integer(0, 1)),  # at most pods, and every seed row has a pod
    ("priority", integer(*INT32)),
    ("topology|gpuSelector|matchAttribute", OPTIONAL_REFERENCE),  # no hostile value is a label key or CEL bool
    ("failureProbability", number(0, 1)),
    ("backoffLimit", integer(0, INT32[1])),
    ("dra|sameNumaNode", _BOOL),
    ("deviceClass", dns_name(required=False, strict=False)),
    ("gpuProduct", text(10**6)),  # any string: it is escaped into the selector
)
TRACE_CSV = Schema(rules=_COLUMNS, strict=True)
TRACE_YAML = Schema(
    rules=(
        (r"jobs|jobs\[\*\]", ALWAYS),
        *((rf"jobs\[\*\]\.({pattern})", rule) for pattern, rule in _COLUMNS),
        (r"nodeEvents", OPTIONAL_REFERENCE),
        *_EVENTS,
    ),
    strict=True,
)

# --- targets ------------------------------------------------------------------------------------------------------

_OUTPUTS = ("--report", "{out}/report.html", "--metrics", "{out}/metrics.json", "--timeseries", "{out}/series.csv")
OUTPUT_FILES = ("report.html", "metrics.json", "series.csv")


@dataclass(frozen=True)
class Target:
    """A command reading one mutated file (``{input}`` in ``argv``; ``{out}`` is a fresh directory for outputs)."""

    name: str
    seed: Path
    schema: Schema
    argv: tuple[str, ...]
    fmt: str = "yaml"


@dataclass(frozen=True)
class FlagTarget:
    """A command whose numeric flags are mutated one at a time."""

    name: str
    argv: tuple[str, ...]
    flags: dict[str, Rule] = field(default_factory=dict)


def _sim(*args: str) -> tuple[str, ...]:
    return ("simulate", *args, "--policy", "gang-tas-preemption", *_OUTPUTS, "-o", "json")


TARGETS: tuple[Target | FlagTarget, ...] = (
    Target("validate -f", SEEDS / "snapshot.yaml", KUBERNETES, ("validate", "-f", "{input}")),
    Target("schedule -f", SEEDS / "snapshot.yaml", KUBERNETES, ("schedule", "-f", "{input}", "-o", "json")),
    Target(
        "simulate --cluster (spec)",
        SEEDS / "cluster.yaml",
        CLUSTER,
        _sim("--cluster", "{input}", "--workload", str(SEEDS / "jobs.csv")),
    ),
    Target(
        "simulate --cluster (Kubernetes)",
        SEEDS / "nodes.yaml",
        KUBERNETES,
        _sim("--cluster", "{input}", "--workload", str(SEEDS / "jobs.csv")),
    ),
    Target(
        "simulate --workload (CSV)",
        SEEDS / "jobs.csv",
        TRACE_CSV,
        _sim("--cluster", str(SEEDS / "cluster.yaml"), "--workload", "{input}"),
        fmt="csv",
    ),
    Target(
        "simulate --workload (YAML)",
        SEEDS / "jobs.yaml",
        TRACE_YAML,
        _sim("--cluster", str(SEEDS / "cluster.yaml"), "--workload", "{input}"),
    ),
    FlagTarget(
        "simulate flags",
        _sim("--cluster", str(SEEDS / "cluster.yaml"), "--jobs", "12"),
        {
            "--jobs": integer(1, 1_000_000, required=True),
            "--seed": integer(-(10**40), 10**40, required=True),
            "--node-mtbf-hours": number(0, MAX_HOURS, required=True, above=True),
            "--node-repair-hours": number(0, MAX_HOURS, required=True, above=True),
            "--pod-failure-probability": number(0, 1, required=True),
        },
    ),
    FlagTarget(
        "schedule flags",
        ("schedule", "-f", str(SEEDS / "snapshot.yaml"), "-o", "json"),
        {"--seed": integer(-(10**40), 10**40, required=True)},
    ),
)

# The parsers other helpers are rewriting: point the harness at them once they land (campaign.py --pending).
PENDING: dict[str, str] = {
    "simulate --policy": "KubeSchedulerConfiguration parsing (scheduling/config.py, engine helper)",
    "schedule --config": "KubeSchedulerConfiguration parsing (scheduling/config.py, engine helper)",
    "guard validate-policy": "guard policy parsing (guard helper)",
    "simulate --experiment fragmentation": "openb CSV loaders (sim/openb.py, not in this change)",
}
PENDING_TARGETS: tuple[Target, ...] = (
    Target(
        "simulate --policy",
        ROOT / "examples" / "nvl72" / "scheduler-config.yaml",
        Schema((), strict=False),
        ("simulate", "--cluster", str(SEEDS / "cluster.yaml"), "--workload", str(SEEDS / "jobs.csv"), "--policy",
         "mine={input}", *_OUTPUTS),
    ),
    Target(
        "schedule --config",
        ROOT / "examples" / "topology-3level" / "scheduler-config.yaml",
        Schema((), strict=False),
        ("schedule", "-f", str(SEEDS / "snapshot.yaml"), "--config", "{input}", "-o", "json"),
    ),
    Target(
        "guard validate-policy",
        ROOT / "examples" / "guard" / "guard.yaml",
        Schema((), strict=False),
        ("guard", "validate-policy", "{input}"),
    ),
    Target(
        "simulate --experiment fragmentation",
        ROOT / "tests" / "sim" / "data" / "openb_pods_sample.csv",
        Schema((), strict=False),
        ("simulate", "--experiment", "fragmentation", "--runner", "array", "--nodes",
         str(ROOT / "tests" / "sim" / "data" / "openb_nodes_sample.csv"), "--pods", "{input}"),
        fmt="csv",
    ),
)  # fmt: skip


def all_targets(pending: bool = False) -> tuple[Target | FlagTarget, ...]:
    return TARGETS + (PENDING_TARGETS if pending else ())


# --- cases --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    target: str
    label: str
    argv: tuple[str, ...]
    seed: bytes | None  # the valid input; the mutation makes what is written where argv says {input}
    mutate: Callable[[bytes], bytes] | None
    suffix: str
    must_reject: bool
    names: tuple[str, ...]  # an error must name one of these: the input files, or the flag

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return f"Case({self.target!r}, {self.label!r})"

    def content(self) -> bytes | None:
        return None if self.seed is None or self.mutate is None else self.mutate(self.seed)


def cases(target: Target | FlagTarget) -> list[Case]:
    """Every mutated input of ``target``."""
    if isinstance(target, FlagTarget):
        return list(_flag_cases(target))
    seed = target.seed.read_bytes()
    names = ("{input}", *(a for a in target.argv if a.startswith(str(ROOT))))
    suffix = ".csv" if target.fmt == "csv" else ".yaml"
    return [
        Case(target.name, m.label, target.argv, seed, m.apply, suffix, m.must_reject, names)
        for m in mutations_of(seed, target.fmt, target.schema)
    ]


def _flag_cases(target: FlagTarget) -> Iterator[Case]:
    for flag, rule in target.flags.items():
        for value in HOSTILE:
            if value is None:
                continue
            shown = str(value)
            argv = _with_flag(target.argv, flag, shown)
            yield Case(target.name, f"{flag} {shown:.40}", argv, None, None, "", rule.rejects(shown), (flag,))


def _with_flag(argv: tuple[str, ...], flag: str, value: str) -> tuple[str, ...]:
    out = list(argv)
    if flag in out:
        out[out.index(flag) + 1] = value
    else:
        out[1:1] = [flag, value]
    if flag == "--node-repair-hours" and "--node-mtbf-hours" not in out:
        out[1:1] = ["--node-mtbf-hours", "100"]  # repair hours only count with generated failures
    return tuple(out)


# --- running and judging ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    code: int | None  # None: it did not finish in time
    stdout: str
    stderr: str
    left: tuple[str, ...]  # output files present after the run


class _Hang(BaseException):
    """Raised by the alarm in an in-process run; a BaseException so the CLI's error handling lets it through."""


def run(case: Case, workdir: Path, timeout: float, in_process: bool = True) -> Result:
    """Run ``case`` with its input in ``workdir`` (empty, one per case)."""
    path = workdir / f"input{case.suffix}"
    content = case.content()
    if content is not None:
        path.write_bytes(content)
    out = workdir / "out"
    out.mkdir()
    argv = [a.replace("{input}", str(path)).replace("{out}", str(out)) for a in case.argv]
    code, stdout, stderr = _in_process(argv, timeout) if in_process else _subprocess(argv, timeout)
    return Result(code, stdout, stderr, tuple(sorted(p.name for p in out.iterdir())))


def _in_process(argv: list[str], timeout: float) -> tuple[int | None, str, str]:
    def alarm(signum: int, frame: Any) -> None:
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = CliRunner().invoke(cli, argv)
    except _Hang:
        return None, "", ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return 1, result.stdout, f"{result.stderr}Traceback (most recent call last): {result.exception!r}"
    return result.exit_code, result.stdout, result.stderr


def _subprocess(argv: list[str], timeout: float) -> tuple[int | None, str, str]:
    command = [sys.executable, "-c", "from phalanx.cli import main; main()", *argv]
    env = {**os.environ, "COLUMNS": "200"}
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


_PYTHON_TEXT = re.compile(
    r"NoneType|object has no attribute|invalid literal for|could not convert|codec can't|\[Errno|"
    r"\b(Key|Value|Type|Attribute|Overflow|Quantity|Unicode\w*)Error\b|\bNone/|msgspec|<class "
)


def classify(case: Case, result: Result, workdir: Path) -> str:
    """One of ``accepted``, ``rejected`` (handled cleanly) or the way it was not: ``hang``, ``traceback``,
    ``internal error``, ``crash``, ``half-written``, ``unnamed``, ``python text``, ``accepted silently``."""
    if result.code is None:
        return "hang"
    if "Traceback (most recent call last)" in result.stdout + result.stderr:
        return "traceback"
    if result.code == 1:
        return "internal error"
    if result.code not in (0, 2):
        return "crash"
    names = [n.replace("{input}", str(workdir / f"input{case.suffix}")) for n in case.names]
    lines = [line for line in result.stderr.splitlines() if _reported(line, result.code)]
    if any(not any(n in line for n in names) for line in lines):
        return "unnamed"
    if _PYTHON_TEXT.search(result.stderr):
        return "python text"
    if result.code == 2:
        if not lines:
            return "unnamed"
        return "half-written" if result.left else "rejected"
    return "accepted silently" if case.must_reject else "accepted"


def _reported(line: str, code: int) -> bool:
    """The lines that must name the file or flag: warnings, and on exit 2 every problem (not click's usage)."""
    if line.startswith("warning: "):
        return True
    if code != 2 or not line.strip() or line.startswith(("Usage: ", "Try '", " ")):
        return False  # click's usage, and the indented lines that continue a message (a CEL error's caret)
    return line != "valid" and not line.startswith("report: ")
