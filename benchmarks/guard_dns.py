"""Benchmark: the guard's DNS proxy versus the upstream directly, in one run.

Shape (issue 3, compared with CoreDNS's ~33,700 qps per 2 vCPUs and Cilium's DNS proxy p50 2.9 ms / p99 117 ms):
- throughput: dnsperf, as many queries per second as it gets answered, direct vs through a real guarded run
  (dnsperf itself runs under `phalanx guard`, its queries to 127.0.0.153:53 redirected by eBPF to the proxy,
  attributed to its pid, decided and recorded as events);
- added latency: a paced client at 1,000 queries/s, p50 and p99 round trip, direct vs guarded.
The upstream is dnsmasq on 127.0.0.1 (Debian package dnsmasq-base), answering from a hosts file. Loopback only.
Run as root: python benchmarks/guard_dns.py [--seconds 5]. Prints a table; never fails on numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = 200
OTHER_DNS = "127.0.0.153"  # what the guarded clients aim at: nothing listens there, the guard redirects it


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_dnsmasq(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    hosts = tmp / "hosts"
    hosts.write_text("".join(f"127.0.1.{i % 250 + 1} bench{i}.test\n" for i in range(NAMES)))
    port = free_port()
    proc = subprocess.Popen(
        [
            "dnsmasq",
            "--keep-in-foreground",
            "--no-resolv",
            "--no-hosts",
            f"--addn-hosts={hosts}",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            f"--port={port}",
            "--local=/test/",
            "--cache-size=10000",
            "--user=root",
            f"--pid-file={tmp / 'dnsmasq.pid'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    return proc, port


def dnsperf(server: str, port: int, qfile: Path, seconds: float, guard: list[str] | None) -> float:
    cmd = ["dnsperf", "-s", server, "-p", str(port), "-d", str(qfile), "-l", str(seconds), "-c", "4", "-q", "200"]
    out = subprocess.run([*(guard or []), *cmd], capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.search(r"Queries per second:\s+([\d.]+)", out)
    return float(m.group(1)) if m else float("nan")


def probe(server: str, port: int, qps: int, seconds: float, guard: list[str] | None) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--probe", f"{server}:{port}", "--qps", str(qps), "--seconds", str(seconds)]
    out = subprocess.run([*(guard or []), *cmd], capture_output=True, text=True, timeout=seconds + 60).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_probe(target: str, qps: int, seconds: float) -> None:
    """The paced client: one query every 1/qps s, waits for each answer; prints p50/p99 in ms as JSON."""
    host, _, port = target.rpartition(":")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    rtts: list[float] = []
    lost = 0
    n = int(qps * seconds)
    start = time.perf_counter()
    for i in range(n):
        name = f"bench{i % NAMES}.test".encode()
        labels = b"".join(len(x).to_bytes(1, "big") + x for x in name.split(b"."))
        q = (
            (i & 0xFFFF).to_bytes(2, "big")
            + b"\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
            + labels
            + b"\x00\x00\x01\x00\x01"
        )
        due = start + i / qps
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        t0 = time.perf_counter()
        s.sendto(q, (host, int(port)))
        try:
            while s.recv(512)[:2] != q[:2]:
                pass
            rtts.append((time.perf_counter() - t0) * 1000)
        except TimeoutError:
            lost += 1
    rtts.sort()
    pct = lambda p: rtts[min(len(rtts) - 1, int(p / 100 * len(rtts)))] if rtts else float("nan")  # noqa: E731
    print(json.dumps({"p50": pct(50), "p99": pct(99), "lost": lost, "n": n}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--qps", type=int, default=1000)
    ap.add_argument("--probe")
    args = ap.parse_args()
    if args.probe:
        run_probe(args.probe, args.qps, args.seconds)
        return 0
    missing = [t for t in ("dnsmasq", "dnsperf") if shutil.which(t) is None]
    if missing or os.geteuid() != 0:
        print(f"guard_dns: skipped (needs root and {', '.join(missing) or 'nothing else'})")
        return 0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        upstream, port = start_dnsmasq(tmp)
        try:
            qfile = tmp / "queries"
            qfile.write_text("".join(f"bench{i}.test A\n" for i in range(NAMES)))
            events = tmp / "events.jsonl"
            guard = [
                sys.executable,
                "-m",
                "phalanx",
                "guard",
                "--quiet",
                "--upstream",
                f"127.0.0.1:{port}",
                "--deny",
                "github.com",
                "--deny",
                "*.githubusercontent.com",
                "--events",
                str(events),
                "--",
            ]
            direct_qps = dnsperf("127.0.0.1", port, qfile, args.seconds, None)
            guarded_qps = dnsperf(OTHER_DNS, 53, qfile, args.seconds, guard)
            direct_lat = probe("127.0.0.1", port, args.qps, args.seconds, None)
            guarded_lat = probe(OTHER_DNS, 53, args.qps, args.seconds, guard)
        finally:
            upstream.terminate()
            upstream.wait(timeout=10)
    print(f"DNS through the guard's proxy vs dnsmasq directly ({args.seconds:g} s each, {os.cpu_count()} CPUs)")
    print(f"{'':28}{'direct':>12}{'guarded':>12}{'added':>12}")
    print(f"{'max queries/s (dnsperf)':28}{direct_qps:>12.0f}{guarded_qps:>12.0f}{'':>12}")
    for key in ("p50", "p99"):
        d, g = direct_lat[key], guarded_lat[key]
        print(f"{key + f' ms at {args.qps} q/s':28}{d:>12.3f}{g:>12.3f}{g - d:>12.3f}")
    print(f"{'lost at ' + str(args.qps) + ' q/s':28}{direct_lat['lost']:>12.0f}{guarded_lat['lost']:>12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
