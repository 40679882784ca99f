"""The guard's decisions as events: one JSON object per line (schema in docs/guard-events.schema.json), written
as they happen, counted for the end-of-run summary, and announced on stderr when something is blocked."""

from __future__ import annotations

import functools
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Literal

import msgspec

from phalanx.guard.procinfo import ProcessRef

__all__ = ["PROTOCOLS", "Event", "EventSink", "Kind", "Verdict", "now", "rfc3339"]

_encode = msgspec.json.Encoder().encode  # several times faster than json.dumps, on the proxy's hot path

__all__ = ["PROTOCOLS", "Event", "EventSink", "Kind", "Verdict", "rfc3339"]

Verdict = Literal["allow", "deny", "audit"]
Kind = Literal["dns", "connect", "sendmsg", "packet", "socket", "device", "tamper", "proxy"]
PROTOCOLS = {6: "tcp", 17: "udp", 1: "icmp", 58: "icmpv6"}


class Event(msgspec.Struct, frozen=True):
    """One decision. A msgspec Struct: built and encoded to a JSON line in a microsecond or two, which matters on
    the proxy's path (one event per query). Fields in the order of the JSON Schema."""

    time: str  # RFC 3339, UTC, milliseconds (see rfc3339)
    verdict: Verdict
    rule: str
    kind: Kind
    name: str | None
    addresses: tuple[str, ...]
    port: int | None
    protocol: str
    pid: int | None
    cmdline: tuple[str, ...]
    parents: tuple[ProcessRef, ...] = ()
    comm: str = ""
    qtype: str | None = None
    exe: str = ""  # the executable (argv and comm are the process's to choose; this is not)
    cnames: tuple[str, ...] = ()  # DNS: the other names of the answer (CNAME/DNAME chain), all judged

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = msgspec.to_builtins(self)
        return out

    def target(self) -> str:
        what = self.name or ",".join(self.addresses) or "?"
        return f"{what}:{self.port}" if self.port and self.kind in ("connect", "sendmsg", "packet") else what

    def chain(self) -> str:
        """`deploy.sh -> install-tools.sh -> curl https://github.com/...` (the guarded command first)."""
        parts = [_short(p.cmdline) for p in self.parents] + [_short(self.cmdline, full=True)]
        return " -> ".join(parts)


@functools.lru_cache(maxsize=4)
def _second(whole: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))


def rfc3339(t: float) -> str:
    """UTC with milliseconds; the seconds part is cached, as events come in bursts within one second."""
    whole = int(t)
    return f"{_second(whole)}.{int((t - whole) * 1000):03d}Z"


def _short(argv: tuple[str, ...], full: bool = False) -> str:
    if not argv:
        return "?"
    if full:
        return " ".join(argv).replace("\n", " ")[:200]
    # For a script run by an interpreter, the script is the interesting part; `sh -c '...'` shows its code.
    prog = argv[0].rsplit("/", 1)[-1]
    if len(argv) > 1 and prog in {"sh", "bash", "dash", "python3", "python"}:
        if argv[1].startswith("-"):
            return " ".join([prog, *argv[1:]])[:60]
        return argv[1].rsplit("/", 1)[-1]
    return prog


@dataclass
class EventSink:
    """Where events go: the --events file, the summary counters, and a line on stderr for each block."""

    out: IO[str] | None = None
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    quiet: bool = False
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (verdict, kind, target)
    total: int = 0
    unreported: dict[str, int] = field(default_factory=dict)  # what the kernel could not report, by reason

    def emit(self, event: Event) -> None:
        self.total += 1
        self.counts[(event.verdict, event.kind, event.target())] += 1
        if self.out is not None:
            self.out.write(_encode(event).decode() + "\n")
        if (
            not self.quiet
            and event.verdict != "allow"
            and self.counts[(event.verdict, event.kind, event.target())] == 1
        ):
            word = "blocked" if event.verdict == "deny" else "would block"
            self.stderr.write(
                f"phalanx guard: {word} {event.kind} {event.target()} ({event.rule}) "
                f"for pid {event.pid}: {event.chain()}\n"
            )
            self.stderr.flush()

    def flush(self) -> None:
        if self.out is not None:
            self.out.flush()


def now() -> float:
    return time.time()
