"""The guard in a setting closer to production: the guarded host and the fake internet are two network namespaces
of the test's own, joined by a veth pair (192.0.2.0/24, TEST-NET-1, which exists only inside them). The guard
runs in the host namespace and must behave exactly as on loopback."""

from __future__ import annotations

from pathlib import Path

from conftest import DENIED, HARDCODED, INET, NsNet, denied, ns_guard


def test_names_and_addresses_across_a_veth(nsnet: NsNet, tmp_path: Path) -> None:
    script = (
        f"curl -sS -m 5 {nsnet.url('allowed.test')}; curl -sS -m 5 {nsnet.url('denied.test')}; echo name=$?; "
        f"curl -sS -m 5 {nsnet.url(DENIED)}; echo addr=$?"
    )
    r = ns_guard(nsnet, tmp_path, script, "--deny", "denied.test")
    assert f"hello from {INET}" in r.stdout, r.stderr
    assert "name=6" in r.stdout and "addr=7" in r.stdout
    assert denied(r.events, "connect")[0]["addresses"] == [DENIED]
    assert ("allowed.test", "A", "udp") in nsnet.dns.asked  # the query crossed the veth to the upstream


def test_strict_mode_stops_a_hard_coded_address(nsnet: NsNet, tmp_path: Path) -> None:
    script = f"curl -sS -m 5 {nsnet.url('allowed.test')}; curl -sS -m 5 {nsnet.url(HARDCODED)}; echo hard=$?"
    r = ns_guard(nsnet, tmp_path, script, "--strict")
    assert f"hello from {INET}" in r.stdout and "hard=7" in r.stdout, r.stderr
    ev = denied(r.events, "connect")
    assert ev[0]["addresses"] == [HARDCODED] and ev[0]["rule"].startswith("strict")
