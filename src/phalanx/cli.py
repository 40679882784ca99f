"""The phalanx command line: parses arguments, calls the library, renders results. No logic of its own.

Exit codes: 0 ran (even if some pods stay unschedulable); 2 bad input or usage; 1 internal error (a bug: a short
message on stderr and the traceback in a file).
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml
from rich.console import Console

from phalanx.api.errors import InputError
from phalanx.guard.cli import guard

__all__ = ["cli", "main", "schedule", "serve", "simulate", "validate"]

if TYPE_CHECKING:
    from phalanx.sim.runs import SweepPlan
    from phalanx.sim.sweep import Backend

F = TypeVar("F", bound=Callable[..., Any])
_MAX_HOURS = 876_600.0  # 100 years: simulated times stay representable (phalanx.sim.faults.MAX_HOURS)


def _exits(func: F) -> F:
    """Map input errors to exit 2 (every problem listed) and unexpected errors to exit 1."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            for line in exc.lines:
                click.echo(line, err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception:
            with tempfile.NamedTemporaryFile("w", prefix="phalanx-crash-", suffix=".txt", delete=False) as f:
                traceback.print_exc(file=f)
            click.echo(f"phalanx: internal error (a bug); details in {f.name}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


class _Finite(click.ParamType):  # type: ignore[type-arg]
    """A finite decimal number within bounds. click's FLOAT is Python's float(): it takes ``nan``, ``inf`` and
    ``1_000``, and NaN passes every range check."""

    name = "number"
    _DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

    def __init__(self, low: float, high: float = math.inf, above: bool = False) -> None:
        self.low, self.high, self.above = low, high, above

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float) or (isinstance(value, str) and self._DECIMAL.fullmatch(value.strip())):
            number = float(value)
        else:
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if number < self.low or (self.above and number == self.low) or number > self.high:
            low = f"{'>' if self.above else '>='} {self.low:g}"
            high = f" and <= {self.high:g}" if math.isfinite(self.high) else ""
            self.fail(f"{value!r} is not {low}{high}", param, ctx)
        return number


class _Integer(click.IntRange):
    """click's INT is Python's int(): it also takes ``1_000`` and non-ASCII digits; this takes decimal digits."""

    _DIGITS = re.compile(r"[+-]?[0-9]+")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not self._DIGITS.fullmatch(value.strip()):
            self.fail(f"{value!r} is not a valid integer", param, ctx)
        return super().convert(value, param, ctx)


_SECONDS = _Finite(0, above=True)


def _warn(lines: Iterable[str]) -> None:
    for line in lines:
        click.echo(f"warning: {line}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="phalanx")
def cli() -> None:
    """Workload-aware scheduling for AI/ML clusters, and a deploy guard."""


_files = click.option(
    "-f",
    "--filename",
    "paths",
    multiple=True,
    required=True,
    help="File, directory (recursive: *.yaml, *.yml, *.json) or - for stdin. Repeatable.",
)


@cli.command()
@_files
@_exits
def validate(paths: tuple[str, ...]) -> None:
    """Check manifests as kube-apiserver would: one line per problem, exit 2 if any."""
    from phalanx.api.loader import load
    from phalanx.api.validation import validate as validate_inventory
    from phalanx.api.validation.ignored_fields import ignored_field_warnings

    inv = load(paths)
    _warn([*inv.warnings, *(w.render() for w in ignored_field_warnings(inv))])
    problems = validate_inventory(inv)
    if problems:
        raise InputError(problems)
    click.echo("valid", err=True)


_GATES_HELP = (
    "Feature gates as kube-scheduler takes them (A=true,B=false; repeatable), over the configuration's "
    "featureGates. Unnamed gates take v1.36's defaults (v1.37's with --compat v1.37), except that phalanx's "
    "profile turns the workload gates on (GenericWorkload, GangScheduling, TopologyAwareWorkloadScheduling, "
    "WorkloadAwarePreemption, DRAWorkloadResourceClaims, WorkloadWithJob; with v1.37's gates GenericWorkload, "
    "TopologyAwareWorkloadScheduling, CompositePodGroup, PodGroupPreemptionPolicy, DRAWorkloadResourceClaims, "
    "WorkloadWithJob) unless a gate they need is off."
)
_gates = click.option("--feature-gates", "feature_gates", multiple=True, metavar="A=true,B=false", help=_GATES_HELP)
_compat = click.option(
    "--compat",
    default=None,
    metavar="v1.36|v1.37",
    help="Behave exactly as kube-scheduler of that release: every phalanx rule beyond it is off, and the feature "
    "gates are that release's (docs/compat.md).",
)


def _config(
    config_path: str | None, compat: str | None, feature_gates: tuple[str, ...], default_name: str | None = None
) -> Any:
    """The KubeSchedulerConfiguration (or the default one, its profile named ``default_name``) with the mode
    applied; warnings on stderr."""
    from phalanx.scheduling.config import SchedulerConfig, default_profile, load_config, with_mode
    from phalanx.scheduling.feature_gates import FeatureGateError, gates_version, parse_flag

    config = load_config(config_path, gates_version(compat)) if config_path else None
    if config is None and default_name is not None:
        config = SchedulerConfig([default_profile(default_name)])
    for warning in config.warnings if config else []:
        click.echo(f"warning: {warning}", err=True)
    try:
        gates = parse_flag(feature_gates)
    except FeatureGateError as exc:
        raise InputError([f"--feature-gates: {m}" for m in exc.messages]) from exc
    return with_mode(config, compat, gates)


@cli.command()
@_files
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="KubeSchedulerConfiguration YAML.")
@click.option("--scheduler-name", default=None, help="Only schedule pods with this spec.schedulerName.")
@click.option(
    "--seed", type=_Integer(), default=0, show_default=True, help="Seed for tie-breaking between equal nodes."
)
@_compat
@_gates
@click.option(
    "--diff",
    "show_diff",
    is_flag=True,
    help="Also schedule in the other mode and list every pod and PodGroup whose outcome differs, with the rule "
    "that changed it.",
)
@click.option(
    "--async-preemption",
    is_flag=True,
    help="Preemption victims keep their room until the pods already queued have been tried, as they mostly do "
    "while kube-scheduler's asynchronous deletion is on its way (default: victims are gone at once).",
)
@_exits
def schedule(
    paths: tuple[str, ...],
    output: str,
    config_path: str | None,
    scheduler_name: str | None,
    seed: int,
    compat: str | None,
    feature_gates: tuple[str, ...],
    show_diff: bool,
    async_preemption: bool,
) -> None:
    """What would a workload-aware scheduler (Kubernetes v1.37, v1.36 objects read too) do with this snapshot?
    phalanx's rules beyond v1.36 are on unless --compat v1.36; the workload feature gates are on unless
    --feature-gates turns them off."""
    import io

    from phalanx.api.validation.ignored_fields import ignored_field_warnings
    from phalanx.snapshot.result import build_result, node_summary
    from phalanx.snapshot.schedule import schedule_snapshot

    config = _config(config_path, compat, feature_gates)
    text = sys.stdin.read() if "-" in paths else None  # read once: --diff schedules the snapshot again

    def stdin() -> Any:
        return io.StringIO(text) if text is not None else None

    sched, inv, timings = schedule_snapshot(paths, config, scheduler_name, stdin(), seed, async_preemption)
    _warn([*inv.warnings, *(w.render() for w in ignored_field_warnings(inv))])
    result = build_result(sched, timings)
    if show_diff:
        from phalanx.snapshot.diff import diff_snapshot

        result["diff"] = diff_snapshot(result, paths, config, scheduler_name, seed, stdin, async_preemption)
    if output == "json":
        click.echo(json.dumps(result, indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(result, sort_keys=False), nl=False)
    else:
        from phalanx.snapshot.render import render_table

        render_table(result, Console(width=200 if not sys.stdout.isatty() else None), node_summary(sched))


@cli.command()
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="kubeconfig file; in-cluster config if omitted.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="KubeSchedulerConfiguration YAML.")
@click.option(
    "--kube-api-qps",
    type=_Finite(0),
    default=50.0,
    show_default=True,
    help="Client QPS to the API server (0 lifts it).",
)
@click.option(
    "--kube-api-burst", type=_Integer(1), default=100, show_default=True, help="Client burst to the API server."
)
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True)
@click.option("--leader-elect-resource-namespace", default="kube-system", show_default=True)
@click.option("--leader-elect-resource-name", default="phalanx", show_default=True)
@click.option(
    "--leader-elect-lease-duration", type=_Finite(0, above=True), default=15.0, show_default=True, help="Seconds."
)
@click.option(
    "--leader-elect-renew-deadline", type=_Finite(0, above=True), default=10.0, show_default=True, help="Seconds."
)
@click.option(
    "--leader-elect-retry-period", type=_Finite(0, above=True), default=2.0, show_default=True, help="Seconds."
)
@click.option("--health-address", default="0.0.0.0", show_default=True, help="Address for /healthz, /readyz, /metrics.")
@click.option("--health-port", type=_Integer(0, 65535), default=10251, show_default=True)
@click.option(
    "--victim-removal",
    type=click.Choice(["eviction", "deletion"]),
    default=None,
    help="Preemption victims: policy/v1 Eviction (PodDisruptionBudgets enforced; the default) or deletion (as "
    "kube-scheduler; the default with --compat v1.36).",
)
@_compat
@_gates
@_exits
def serve(
    kubeconfig: str | None,
    config_path: str | None,
    kube_api_qps: float,
    kube_api_burst: int,
    leader_elect: bool,
    leader_elect_resource_namespace: str,
    leader_elect_resource_name: str,
    leader_elect_lease_duration: float,
    leader_elect_renew_deadline: float,
    leader_elect_retry_period: float,
    health_address: str,
    health_port: int,
    victim_removal: str | None,
    compat: str | None,
    feature_gates: tuple[str, ...],
) -> None:
    """Run as a secondary scheduler against the Kubernetes API (pods with spec.schedulerName of a profile).
    phalanx's rules beyond v1.36 are on unless --compat v1.36; the workload feature gates are on unless
    --feature-gates turns them off."""
    from phalanx.kube.serve import ServeOptions
    from phalanx.kube.serve import serve as run_serve

    config = _config(config_path, compat, feature_gates, default_name="phalanx")
    run_serve(
        ServeOptions(
            kubeconfig=kubeconfig,
            config=config,
            qps=kube_api_qps,
            burst=kube_api_burst,
            leader_elect=leader_elect,
            lease_namespace=leader_elect_resource_namespace,
            lease_name=leader_elect_resource_name,
            lease_duration=leader_elect_lease_duration,
            renew_deadline=leader_elect_renew_deadline,
            retry_period=leader_elect_retry_period,
            health_address=health_address,
            health_port=health_port,
            victim_removal=victim_removal,
        )
    )


@cli.command()
@click.option(
    "--cluster",
    type=click.Path(),
    help="Nodes (and DeviceClasses, ResourceSlices) as Kubernetes YAML, a file or directory; or a compact spec.",
)
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A job trace: phalanx CSV/YAML, or a public format (--workload-format); repeatable (a sweep over "
    "traces); default: a generated mix.",
)
@click.option(
    "--workload-format",
    type=click.Choice(["auto", "phalanx", "philly", "helios"]),
    default="auto",
    show_default=True,
    help="The traces' format: philly (Philly's cluster_job_log), helios (Helios's cluster_log.csv); auto "
    "tells them apart by content.",
)
@click.option(
    "--trace-window",
    default=None,
    metavar="START:END",
    help="Public traces: only the jobs submitted from START to END hours after the first (e.g. 0:24).",
)
@click.option(
    "--preset",
    type=click.Choice(["philly"]),
    default="philly",
    show_default=True,
    help="Generator preset when no --workload is given.",
)
@click.option(
    "--jobs",
    "job_count",
    type=_Integer(1, 1_000_000),
    default=400,
    show_default=True,
    help="Jobs to generate with --preset.",
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    help="pod-by-pod, gang, gang-tas, gang-tas-preemption, or NAME=FILE.yaml (a KubeSchedulerConfiguration); "
    "repeatable; default: the four built-ins.",
)
@click.option(
    "--seed", type=_Integer(), default=1, show_default=True, help="Seed of the generated workload and failures."
)
@click.option(
    "--node-mtbf-hours",
    type=_Finite(0, _MAX_HOURS, above=True),
    default=None,
    help="Fail nodes at random: mean hours between failures.",
)
@click.option(
    "--node-repair-hours",
    type=_Finite(0, _MAX_HOURS, above=True),
    default=4.0,
    show_default=True,
    help="Hours a failed node is down.",
)
@click.option(
    "--pod-failure-probability", type=_Finite(0, 1), default=0.0, help="Chance a generated job's attempt fails."
)
@click.option("--report", default="phalanx-report.html", show_default=True, help="Where to write the HTML report.")
@click.option("--metrics", "metrics_path", default=None, help="Also write the metrics as JSON to this file.")
@click.option("--timeseries", default=None, help="Also write the time series as CSV to this file.")
@click.option(
    "--experiment",
    type=click.Choice(["fragmentation"]),
    default=None,
    help="Run the openb GPU-fragmentation experiment instead (needs --nodes and --pods; policies: "
    "phalanx, random, bestfit, fgd).",
)
@click.option("--nodes", "nodes_csv", type=click.Path(dir_okay=False), help="Experiment: the openb node CSV.")
@click.option("--pods", "pods_csv", type=click.Path(dir_okay=False), help="Experiment: the openb pod CSV.")
@click.option(
    "--seeds",
    type=_Integer(1, 1000),
    default=1,
    show_default=True,
    help="How many seeds to run: --seed, --seed+1, ... (the experiment: 42, 43, ...).",
)
@click.option(
    "--workers",
    type=_Integer(1, 4096),
    default=None,
    help="Run the sweep's runs in N local processes (default: the CPUs available; 1: in this process).",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="auto",
    default=None,
    metavar="[ADDRESS]",
    help="Run each run as a task on a Ray cluster: auto (default), ray://HEAD:10001, HOST:PORT, or local "
    "(start one here). Needs pip install 'phalanx[ray]'.",
)
@click.option(
    "--runner",
    type=click.Choice(["engine", "array"]),
    default="engine",
    show_default=True,
    help="Experiment: through the scheduler with GPUs as DRA devices (engine), or the reference model of the FGD "
    "artifact's simulator over arrays (array: faster, not the product's placement path).",
)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_compat
@_gates
@_exits
def simulate(
    cluster: str | None,
    workloads: tuple[str, ...],
    workload_format: str,
    trace_window: str | None,
    preset: str,
    job_count: int,
    policies: tuple[str, ...],
    seed: int,
    node_mtbf_hours: float | None,
    node_repair_hours: float,
    pod_failure_probability: float,
    report: str,
    metrics_path: str | None,
    timeseries: str | None,
    experiment: str | None,
    nodes_csv: str | None,
    pods_csv: str | None,
    seeds: int,
    workers: int | None,
    ray_address: str | None,
    runner: str,
    output: str,
    compat: str | None,
    feature_gates: tuple[str, ...],
) -> None:
    """Replay workloads on a cluster over simulated time under several policies (and seeds), and compare them.
    Every policy runs with phalanx's rules beyond v1.36 unless --compat v1.36, and with the workload feature gates
    on unless --feature-gates turns them off (neither applies to --experiment)."""
    from phalanx.scheduling.feature_gates import FeatureGateError, parse_flag
    from phalanx.sim import scenario as sc
    from phalanx.sim.runs import SweepPlan
    from phalanx.sim.sweep import backend_for
    from phalanx.sim.traces import TraceWindow

    try:
        gates = parse_flag(feature_gates)
    except FeatureGateError as exc:
        raise InputError([f"--feature-gates: {m}" for m in exc.messages]) from exc
    backend = backend_for(workers, ray_address)
    if experiment == "fragmentation":
        _fragmentation_experiment(nodes_csv, pods_csv, policies, seeds, runner, output, backend)
        return
    sweep = SweepPlan(
        cluster,
        workloads,
        workload_format,
        TraceWindow.parse(trace_window) if trace_window else None,
        preset,
        job_count,
        seed,
        seeds,
        sc.node_failures(node_mtbf_hours, node_repair_hours),
        pod_failure_probability,
        policies,
        compat,
        tuple(sorted(gates.items())),
    )
    _simulate_sweep(sweep, backend, report, metrics_path, timeseries, output)


def _simulate_sweep(
    sweep: SweepPlan, backend: Backend, report: str, metrics_path: str | None, timeseries: str | None, output: str
) -> None:
    """Plan the runs, run them on ``backend`` under one progress bar, write the outputs, render, and exit 1 if a
    run failed (after writing what the others gave)."""
    from rich.progress import Progress

    from phalanx.api.files import check_writable, write_files
    from phalanx.sim.metrics import timeseries_csv
    from phalanx.sim.render import render_simulation
    from phalanx.sim.report import render_report
    from phalanx.sim.runs import plan, summary_tables, sweep_json
    from phalanx.sim.simulator import POLICIES
    from phalanx.sim.sweep import run_sweep

    paths = {"--report": report, "--metrics": metrics_path, "--timeseries": timeseries}
    for flag, path in paths.items():
        if path:
            check_writable(flag, path)  # before the run, not after it
    runs, notes, warnings = plan(sweep, list(POLICIES))
    for note in notes:
        click.echo(f"note: {note}", err=True)
    _warn(warnings)
    with Progress(console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(f"{len(runs)} run(s)", total=sum(r.weight for r in runs))
        outcome = run_sweep(runs, backend, lambda done, total: bar.update(task, completed=done, total=total))
    outputs = [o for o in outcome.results if o is not None]
    metrics = json.dumps(sweep_json(outputs, outcome.failures), indent=2)
    texts = {"--metrics": metrics}
    if outputs:
        texts["--report"] = render_report(outputs)
    if timeseries:
        texts["--timeseries"] = timeseries_csv([(o.key.trace, o.key.seed, o.result) for o in outputs])
    write_files({path: (flag, texts[flag]) for flag, path in paths.items() if path and flag in texts})
    if output == "json":
        click.echo(metrics)
    else:
        console = Console(width=None if sys.stdout.isatty() else 100)
        for title, header, rows in summary_tables(outputs):
            render_simulation(title, header, rows, console)
        if outputs:
            click.echo(f"report: {report}", err=True)
    for failure in outcome.failures:
        click.echo(f"phalanx: run {failure.label} failed {failure.attempts} time(s): {failure.error}", err=True)
    if outcome.failures:
        sys.exit(1)


def _fragmentation_experiment(
    nodes_csv: str | None,
    pods_csv: str | None,
    policies: tuple[str, ...],
    seeds: int,
    runner: str,
    output: str,
    backend: Backend,
) -> None:
    """`simulate --experiment fragmentation`: the openb procedure per policy and seed (a sweep), then a table or
    JSON; exit 1 if a run failed twice."""
    from rich.progress import Progress

    from phalanx.scheduling.plugins.gpu_share.policy import POLICIES
    from phalanx.sim.fragmentation.engine import ENGINE
    from phalanx.sim.fragmentation.experiment import trace_name
    from phalanx.sim.fragmentation.openb import load_nodes, load_pods
    from phalanx.sim.fragmentation.reference import REFERENCE
    from phalanx.sim.fragmentation.sweep import sweep_experiment
    from phalanx.sim.render import render_simulation

    if not nodes_csv or not pods_csv:
        raise InputError(["--experiment fragmentation needs --nodes NODES.csv and --pods PODS.csv"])
    nodes, pods = load_nodes(nodes_csv), load_pods(pods_csv)
    chosen = list(policies) or list(POLICIES)
    with Progress(console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(f"{len(chosen) * max(seeds, 0)} run(s)", total=len(chosen) * max(seeds, 0))
        result, failures = sweep_experiment(
            nodes,
            pods,
            trace_name(pods_csv),
            chosen,
            seeds,
            ENGINE if runner == "engine" else REFERENCE,
            backend,
            lambda done, total: bar.update(task, completed=done, total=total),
        )
    for failure in failures:
        click.echo(f"phalanx: run {failure.label} failed {failure.attempts} time(s): {failure.error}", err=True)
    if result is None:
        sys.exit(1)
    if output == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        header, *rows = result.table()
        title = f"Unallocated GPU % at 100 % arrival: {result.trace}, seeds {result.seeds[0]}..{result.seeds[-1]}"
        render_simulation(title, header, rows, Console(width=None if sys.stdout.isatty() else 200))


cli.add_command(guard)


def main() -> None:
    cli(prog_name="phalanx")
