"""The guard end to end, DNS side: real clients (curl, getent, dig over UDP and TCP, python, git) in a guarded
cgroup, talking to the fake internet on loopback. Every DNS query must reach the proxy, whatever server it aimed at."""

from __future__ import annotations

import pytest

from conftest import OTHER_DNS, Net, denied

DIG = f"dig +time=2 +tries=1 @{OTHER_DNS}"


def test_allowed_name_works_and_is_recorded(guard, net: Net) -> None:
    r = guard(f"curl -sS -m 5 {net.url('allowed.test')}")
    assert r.returncode == 0, r.stderr
    assert "hello from 127.0.0.10" in r.stdout
    dns = [e for e in r.events if e["kind"] == "dns" and e["name"] == "allowed.test"]
    assert dns and all(e["verdict"] == "allow" for e in dns)
    assert dns[0]["addresses"] == ["127.0.0.10"] or dns[1]["addresses"] == ["127.0.0.10"]
    assert dns[0]["cmdline"][0] == "curl"


def test_denied_name_fails_fast_with_nxdomain_and_names_the_process(guard, net: Net) -> None:
    r = guard(f"curl -sS -m 5 {net.url('denied.test')}; echo curl=$?", "--deny", "denied.test")
    assert "curl=6" in r.stdout  # curl's "could not resolve host"
    ev = denied(r.events, "dns")
    assert ev and ev[0]["name"] == "denied.test" and ev[0]["rule"] == "deny name denied.test"
    assert ev[0]["cmdline"][:1] == ["curl"] and net.url("denied.test") in ev[0]["cmdline"]
    assert isinstance(ev[0]["pid"], int)
    assert ev[0]["parents"][0]["cmdline"][:2] == ["sh", "-c"]  # the chain goes up to the guarded command
    assert "blocked dns denied.test" in r.stderr


def test_wildcard_rule_denies_subdomains(guard, net: Net) -> None:
    r = guard(f"curl -sS -m 5 {net.url('api.wild.test')}; echo curl=$?", "--deny", "*.wild.test")
    assert "curl=6" in r.stdout
    assert denied(r.events, "dns")[0]["rule"] == "deny name *.wild.test"


def test_audit_mode_blocks_nothing_and_records_everything(guard, net: Net) -> None:
    r = guard(f"curl -sS -m 5 {net.url('denied.test')}", "--audit", "--deny", "denied.test")
    assert r.returncode == 0 and "hello from 127.0.0.20" in r.stdout
    audited = [e for e in r.events if e["verdict"] == "audit"]
    assert {e["kind"] for e in audited} == {"dns", "connect"}
    assert not denied(r.events)
    assert "would block" in r.stderr


def test_query_to_another_dns_server_is_redirected_udp_and_tcp(guard, net: Net) -> None:
    r = guard(f"{DIG} +short allowed.test; {DIG} +tcp +short allowed.test")
    assert r.stdout.split() == ["127.0.0.10", "127.0.0.10"], r.stderr
    protocols = {e["protocol"] for e in r.events if e["kind"] == "dns"}
    assert protocols == {"udp", "tcp"}
    assert all(e["cmdline"][0] == "dig" for e in r.events if e["kind"] == "dns")


def test_denied_name_over_tcp_gets_nxdomain(guard, net: Net) -> None:
    r = guard(f"{DIG} +tcp denied.test", "--deny", "denied.test")
    assert "status: NXDOMAIN" in r.stdout
    assert denied(r.events, "dns")[0]["protocol"] == "tcp"


def test_edns_is_passed_through(guard, net: Net) -> None:
    r = guard(f"{DIG} +edns=0 allowed.test; {DIG} +edns=0 denied.test", "--deny", "denied.test")
    assert r.stdout.count("OPT PSEUDOSECTION") == 2, r.stdout


def test_getent_through_glibc(guard, net: Net) -> None:
    r = guard("getent hosts allowed.test; getent ahostsv4 denied.test; echo getent=$?", "--deny", "denied.test")
    assert "127.0.0.10" in r.stdout and "getent=2" in r.stdout
    assert denied(r.events, "dns")[0]["cmdline"][0] == "getent"


def test_aaaa_is_answered_never_dropped(guard, net: Net) -> None:
    r = guard(f"{DIG} AAAA +short v6.test; {DIG} AAAA denied.test", "--deny", "denied.test")
    assert "::1" in r.stdout and "status: NXDOMAIN" in r.stdout
    assert "timed out" not in r.stdout


def test_unconnected_udp_sendto_is_redirected_and_reply_source_restored(guard, net: Net) -> None:
    code = (
        "import socket;"
        "q=bytes.fromhex('abcd01000001000000000000')+b'\\x07allowed\\x04test\\x00\\x00\\x01\\x00\\x01';"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(3);"
        f"s.sendto(q,('{OTHER_DNS}',53));d,a=s.recvfrom(512);"
        "print('from',a[0],a[1],'id',d[:2].hex(),'ip','.'.join(map(str,d[-4:])))"
    )
    r = guard(f'python3 -c "{code}"')
    assert f"from {OTHER_DNS} 53 id abcd ip 127.0.0.10" in r.stdout, r.stderr
    assert "python" in r.events[0]["cmdline"][0]


def test_python_getaddrinfo_and_ipv6_query(guard, net: Net) -> None:
    code = "import socket;print(sorted({a[4][0] for a in socket.getaddrinfo('dual.test',80,proto=socket.IPPROTO_TCP)}))"
    r = guard(f'python3 -c "{code}"')
    assert "['127.0.0.10', '::1']" in r.stdout, r.stderr


def test_git_ls_remote_over_http(guard, net: Net) -> None:
    r = guard(
        f"git ls-remote {net.url('allowed.test', '/r')}; git ls-remote {net.url('denied.test', '/r')}; echo git=$?",
        "--deny",
        "denied.test",
    )
    assert "refs/heads/main" in r.stdout and "git=128" in r.stdout, r.stderr
    ev = denied(r.events, "dns")[0]
    assert ev["cmdline"][0].endswith("git-remote-http")  # git's helper process does the HTTP
    assert ["git", "ls-remote"] in [p["cmdline"][:2] for p in ev["parents"]]


def test_events_of_a_real_run_match_the_schema_and_name_the_right_pid(guard, net: Net, tmp_path) -> None:
    import json
    from pathlib import Path

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs/guard-events.schema.json").read_text())
    pidfile = tmp_path / "pid"
    script = f"sh -c 'echo $$ > {pidfile}; exec curl -sS -m 5 {net.url('denied.test')}'; {DIG} allowed.test"
    r = guard(script, "--deny", "denied.test")
    assert r.events
    for e in r.events:
        jsonschema.validate(e, schema)
    assert denied(r.events, "dns")[0]["pid"] == int(pidfile.read_text())


def test_dns_to_an_ipv6_server_is_redirected(guard, net: Net) -> None:
    r = guard("dig +short +time=2 +tries=1 @::1 allowed.test; dig +tcp +short +time=2 +tries=1 @::1 allowed.test")
    assert r.stdout.split() == ["127.0.0.10", "127.0.0.10"], r.stdout + r.stderr
    code = (
        "import socket;"
        "q=bytes.fromhex('abcd01000001000000000000')+b'\\x07allowed\\x04test\\x00\\x00\\x01\\x00\\x01';"
        "s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM);s.settimeout(3);"
        "s.sendto(q,('::1',53));d,a=s.recvfrom(512);print('from',a[0],a[1],'ip','.'.join(map(str,d[-4:])))"
    )
    r = guard(f'python3 -c "{code}"')
    assert "from ::1 53 ip 127.0.0.10" in r.stdout, r.stderr
