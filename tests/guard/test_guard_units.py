"""Unit tests of the guard's pure parts: policy parsing and decisions, the DNS wire helpers, the ctypes mirror of
guard.h (compared with what a C compiler says), cgroup mount detection, and the report."""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from dnslib import EDNS0, QTYPE, RR, A, DNSRecord

from phalanx.cli import cli
from phalanx.guard import abi, cgroup, dnswire, policy
from phalanx.guard.errors import NotSupportedError, PolicyError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("rules", "name", "allowed", "rule"),
    [
        (["github.com"], "github.com", False, "deny name github.com"),
        (["github.com"], "GitHub.com.", False, "deny name github.com"),
        (["github.com"], "api.github.com", True, "default allow"),
        (["*.githubusercontent.com"], "raw.githubusercontent.com", False, "deny name *.githubusercontent.com"),
        (["*.githubusercontent.com"], "a.b.githubusercontent.com", False, "deny name *.githubusercontent.com"),
        (["*.githubusercontent.com"], "githubusercontent.com", True, "default allow"),
    ],
    ids=["exact", "case-and-dot", "exact-not-subdomain", "wildcard", "wildcard-deep", "wildcard-not-apex"],
)
def test_deny_names(rules: list[str], name: str, allowed: bool, rule: str) -> None:
    d = policy.build(rules, []).decide_name(name)
    assert (d.allowed, d.rule) == (allowed, rule)


def test_allow_list_and_deny_precedence() -> None:
    p = policy.build(["bad.corp.example"], ["*.corp.example"])
    assert p.decide_name("ok.corp.example").allowed
    assert not p.decide_name("bad.corp.example").allowed
    assert p.decide_name("github.com").rule == "not in the allow list"
    assert p.rule_text(p.decide_name("bad.corp.example").rule_id) == "deny name bad.corp.example"


def test_cidrs_and_names_are_told_apart() -> None:
    p = policy.build(["140.82.112.0/20", "2001:db8::/32", "10.1.2.3", "github.com"], [])
    assert p.deny_cidrs == (
        ipaddress.ip_network("140.82.112.0/20"),
        ipaddress.ip_network("2001:db8::/32"),
        ipaddress.ip_network("10.1.2.3/32"),
    )
    assert [r.pattern for r in p.deny_names] == ["github.com"]


@pytest.mark.parametrize("bad", ["exa mple.com", "-bad.com", "*", "a..b", "10.0.0.0/33"])
def test_bad_entries_are_rejected_with_the_position(bad: str) -> None:
    with pytest.raises(PolicyError, match=r"deny\[1\]"):
        policy.build(["ok.com", bad], [])


def test_policy_file_and_validate_policy(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("mode: audit\nstrict: true\ndeny: [github.com, '*.githubusercontent.com', 140.82.112.0/20]\n")
    r = CliRunner().invoke(cli, ["guard", "validate-policy", str(good)])
    assert r.exit_code == 0 and "mode audit, strict, 2 denied names, 1 denied CIDRs" in r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("deny: github.com\n")
    r = CliRunner().invoke(cli, ["guard", "validate-policy", str(bad)])
    assert r.exit_code == 2 and f"{bad}:1: deny: Invalid value: a string: must be a list of strings" in r.output
    typo = tmp_path / "typo.yaml"
    typo.write_text("denny: [github.com]\n")
    r = CliRunner().invoke(cli, ["guard", "validate-policy", str(typo)])
    assert r.exit_code == 2 and f'{typo}:1: denny: Unsupported value: unknown field "denny"' in r.output


def test_example_policy_is_valid() -> None:
    r = CliRunner().invoke(cli, ["guard", "validate-policy", str(ROOT / "examples/guard/guard.yaml")])
    assert r.exit_code == 0, r.output


def test_flags_add_to_the_file(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("deny: [github.com]\nupstreams: [10.0.0.1]\n")
    p = policy.merge(policy.load_file(f), ["gitlab.com"], [], audit=True, strict=False, upstreams=[])
    assert [r.pattern for r in p.deny_names] == ["github.com", "gitlab.com"]
    assert p.mode == "audit" and p.upstreams == ("10.0.0.1",)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("10.0.0.1", ("10.0.0.1", 53)), ("127.0.0.1:5353", ("127.0.0.1", 5353)), ("[::1]:53", ("::1", 53))],
)
def test_upstreams(text: str, parsed: tuple[str, int]) -> None:
    assert policy.parse_upstream(text) == parsed


def test_upstream_must_be_an_address() -> None:
    with pytest.raises(PolicyError, match="IP address"):
        policy.parse_upstream("dns.google")


def _query(name: str, qtype: str = "A", edns: bool = False) -> bytes:
    q = DNSRecord.question(name, qtype)
    if edns:
        q.add_ar(EDNS0(udp_len=4096))
    return bytes(q.pack())


def test_parse_question_and_answer_addresses() -> None:
    query = _query("Api.Example.COM", "AAAA")
    q = dnswire.parse_question(query)
    assert (q.name, q.qtype) == ("api.example.com", dnswire.TYPE_AAAA)
    reply = DNSRecord.parse(_query("a.example"))
    reply = reply.reply()
    reply.add_answer(
        *RR.fromZone("a.example. 60 CNAME b.example.\nb.example. 30 A 192.0.2.7\nb.example. 30 AAAA 2001:db8::7")
    )
    addrs = dnswire.answer_addresses(bytes(reply.pack()))
    assert [(str(a), ttl) for a, ttl in addrs] == [("192.0.2.7", 30), ("2001:db8::7", 30)]


@pytest.mark.parametrize("edns", [False, True])
def test_nxdomain_keeps_id_question_and_edns(edns: bool) -> None:
    query = _query("github.com", edns=edns)
    out = DNSRecord.parse(dnswire.error_reply(query, dnswire.parse_question(query), dnswire.RCODE_NXDOMAIN))
    assert out.header.id == DNSRecord.parse(query).header.id and out.header.rcode == 3 and out.header.qr == 1
    assert str(out.q.qname) == "github.com." and QTYPE[out.q.qtype] == "A"
    assert any(rr.rtype == QTYPE.OPT for rr in out.ar) == edns


@pytest.mark.parametrize("junk", [b"", b"\x00" * 11, b"\x12\x34\x01\x00\x00\x02" + b"\x00" * 6])
def test_garbage_is_rejected(junk: bytes) -> None:
    with pytest.raises(dnswire.WireError):
        dnswire.parse_question(junk)


def test_truncated_answer_keeps_what_was_read() -> None:
    reply = DNSRecord.parse(_query("a.example")).reply()
    reply.add_answer(RR("a.example", QTYPE.A, rdata=A("192.0.2.1"), ttl=5))
    data = bytes(reply.pack())
    assert [str(a) for a, _ in dnswire.answer_addresses(data[:-2])] == []
    assert [str(a) for a, _ in dnswire.answer_addresses(data)] == ["192.0.2.1"]


STRUCTS = {
    "guard_config": abi.GuardConfig,
    "lpm4_key": abi.Lpm4Key,
    "lpm6_key": abi.Lpm6Key,
    "learned": abi.Learned,
    "owner": abi.Owner,
    "orig_dst": abi.OrigDst,
    "port_key": abi.PortKey,
    "guard_event": abi.GuardEvent,
}


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to read guard.h's layout")
def test_abi_matches_guard_h(tmp_path: Path) -> None:
    """Every field of every shared struct sits at the same offset in C (the compiler's view) and in ctypes."""
    lines = [
        "#include <stdio.h>",
        "#include <stddef.h>",
        "#include <linux/types.h>",
        '#include "guard.h"',
        "int main(void) {",
    ]
    for cname, cls in STRUCTS.items():
        lines.append(f'printf("{cname} size %zu\\n", sizeof(struct {cname}));')
        for fname, _ in cls._fields_:
            lines.append(f'printf("{cname} {fname} %zu\\n", offsetof(struct {cname}, {fname}));')
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    bpf_dir = ROOT / "src/phalanx/guard/bpf"
    subprocess.run(["cc", "-I", str(bpf_dir), str(src), "-o", str(tmp_path / "layout")], check=True, timeout=60)
    out = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, timeout=10, check=True).stdout
    expected = []
    for cname, cls in STRUCTS.items():
        expected.append(f"{cname} size {abi.ctypes.sizeof(cls)}")
        expected += [f"{cname} {f} {getattr(cls, f).offset}" for f, _ in cls._fields_]
    assert out.split("\n")[:-1] == expected
    header = (bpf_dir / "guard.h").read_text()
    assert f"#define GUARD_ARGS_LEN {abi.ARGS_LEN}" in header


def test_find_cgroup2_root_prefers_the_unified_mount(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    )
    assert cgroup.find_root(str(mounts)) == Path("/sys/fs/cgroup/unified")
    mounts.write_text("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n")
    with pytest.raises(Exception, match="cgroup v2 is not mounted"):
        cgroup.find_root(str(mounts))


EVENTS = [
    {
        "time": "2026-01-01T00:00:00.000Z",
        "verdict": "deny",
        "rule": "deny name github.com",
        "kind": "dns",
        "name": "github.com",
        "addresses": ["140.82.112.3"],
        "port": 53,
        "protocol": "udp",
        "pid": 12,
        "cmdline": ["curl", "https://github.com/x"],
        "parents": [{"pid": 10, "cmdline": ["sh", "deploy.sh"]}],
        "comm": "curl",
        "qtype": "A",
    },
    {
        "time": "2026-01-01T00:00:01.000Z",
        "verdict": "allow",
        "rule": "default allow",
        "kind": "dns",
        "name": "pypi.org",
        "addresses": ["151.101.0.223"],
        "port": 53,
        "protocol": "udp",
        "pid": 13,
        "cmdline": ["pip", "install", "x"],
        "parents": [],
        "comm": "pip",
        "qtype": "A",
    },
    {
        "time": "2026-01-01T00:00:02.000Z",
        "verdict": "allow",
        "rule": "default allow",
        "kind": "connect",
        "name": "pypi.org",
        "addresses": ["151.101.0.223"],
        "port": 443,
        "protocol": "tcp",
        "pid": 13,
        "cmdline": ["pip", "install", "x"],
        "parents": [],
        "comm": "pip",
        "qtype": None,
    },
]


def test_report_formats(tmp_path: Path) -> None:
    f = tmp_path / "events.jsonl"
    f.write_text("\n".join(json.dumps(e) for e in EVENTS) + "\n")
    text = CliRunner().invoke(cli, ["guard", "report", str(f)])
    assert text.exit_code == 0
    assert "curl https://github.com/x" in text.output and "deny   dns      github.com" in text.output
    assert "allow  connect  pypi.org:443" in text.output
    doc = json.loads(CliRunner().invoke(cli, ["guard", "report", "--format", "json", str(f)]).output)
    assert [c["command"] for c in doc["commands"]] == ["curl https://github.com/x", "pip install x"]
    assert doc["commands"][0]["chain"] == "sh deploy.sh -> curl https://github.com/x"
    md = CliRunner().invoke(cli, ["guard", "report", "--format", "markdown", str(f)]).output
    assert "| `github.com` | dns | **deny** | deny 1 | deny name github.com |" in md


def test_report_rejects_a_file_that_is_not_events(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text('{"verdict": "deny"}\nnot json\n')
    r = CliRunner().invoke(cli, ["guard", "report", str(f)])
    assert r.exit_code == 2 and "x.jsonl:2" in r.output


def test_example_events_match_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs/guard-events.schema.json").read_text())
    for e in EVENTS:
        jsonschema.validate(e, schema)


def test_environment_warnings(tmp_path: Path) -> None:
    from phalanx.guard.runner import environment_warnings

    nss = tmp_path / "nsswitch.conf"
    nss.write_text("passwd: files\nhosts: files resolve [!UNAVAIL=return] dns\n")
    mounts = tmp_path / "mounts"
    mounts.write_text("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
    assert any("systemd-resolved" in w for w in environment_warnings(nss, mounts))
    nss.write_text("hosts: files dns\n")
    assert environment_warnings(nss, mounts) == []


def test_not_root_is_refused_with_the_reason_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    r = CliRunner().invoke(cli, ["guard", "--", "true"])
    assert r.exit_code == 71
    assert "needs root" in r.output and "sudo" in r.output


def test_missing_cgroup2_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from phalanx.guard import runner

    mounts = tmp_path / "mounts"
    mounts.write_text("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n")
    monkeypatch.setattr("os.geteuid", lambda: 0)
    real_find_root = cgroup.find_root
    monkeypatch.setattr(cgroup, "find_root", lambda: real_find_root(str(mounts)))
    with pytest.raises(NotSupportedError, match="cgroup v2 is not mounted"):
        runner.preflight()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["guard"], "Usage"),
        (["guard", "--events", "/nonexistent/dir/e.jsonl", "--", "true"], "cannot write the events file"),
        (["guard", "--deny", "not a name", "--", "true"], "neither a CIDR"),
        (["guard", "--upstream", "dns.example", "--", "true"], "must be an IP address"),
    ],
    ids=["no-command", "events-unwritable", "bad-deny", "bad-upstream"],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and message in r.output, r.output
