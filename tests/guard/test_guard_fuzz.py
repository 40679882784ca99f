"""Fuzzing the guard's inputs with hypothesis: policy files (mutated valid policies, random YAML values, random
bytes), the run's flags, provider-ranges files and DNS messages. The rule for every bad input: exit 2 with
`FILE[:LINE]: FIELD.PATH: message` (or the flag's name), never a traceback, never an internal error.

The in-repo run is short. A longer one: PHALANX_FUZZ_EXAMPLES=5000 python -m pytest tests/guard/test_guard_fuzz.py
--hypothesis-show-statistics (the statistics list each outcome: valid, or the kind of error)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from unittest import mock

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from phalanx.cli import cli
from phalanx.guard import dnswire, policy, policyfile
from phalanx.guard.errors import PolicyError

EXAMPLES = int(os.environ.get("PHALANX_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXAMPLE = (Path(__file__).resolve().parents[2] / "examples/guard/guard.yaml").read_bytes()

# Entries that are valid, nearly valid, or nothing like either.
ENTRY = st.one_of(
    st.sampled_from(["github.com", "*.githubusercontent.com", "140.82.112.0/20", "2001:db8::/32", "10.0.0.1",
                     "*.", "*", "-a.com", "a..b", "10.0.0.0/33", "::1/200", "caf\u00e9.com", "x" * 64 + ".com",
                     "10.0.0.1:53", "[::1]:53", "[::1]:99999", "1.1.1.1:0", "1.1.1.1:abc", "", " ", "\x00"]),
    st.text(max_size=40),
)  # fmt: skip
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30), ENTRY,
)  # fmt: skip
VALUE = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                     max_size=3), max_leaves=12)  # fmt: skip
FIELD = st.one_of(st.sampled_from(policyfile.FIELDS), st.text(max_size=12))
DOCUMENT = st.dictionaries(FIELD, st.one_of(VALUE, st.lists(ENTRY, max_size=5)), max_size=6)


def _mutate(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(data)
    for pos, cut, insert in edits:
        pos %= len(out) + 1
        out[pos : pos + cut] = insert
    return bytes(out)


POLICY_BYTES = st.one_of(
    DOCUMENT.map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode("utf-8", "surrogatepass")),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 8), st.binary(max_size=6)), min_size=1, max_size=4).map(
        lambda e: _mutate(EXAMPLE, e)
    ),
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")),
)
_RULE = r"^{path}(:\d+)?: \S"


def _outcome(message: str, path: str) -> str:
    rest = message[len(path) :].lstrip(":0123456789 ")
    return re.split(r"[:(]", rest, maxsplit=1)[0][:40]


@FUZZ
@given(POLICY_BYTES)
def test_any_policy_file_loads_or_fails_with_file_line_and_field(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "policy.yaml"
        path.write_bytes(data)
        try:
            policy.load_file(path)
            event("valid")
        except PolicyError as exc:
            assert re.match(_RULE.format(path=re.escape(str(path))), str(exc)), str(exc)
            event(f"error: {_outcome(str(exc), str(path))}")


@settings(max_examples=max(20, EXAMPLES // 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(POLICY_BYTES)
def test_validate_policy_never_shows_a_traceback(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "policy.yaml"
        path.write_bytes(data)
        r = CliRunner().invoke(cli, ["guard", "validate-policy", str(path)])
        assert r.exit_code in (0, 2), r.output
        assert "Traceback" not in r.output and "internal error" not in r.output
        assert r.exception is None or isinstance(r.exception, SystemExit)
        if r.exit_code == 2:
            assert r.output.startswith(f"phalanx guard: error: {path}"), r.output
        event(f"exit {r.exit_code}")


FLAG_VALUES = {
    "--deny": ENTRY,
    "--allow": ENTRY,
    "--upstream": st.one_of(ENTRY, st.integers(-5, 70_000).map(lambda p: f"127.0.0.1:{p}")),
    "--keep-cap": st.one_of(st.sampled_from(["net_raw", "CAP_SYS_ADMIN", "all", "bogus"]), st.text(max_size=10)),
    "--user": st.one_of(
        st.sampled_from(["nobody", "root", "65534", "nobody:nogroup", "no-such-user"]), st.text(max_size=10)
    ),
    "--deny-ranges": st.one_of(st.just("{ranges}"), st.just("{ranges}#x"), st.text(max_size=10)),
    "--http-proxy-policy": st.one_of(st.sampled_from(["warn", "deny", "allow"]), st.text(max_size=6)),
}
FLAGS = st.lists(st.sampled_from(sorted(FLAG_VALUES)).flatmap(lambda f: st.tuples(st.just(f), FLAG_VALUES[f])),
                 max_size=6)  # fmt: skip


@settings(max_examples=max(20, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLAGS)
def test_any_flags_run_or_fail_naming_the_flag(flags: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        ranges = Path(d) / "ranges.txt"
        ranges.write_text("192.0.2.0/24\n")
        args = ["guard"]
        for flag, value in flags:
            args += [flag, value.replace("{ranges}", str(ranges))]
        with mock.patch("phalanx.guard.runner.run", return_value=0) as run:
            r = CliRunner().invoke(cli, [*args, "--", "true"])
    assert r.exit_code in (0, 2), (args, r.output)
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    if r.exit_code == 0:
        assert run.called
        event("ran")
    else:
        named = [f for f, _ in flags if f in r.output] + [str(ranges)] * (str(ranges) in r.output)
        assert named or "No such option" in r.output, (args, r.output)
        event(f"error: {(named or ['usage'])[0]}")


def _dns_message(name: str, cname: str, qtype: str, address: str) -> bytes:
    from dnslib import CNAME, QTYPE, RR, A, DNSHeader, DNSQuestion, DNSRecord

    # Built field by field: DNSRecord.question draws its id from `random`, which hypothesis forbids in strategies.
    reply = DNSRecord(DNSHeader(id=0x1234, qr=1, rd=1, ra=1), q=DNSQuestion(name or "x", getattr(QTYPE, qtype)))
    if cname:
        reply.add_answer(RR(name or "x", QTYPE.CNAME, rdata=CNAME(cname)))
    reply.add_answer(RR(cname or name or "x", QTYPE.A, rdata=A(address)))
    return bytes(reply.pack())


LABEL = st.from_regex(r"[a-z0-9-]{1,10}", fullmatch=True)
DNS_NAME = st.lists(LABEL, min_size=1, max_size=4).map(".".join)
DNS_MESSAGE = st.builds(
    _dns_message, DNS_NAME, st.one_of(st.just(""), DNS_NAME), st.sampled_from(["A", "AAAA", "HTTPS", "TXT"]),
    st.ip_addresses(v=4).map(str),
)  # fmt: skip
DNS_BYTES = st.one_of(
    st.binary(max_size=600),
    st.tuples(
        DNS_MESSAGE, st.lists(st.tuples(st.integers(0, 600), st.integers(0, 4), st.binary(max_size=4)), max_size=3)
    ).map(lambda m: _mutate(*m)),
)


@FUZZ
@given(DNS_BYTES)
def test_dns_messages_never_break_the_reader(data: bytes) -> None:
    try:
        q = dnswire.parse_question(data)
        dnswire.error_reply(data, q, dnswire.RCODE_NXDOMAIN)
        event("a question")
    except dnswire.WireError:
        event("not a question")
    ans = dnswire.answer(data)
    assert all(isinstance(a, str) for a, _ in ans.addresses)


CIDR = st.builds(lambda a, n: f"{a}/{n}", st.ip_addresses(v=4), st.integers(0, 32)) | st.builds(
    lambda a, n: f"{a}/{n}", st.ip_addresses(v=6), st.integers(0, 128)
)
RANGES_TEXT = st.lists(st.one_of(CIDR, ENTRY, st.just("# a comment"), st.just("")), max_size=8)
RANGES_BYTES = st.one_of(
    RANGES_TEXT.map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")),
    st.dictionaries(st.text(max_size=6), st.lists(st.one_of(CIDR, ENTRY), max_size=4), max_size=3).map(
        lambda d: __import__("json").dumps(d).encode()
    ),
    st.binary(max_size=300),
)


@FUZZ
@given(RANGES_BYTES, st.booleans())
def test_any_ranges_file_loads_or_names_the_file(data: bytes, as_json: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / ("ranges.json" if as_json else "ranges.txt")
        path.write_bytes(data)
        try:
            policy.build([], [], deny_ranges=[str(path)])
            event("valid")
        except PolicyError as exc:
            assert str(exc).startswith((str(path), "--deny-ranges[0]: ")), str(exc)
            event("error")


EVENT_LINE = st.one_of(
    st.dictionaries(
        st.sampled_from(["verdict", "kind", "name", "addresses", "port", "cmdline", "parents", "rule", "comm"]),
        VALUE,
        max_size=8,
    ).map(lambda d: {"verdict": "deny", **d}),
    VALUE,
)


@settings(max_examples=max(20, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENT_LINE, max_size=5), st.binary(max_size=40), st.sampled_from(["text", "json", "markdown"]))
def test_report_reads_any_events_file_or_names_the_line(lines: list[object], tail: bytes, fmt: str) -> None:
    import json

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "events.jsonl"
        path.write_bytes("".join(json.dumps(x, allow_nan=True) + "\n" for x in lines).encode() + tail)
        r = CliRunner().invoke(cli, ["guard", "report", "--format", fmt, str(path)])
    assert r.exit_code in (0, 2), r.output
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    if r.exit_code == 2:
        assert r.output.startswith(f"phalanx guard: error: {path}"), r.output
    event(f"exit {r.exit_code}")
