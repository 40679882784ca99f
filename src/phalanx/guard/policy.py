"""The guard's policy: names (exact or `*.suffix`) and CIDRs to deny or allow, audit or enforce, strict mode, and
whether loopback is allowed by default. Built from flags and/or a YAML file with the same content; validated with
the field path of every mistake."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec
import yaml

from phalanx.guard.abi import FIRST_POLICY_RULE, RULE_LOOPBACK, RULE_NONE, RULE_STRICT
from phalanx.guard.errors import PolicyError

__all__ = [
    "BUILTIN_RULES",
    "Decision",
    "IPNetwork",
    "Mode",
    "NameRule",
    "Policy",
    "PolicyFile",
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
}


class PolicyFile(msgspec.Struct, forbid_unknown_fields=True):
    """The YAML policy file. `deny` and `allow` take names and CIDRs mixed, exactly like the flags."""

    mode: Mode = "enforce"
    strict: bool = False
    allow_loopback: bool = True
    deny: list[str] = []
    allow: list[str] = []
    upstreams: list[str] = []


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


@dataclass(frozen=True)
class Policy:
    mode: Mode = "enforce"
    strict: bool = False
    allow_loopback: bool = True
    deny_names: tuple[NameRule, ...] = ()
    allow_names: tuple[NameRule, ...] = ()
    deny_cidrs: tuple[IPNetwork, ...] = ()
    allow_cidrs: tuple[IPNetwork, ...] = ()
    upstreams: tuple[str, ...] = ()
    _rules: dict[int, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        texts = [f"deny name {r.pattern}" for r in self.deny_names]
        texts += [f"allow name {r.pattern}" for r in self.allow_names]
        texts += [f"deny cidr {n}" for n in self.deny_cidrs]
        texts += [f"allow cidr {n}" for n in self.allow_cidrs]
        self._rules.update(BUILTIN_RULES)
        self._rules.update({FIRST_POLICY_RULE + i: t for i, t in enumerate(texts)})
        self._rules.setdefault(len(self._rules) + FIRST_POLICY_RULE, "not in the allow list")

    def rule_id(self, text: str) -> int:
        return next(i for i, t in self._rules.items() if t == text)

    def rule_text(self, rule_id: int) -> str:
        return self._rules.get(rule_id, f"rule {rule_id}")

    def decide_name(self, name: str) -> Decision:
        """Deny rules win over allow rules; with any allow rule, names it does not match are denied."""
        name = normalize_name(name)
        for r in self.deny_names:
            if r.matches(name):
                text = f"deny name {r.pattern}"
                return Decision(False, text, self.rule_id(text))
        for r in self.allow_names:
            if r.matches(name):
                text = f"allow name {r.pattern}"
                return Decision(True, text, self.rule_id(text))
        if self.allow_names:
            return Decision(False, "not in the allow list", self.rule_id("not in the allow list"))
        return Decision(True, "default allow", RULE_NONE)


def normalize_name(name: str) -> str:
    return name.lower().rstrip(".")


def _parse_entry(entry: str, where: str) -> NameRule | IPNetwork:
    text = entry.strip()
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        pass
    name = normalize_name(text)
    labels = name[2:].split(".") if name.startswith("*.") else name.split(".")
    if not name or not all(_LABEL.match(label) for label in labels):
        raise PolicyError(
            f"{where}: {entry!r} is neither a CIDR (10.0.0.0/8, 2001:db8::/32) nor a host name "
            f"(github.com, or *.example.com for every name under example.com)"
        )
    return NameRule(name)


def build(
    deny: list[str],
    allow: list[str],
    *,
    mode: Mode = "enforce",
    strict: bool = False,
    allow_loopback: bool = True,
    upstreams: list[str] | None = None,
    where: str = "--deny/--allow",
) -> Policy:
    parsed_deny = [_parse_entry(e, f"{where} deny[{i}]") for i, e in enumerate(deny)]
    parsed_allow = [_parse_entry(e, f"{where} allow[{i}]") for i, e in enumerate(allow)]
    for i, up in enumerate(upstreams or []):
        parse_upstream(up, f"{where} upstreams[{i}]")
    return Policy(
        mode=mode,
        strict=strict,
        allow_loopback=allow_loopback,
        deny_names=tuple(dict.fromkeys(e for e in parsed_deny if isinstance(e, NameRule))),
        allow_names=tuple(dict.fromkeys(e for e in parsed_allow if isinstance(e, NameRule))),
        deny_cidrs=tuple(dict.fromkeys(e for e in parsed_deny if not isinstance(e, NameRule))),
        allow_cidrs=tuple(dict.fromkeys(e for e in parsed_allow if not isinstance(e, NameRule))),
        upstreams=tuple(upstreams or ()),
    )


def load_file(path: Path) -> PolicyFile:
    """Read and type-check a YAML policy file; errors name the file and the field path."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read the policy file: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not valid YAML: {exc}") from exc
    try:
        pf = msgspec.convert(data if data is not None else {}, PolicyFile)
    except msgspec.ValidationError as exc:
        raise PolicyError(f"{path}: {exc}") from exc
    build(pf.deny, pf.allow, upstreams=pf.upstreams, where=str(path))  # validate entries now, with the file name
    return pf


def merge(file: PolicyFile | None, deny: list[str], allow: list[str], **flags: object) -> Policy:
    """Flags add to the file's lists; --audit and --strict switch on what the file leaves off."""
    pf = file or PolicyFile()
    mode: Mode = "audit" if flags.get("audit") else pf.mode
    upstreams = list(flags.get("upstreams") or []) or pf.upstreams  # type: ignore[call-overload]
    return build(
        pf.deny + deny,
        pf.allow + allow,
        mode=mode,
        strict=bool(flags.get("strict")) or pf.strict,
        allow_loopback=pf.allow_loopback and not flags.get("no_loopback"),
        upstreams=upstreams,
    )


def parse_upstream(text: str, where: str = "--upstream") -> tuple[str, int]:
    """HOST[:PORT] or [V6]:PORT -> (host, port); the host must be an IP address (resolving it would need DNS)."""
    host, port = text, 53
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else 53
    elif text.count(":") == 1:
        host, _, p = text.partition(":")
        if not p.isdigit():
            raise PolicyError(f"{where}: bad port in upstream {text!r}")
        port = int(p)
    try:
        ipaddress.ip_address(host)
    except ValueError as exc:
        raise PolicyError(f"{where}: upstream {text!r} must be an IP address, optionally with :PORT") from exc
    return host, port
