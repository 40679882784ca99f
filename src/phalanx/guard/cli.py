"""`phalanx guard`: run a command under guard (the default), `report` on event files, `validate-policy`."""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import click

from phalanx.guard import policy as policy_mod
from phalanx.guard import privilege, proxyenv
from phalanx.guard import report as report_mod
from phalanx.guard.errors import EXIT_INTERNAL, GuardError, PolicyError
from phalanx.guard.events import EventSink

__all__ = ["GuardGroup", "guard", "report_cmd", "run_cmd", "validate_policy_cmd"]


class GuardGroup(click.Group):
    """A group whose default command is `run`: anything that is not a subcommand name is the guarded command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] in ("-h", "--help") or args[0] in self.commands:
            return super().parse_args(ctx, args)
        return super().parse_args(ctx, ["run", *args])


@click.group(cls=GuardGroup)
def guard() -> None:
    """Run a command so that it cannot reach forbidden hosts (cgroup v2 + eBPF + DNS policy proxy).

    \b
      phalanx guard --deny github.com --deny '*.githubusercontent.com' -- ./deploy.sh
      phalanx guard --audit --policy guard.yaml --events events.jsonl -- ./deploy.sh
      phalanx guard report events.jsonl

    Exit code: the command's own (128+N if killed by signal N); 126/127 if it cannot be started; 2 for a bad
    policy; 71 machine not supported (not root, no cgroup v2, no BPF); 72 cgroup failure; 73 eBPF failure;
    74 DNS proxy failure (the run was killed); 75 the guard was tampered with (the run was killed); 70 internal
    error.
    """


def _policy(policy_file: Path | None, opts: dict[str, Any]) -> policy_mod.Policy:
    """The policy from the file and the flags; under `--http-proxy-policy deny` the proxies' own addresses are
    denied too, so that `curl -x PROXY` cannot use them either."""
    file = policy_mod.load_file(policy_file) if policy_file else None

    def merged(extra_deny: list[str]) -> policy_mod.Policy:
        return policy_mod.merge(
            file,
            [*opts["deny"], *extra_deny],
            list(opts["allow"]),
            audit=opts["audit"],
            strict=opts["strict"],
            upstreams=list(opts["upstream"]),
            deny_ranges=list(opts["deny_ranges"]),
            http_proxy=opts["http_proxy_policy"],
        )

    pol = merged([])
    proxies = proxyenv.deny_entries(proxyenv.find(os.environ)) if pol.http_proxy == "deny" else []
    return merged(proxies) if proxies else pol


def _command_env(pol: policy_mod.Policy, run_as: privilege.RunAs | None) -> dict[str, str]:
    """The command's environment: the guard's, without proxies under `deny`, with the user's identity for --user."""
    env = proxyenv.environment(os.environ, pol.http_proxy)
    if run_as is not None:
        env.update(HOME=run_as.home, USER=run_as.name, LOGNAME=run_as.name)
    return env


def _fail(exc: BaseException) -> None:
    if isinstance(exc, GuardError):
        click.echo(f"phalanx guard: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    with tempfile.NamedTemporaryFile("w", prefix="phalanx-guard-", suffix=".txt", delete=False) as f:
        traceback.print_exception(exc, file=f)
    click.echo(f"phalanx guard: internal error: {exc!r} (details in {f.name})", err=True)
    sys.exit(EXIT_INTERNAL)


@guard.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("--deny", multiple=True, metavar="NAME|CIDR", help="Deny a name (exact or *.suffix) or a CIDR.")
@click.option("--allow", multiple=True, metavar="NAME|CIDR", help="Allow only these (plus loopback); deny wins.")
@click.option("--policy", "policy_file", type=click.Path(path_type=Path), help="YAML policy file (same content).")
@click.option("--audit", is_flag=True, help="Record everything, block nothing.")
@click.option("--strict", is_flag=True, help="Reach only addresses learned from allowed answers.")
@click.option("--events", "events_path", type=click.Path(path_type=Path), help="Write events as JSON lines here.")
@click.option("--upstream", multiple=True, metavar="HOST[:PORT]", help="Upstream resolver (default: resolv.conf).")
@click.option(
    "--deny-ranges",
    multiple=True,
    metavar="FILE[#KEYS]",
    help="Deny a provider's published ranges (CIDR list or JSON).",
)
@click.option(
    "--http-proxy-policy",
    type=click.Choice(["warn", "deny", "allow"]),
    help="What to do with *_proxy variables (default: the policy file's, else warn).",
)
@click.option("--user", "run_as", metavar="USER[:GROUP]", help="Run the command as this user (no_new_privs).")
@click.option("--keep-cap", multiple=True, metavar="CAP|all", help="Keep a capability the guard drops by default.")
@click.option("--quiet", "-q", is_flag=True, help="No per-block messages and no summary on stderr.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(command: tuple[str, ...], policy_file: Path | None, events_path: Path | None, **opts: Any) -> None:
    """Run COMMAND in its own cgroup under the guard."""
    from phalanx.guard import runner  # the BPF and asyncio machinery is only needed here

    try:
        pol = _policy(policy_file, opts)
        run_as = privilege.parse_user(opts["run_as"]) if opts["run_as"] else None
        privileges = privilege.Privileges(privilege.parse_caps(list(opts["keep_cap"])), run_as)
        env = _command_env(pol, run_as)
        out = events_path.open("w") if events_path else None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        _fail(PolicyError(f"--events: {str(events_path)!r}: cannot write the events file: {reason}"))
        return
    except GuardError as exc:
        _fail(exc)
        return
    sink = EventSink(out=out, quiet=opts["quiet"])
    try:
        options = runner.RunOptions(command, pol, events_path, privileges=privileges, env=env)
        code = runner.run(options, sink)
    except BaseException as exc:
        if isinstance(exc, SystemExit | KeyboardInterrupt):
            raise
        _fail(exc)
        return
    finally:
        sink.flush()
        if out is not None:
            out.close()
    if not opts["quiet"]:
        click.echo(report_mod.summary(sink, pol.mode, code), err=True, nl=False)
    sys.exit(code)


@guard.command("report")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
def report_cmd(files: tuple[Path, ...], fmt: str) -> None:
    """Aggregate event files into the dependency list per command."""
    try:
        deps = report_mod.aggregate(report_mod.read_events(list(files)))
    except GuardError as exc:
        _fail(exc)
        return
    click.echo(report_mod.render(deps, fmt), nl=False)


@guard.command("validate-policy")
@click.argument("file", type=click.Path(path_type=Path))
def validate_policy_cmd(file: Path) -> None:
    """Check a YAML policy file; exit 2 with the field path of the first mistake."""
    try:
        pf = policy_mod.load_file(file)
    except GuardError as exc:
        _fail(exc)
        return
    try:
        pol = policy_mod.merge(pf)
    except GuardError as exc:
        _fail(exc)
        return
    ranges = f", {len(pol.deny_ranges)} denied ranges" if pol.deny_ranges else ""
    click.echo(
        f"{file}: valid: mode {pol.mode}{', strict' if pol.strict else ''}, "
        f"{len(pol.deny_names)} denied names, {len(pol.deny_cidrs)} denied CIDRs{ranges}, "
        f"{len(pol.allow_names)} allowed names, {len(pol.allow_cidrs)} allowed CIDRs, http proxies: {pol.http_proxy}"
    )
