"""The guard's policy: names (exact or `*.suffix`) and CIDRs to deny or allow, provider ranges to deny, audit or
enforce, strict mode, whether loopback is allowed by default, upstream resolvers and what to do with forward
proxies. Built from flags and/or a YAML policy file (policyfile.py) with the same content; every mistake is
reported with the file, line and field path, or the flag."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from phalanx.guard import policyfile
from phalanx.guard.abi import (
    FIRST_POLICY_RULE,
    RULE_CGROUP,
    RULE_DEVICE,
    RULE_LEARNED,
    RULE_LOOPBACK,
    RULE_NONE,
    RULE_STRICT,
)
from phalanx.guard.errors import PolicyError
from phalanx.guard.policyfile import Located, quote
from phalanx.guard.proxyenv import ProxyPolicy
from phalanx.guard.ranges import load_ranges

__all__ = [
    "BUILTIN_RULES",
    "Decision",
    "Mode",
    "NameRule",
    "Policy",
    "build",
    "load_file",
    "merge",
    "normalize_name",
    "parse_upstream",
]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Mode = Literal["enforce", "audit"]

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
BUILTIN_RULES = {
    RULE_NONE: "default allow",
    RULE_LOOPBACK: "loopback allowed by default",
    RULE_STRICT: "strict: address not learned from an allowed answer",
    RULE_LEARNED: "strict: address learned from an allowed answer",
    RULE_DEVICE: "network device nodes (/dev/net/tun) are refused: they inject packets below the IP layer",
    RULE_CGROUP: "processes of the run stay in its cgroup",
}
NOT_ALLOWED = "not in the allow list"


@dataclass(frozen=True)
class NameRule:
    pattern: str  # "github.com" or "*.githubusercontent.com"

    def matches(self, name: str) -> bool:
        if self.pattern.startswith("*."):
            return name.endswith(self.pattern[1:])
        return name == self.pattern


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str
    rule_id: int
    via: str | None = None  # the CNAME/DNAME target that decided, when it was not the question name


@dataclass(frozen=True)
class Policy:
    mode: Mode = "enforce"
    strict: bool = False
    allow_loopback: bool = True
    deny_names: tuple[NameRule, ...] = ()
    allow_names: tuple[NameRule, ...] = ()
    deny_cidrs: tuple[IPNetwork, ...] = ()
    allow_cidrs: tuple[IPNetwork, ...] = ()
    deny_ranges: tuple[tuple[IPNetwork, str], ...] = ()  # (range, the file it came from)
    upstreams: tuple[str, ...] = ()
    http_proxy: ProxyPolicy = "warn"
    _rules: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    _ids: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        texts = [f"deny name {r.pattern}" for r in self.deny_names]
        texts += [f"allow name {r.pattern}" for r in self.allow_names]
        texts += [f"deny cidr {n}" for n in self.deny_cidrs]
        texts += [f"allow cidr {n}" for n in self.allow_cidrs]
        texts += [f"deny range {n} ({source})" for n, source in self.deny_ranges]
        texts.append(NOT_ALLOWED)
        self._rules.update(BUILTIN_RULES)
        self._rules.update({FIRST_POLICY_RULE + i: t for i, t in enumerate(dict.fromkeys(texts))})
        self._ids.update({t: i for i, t in self._rules.items()})

    def rule_id(self, text: str) -> int:
        return self._ids[text]

    def rule_text(self, rule_id: int) -> str:
        return self._rules.get(rule_id, f"rule {rule_id}")

    def decide_name(self, name: str) -> Decision:
        """Deny rules win over allow rules; with any allow rule, names it does not match are denied."""
        name = normalize_name(name)
        denied = self._denied(name)
        if denied is not None:
            return denied
        for r in self.allow_names:
            if r.matches(name):
                text = f"allow name {r.pattern}"
                return Decision(True, text, self.rule_id(text))
        if self.allow_names:
            return Decision(False, NOT_ALLOWED, self.rule_id(NOT_ALLOWED))
        return Decision(True, "default allow", RULE_NONE)

    def _denied(self, name: str) -> Decision | None:
        for r in self.deny_names:
            if r.matches(name):
                text = f"deny name {r.pattern}"
                return Decision(False, text, self.rule_id(text))
        return None

    def decide_chain(self, question: Decision, targets: Sequence[str]) -> Decision:
        """The answer's verdict: the question's, unless a CNAME or DNAME target in the answer is denied by name.
        (Targets are judged by the deny rules only: allowing a name allows the CDN it points to.)"""
        if not question.allowed and question.rule != NOT_ALLOWED:
            return question
        for target in targets:
            d = self._denied(normalize_name(target))
            if d is not None:
                return Decision(False, d.rule, d.rule_id, via=normalize_name(target))
        return question


def normalize_name(name: str) -> str:
    return name.lower().rstrip(".")


def _parse_entry(entry: str, where: str) -> NameRule | IPNetwork:
    text = entry.strip()
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        pass
    if not text.isascii():
        raise PolicyError(f"{where}: Invalid value: {quote(entry)}: a host name is ASCII; write an international "
                          "name in its xn-- (punycode) form")  # fmt: skip
    name = normalize_name(text)
    labels = name[2:].split(".") if name.startswith("*.") else name.split(".")
    if not name or len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        raise PolicyError(
            f"{where}: Invalid value: {quote(entry)}: neither a CIDR (10.0.0.0/8, 2001:db8::/32) nor a host name "
            f"(github.com, or *.example.com for every name under example.com)"
        )
    return NameRule(name)


def parse_upstream(text: str, where: str = "--upstream") -> tuple[str, int]:
    """HOST[:PORT] or [V6]:PORT or a bare IPv6 address -> (host, port); the host must be an IP address (resolving
    a name would need DNS), the port 1-65535."""
    host, port_text = text.strip(), "53"
    if host.startswith("["):
        host, close, rest = host[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise PolicyError(f"{where}: Invalid value: {quote(text)}: expected [IPV6]:PORT")
        port_text = rest[1:] if rest else "53"
    elif host.count(":") == 1:
        host, _, port_text = host.partition(":")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise PolicyError(
            f"{where}: Invalid value: {quote(text)}: the upstream must be an IP address, optionally with :PORT"
        ) from None
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise PolicyError(f"{where}: Invalid value: {quote(text)}: the port must be a number from 1 to 65535")
    return host, int(port_text)


def _entries(values: Sequence[str | Located], flag: str) -> list[tuple[str, str, bool]]:
    """(value, where, from the file): file entries carry their position, flags are named with theirs."""
    out, n = [], 0
    for v in values:
        if isinstance(v, Located):
            out.append((v.value, v.where, True))
        else:
            out.append((v, f"{flag}[{n}]", False))
            n += 1
    return out


def build(
    deny: Sequence[str | Located],
    allow: Sequence[str | Located],
    *,
    mode: Mode = "enforce",
    strict: bool = False,
    allow_loopback: bool = True,
    upstreams: Sequence[str | Located] = (),
    deny_ranges: Sequence[str | Located] = (),
    ranges_base: Path | None = None,
    http_proxy: ProxyPolicy = "warn",
) -> Policy:
    parsed_deny = [_parse_entry(v, w) for v, w, _ in _entries(deny, "--deny")]
    parsed_allow = [_parse_entry(v, w) for v, w, _ in _entries(allow, "--allow")]
    for v, w, _ in _entries(upstreams, "--upstream"):
        parse_upstream(v, w)
    ranges: list[tuple[IPNetwork, str]] = []
    for v, w, in_file in _entries(deny_ranges, "--deny-ranges"):
        ranges += [(net, v) for net in load_ranges(v, w, ranges_base if in_file else None)]
    return Policy(
        mode=mode,
        strict=strict,
        allow_loopback=allow_loopback,
        deny_names=tuple(dict.fromkeys(e for e in parsed_deny if isinstance(e, NameRule))),
        allow_names=tuple(dict.fromkeys(e for e in parsed_allow if isinstance(e, NameRule))),
        deny_cidrs=tuple(dict.fromkeys(e for e in parsed_deny if not isinstance(e, NameRule))),
        allow_cidrs=tuple(dict.fromkeys(e for e in parsed_allow if not isinstance(e, NameRule))),
        deny_ranges=tuple(dict.fromkeys(ranges)),
        upstreams=tuple(v.value if isinstance(v, Located) else v for v in upstreams),
        http_proxy=http_proxy,
    )


def load_file(path: Path) -> policyfile.PolicyFile:
    """Read a policy file and check every entry now, so errors name the file, line and field."""
    pf = policyfile.load(path)
    _check(pf)
    return pf


def _check(pf: policyfile.PolicyFile) -> Policy:
    return build(
        pf.deny,
        pf.allow,
        mode=pf.mode,  # type: ignore[arg-type]
        strict=pf.strict,
        allow_loopback=pf.allow_loopback,
        upstreams=pf.upstreams,
        deny_ranges=pf.deny_ranges,
        ranges_base=pf.path.parent,
        http_proxy=pf.http_proxy,  # type: ignore[arg-type]
    )


def merge(
    file: policyfile.PolicyFile | None,
    deny: Sequence[str] = (),
    allow: Sequence[str] = (),
    *,
    audit: bool = False,
    strict: bool = False,
    upstreams: Sequence[str] = (),
    deny_ranges: Sequence[str] = (),
    http_proxy: ProxyPolicy | None = None,
) -> Policy:
    """Flags add to the file's lists; --audit and --strict switch on what the file leaves off; --upstream and
    --http-proxy-policy replace the file's."""
    pf = file or policyfile.PolicyFile(Path("."))
    return build(
        [*pf.deny, *deny],
        [*pf.allow, *allow],
        mode="audit" if audit else pf.mode,  # type: ignore[arg-type]
        strict=strict or pf.strict,
        allow_loopback=pf.allow_loopback,
        upstreams=list(upstreams) or pf.upstreams,
        deny_ranges=[*pf.deny_ranges, *deny_ranges],
        ranges_base=pf.path.parent,
        http_proxy=http_proxy or pf.http_proxy,  # type: ignore[arg-type]
    )
