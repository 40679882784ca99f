"""Reports: the end-of-run summary on stderr, and `phalanx guard report`, which aggregates event files into the
dependency list per command (who called what), as text, JSON or Markdown for a pull request comment."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from phalanx.guard.errors import PolicyError
from phalanx.guard.events import EventSink

__all__ = ["VERDICT_ORDER", "CommandDeps", "Dependency", "aggregate", "read_events", "render", "summary"]

VERDICT_ORDER = ("deny", "audit", "allow")


@dataclass
class Dependency:
    target: str
    kind: str
    rule: str
    verdicts: Counter[str] = field(default_factory=Counter)
    addresses: set[str] = field(default_factory=set)

    @property
    def worst(self) -> str:
        return next(v for v in VERDICT_ORDER if self.verdicts[v]) if self.verdicts else "allow"


@dataclass
class CommandDeps:
    command: str
    chain: str
    deps: dict[tuple[str, str], Dependency] = field(default_factory=dict)


def read_events(files: list[Path]) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    for path in files:
        try:
            lines = path.read_bytes().decode("utf-8").splitlines()
        except OSError as exc:
            raise PolicyError(f"{path}: cannot read the events file: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise PolicyError(f"{path}: not UTF-8 text (offset {exc.start}): not a guard events file") from None
        except ValueError as exc:  # a NUL in the name
            raise PolicyError(f"{str(path)!r}: cannot read the events file: {exc}") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PolicyError(f"{path}:{n}: not a JSON event: {exc.msg}") from exc
            if not isinstance(obj, dict) or "verdict" not in obj:
                raise PolicyError(f"{path}:{n}: not a guard event (no 'verdict')")
            _check_event(obj, f"{path}:{n}")
            events.append(obj)
    return events


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


_CHECKS: dict[str, tuple[Callable[[object], bool], str]] = {
    "kind": (lambda v: isinstance(v, str), "must be a string"),
    "rule": (lambda v: isinstance(v, str), "must be a string"),
    "comm": (lambda v: isinstance(v, str), "must be a string"),
    "name": (lambda v: v is None or isinstance(v, str), "must be a string or null"),
    "port": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "must be a number or null"),
    "addresses": (_strings, "must be a list of strings"),
    "cmdline": (_strings, "must be a list of strings"),
    "parents": (
        lambda v: isinstance(v, list) and all(isinstance(p, dict) and _strings(p.get("cmdline", [])) for p in v),
        "must be a list of {pid, cmdline} objects",
    ),
}


def _check_event(ev: dict[str, object], where: str) -> None:
    """The fields the report reads, typed as the event schema says; errors name the line and the field."""
    if ev["verdict"] not in VERDICT_ORDER:
        raise PolicyError(f'{where}: verdict: Unsupported value: {json.dumps(ev["verdict"])}: supported values: '
                          '"allow", "deny", "audit"')  # fmt: skip
    for name, (ok, rule) in _CHECKS.items():
        if name in ev and not ok(ev[name]):
            raise PolicyError(f"{where}: {name}: Invalid value: {json.dumps(ev[name])[:80]}: {rule}")


def _argv(value: object) -> str:
    return " ".join(str(a) for a in value) if isinstance(value, list) else str(value or "")


def _target(ev: dict[str, object]) -> str:
    addrs = ev.get("addresses") or []
    what = str(ev.get("name") or ",".join(str(a) for a in addrs) or "?")  # type: ignore[attr-defined]
    port = ev.get("port")
    return what if ev.get("kind") == "dns" or not port else f"{what}:{port}"


def aggregate(events: list[dict[str, object]]) -> list[CommandDeps]:
    """Group events by the process that made them; within it, by what it reached and how."""
    by_cmd: dict[str, CommandDeps] = {}
    for ev in events:
        command = _argv(ev.get("cmdline")) or str(ev.get("comm") or "?")
        parents = ev.get("parents") or []
        chain = " -> ".join([_argv(p.get("cmdline")) for p in parents if isinstance(p, dict)] + [command])  # type: ignore[attr-defined]
        cd = by_cmd.setdefault(command, CommandDeps(command, chain))
        key = (_target(ev), str(ev.get("kind", "")))
        dep = cd.deps.setdefault(key, Dependency(key[0], key[1], str(ev.get("rule", ""))))
        dep.verdicts[str(ev["verdict"])] += 1
        if ev["verdict"] != "allow":
            dep.rule = str(ev.get("rule", ""))
        dep.addresses.update(str(a) for a in (ev.get("addresses") or []))  # type: ignore[attr-defined]
    return [by_cmd[k] for k in sorted(by_cmd)]


def _rows(cd: CommandDeps) -> list[Dependency]:
    return sorted(cd.deps.values(), key=lambda d: (VERDICT_ORDER.index(d.worst), d.target, d.kind))


def _counts(d: Dependency) -> str:
    return ", ".join(f"{v} {d.verdicts[v]}" for v in VERDICT_ORDER if d.verdicts[v])


def render(commands: list[CommandDeps], fmt: str) -> str:
    if fmt == "json":
        doc = {
            "commands": [
                {
                    "command": cd.command,
                    "chain": cd.chain,
                    "dependencies": [
                        {
                            "target": d.target,
                            "kind": d.kind,
                            "verdict": d.worst,
                            "verdicts": dict(sorted(d.verdicts.items())),
                            "rule": d.rule,
                            "addresses": sorted(d.addresses),
                        }
                        for d in _rows(cd)
                    ],
                }
                for cd in commands
            ]
        }
        return json.dumps(doc, indent=2) + "\n"
    if fmt == "markdown":
        out = ["## Deploy guard: dependencies per command", ""]
        for cd in commands:
            out += [f"### `{cd.command}`", "", f"Called as: `{cd.chain}`", ""]
            out += ["| target | kind | verdict | events | rule |", "|---|---|---|---|---|"]
            out += [f"| `{d.target}` | {d.kind} | **{d.worst}** | {_counts(d)} | {d.rule} |" for d in _rows(cd)]
            out.append("")
        return "\n".join(out)
    out = []
    for cd in commands:
        out += [f"{cd.command}", f"  called as: {cd.chain}"]
        out += [f"  {d.worst:<6} {d.kind:<8} {d.target:<40} {_counts(d)}  [{d.rule}]" for d in _rows(cd)]
        out.append("")
    return "\n".join(out)


def summary(sink: EventSink, mode: str, exit_code: int) -> str:
    """The end-of-run table on stderr: what was blocked (or would have been), then what was reached."""
    verdicts: Counter[str] = Counter()
    for (verdict, _kind, _target), n in sink.counts.items():
        verdicts[verdict] += n
    lines = [
        f"phalanx guard: {mode} run, exit code {exit_code}: {sink.total} decisions "
        f"({verdicts['allow']} allowed, {verdicts['deny']} denied, {verdicts['audit']} audited)"
    ]
    rows = sorted(sink.counts.items(), key=lambda kv: (VERDICT_ORDER.index(kv[0][0]), kv[0][2], kv[0][1]))
    for (verdict, kind, target), n in rows[:40]:
        lines.append(f"  {verdict:<6} {kind:<8} {target:<48} x{n}")
    if len(rows) > 40:
        lines.append(f"  ... {len(rows) - 40} more (see --events)")
    lost = sink.unreported.get("lost denials", 0) + sink.unreported.get("lost allowed connects", 0)
    for what, n in sink.unreported.items():
        if n:
            lines.append(f"  not reported: {n} {what}")
    if lost:
        lines.append(f"  warning: {lost} kernel events were lost (ring buffer full): the record is incomplete")
    return "\n".join(lines) + "\n"
