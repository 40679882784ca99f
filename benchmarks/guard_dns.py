"""Benchmark: the guard's DNS proxy against the upstream directly and against the resolvers a user would pick
instead, side by side in one run.

Shape (issue 3, compared with CoreDNS's ~33,700 qps per 2 vCPUs and Cilium's DNS proxy p50 2.9 ms / p99 117 ms):
- throughput: dnsperf, as many queries per second as it gets answered;
- added latency: a paced client at 1,000 queries/s, p50 and p99 round trip.
The upstream is dnsmasq on 127.0.0.1 (Debian package dnsmasq-base), answering from a hosts file. It is reached:
- direct: no resolver in between;
- guard: dnsperf itself runs under `phalanx guard`, its queries to 127.0.0.153:53 redirected by eBPF to the
  proxy, attributed to its pid, decided and recorded as events;
- dnsmasq: a second dnsmasq as a forwarder with the same deny rule (`--address=/github.com/`, NXDOMAIN) and no
  cache (the guard's proxy does not cache either);
- coredns: CoreDNS with `template` (the deny rule) and `forward`, no cache, built from the Go module proxy
  (scripts/coredns, into ~/.cache/phalanx/coredns) when Go is installed, or PHALANX_COREDNS=/path/to/coredns.
Modes alternate in order round by round (--rounds), medians are reported, and the guard's figures as ratios.
--baseline-python PYTHON adds a guard run from another installation (e.g. the last release's venv), interleaved
with this one, for before/after comparisons on a noisy machine.
Run as root: python benchmarks/guard_dns.py [--seconds 5] [--rounds 3]. Prints a table; never fails on numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = 200
OTHER_DNS = "127.0.0.153"  # what the guarded clients aim at: nothing listens there, the guard redirects it
ROOT = Path(__file__).resolve().parents[1]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for_dns(host: str, port: int, timeout: float = 10.0) -> None:
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x06bench0\x04test\x00\x00\x01\x00\x01"
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        while time.monotonic() < deadline:
            s.sendto(q, (host, port))
            try:
                s.recv(512)
                return
            except TimeoutError:
                continue
    raise RuntimeError(f"no DNS server answered on {host}:{port}")


def start_dnsmasq(tmp: Path, host: str, port: int, args: list[str], name: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        ["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", f"--listen-address={host}",
         "--bind-interfaces", f"--port={port}", "--user=root", f"--pid-file={tmp / (name + '.pid')}", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for_dns(host, port)
    return proc


def coredns_binary() -> str | None:
    """PHALANX_COREDNS, or a CoreDNS built from scripts/coredns with the Go module proxy into a cache directory."""
    given = os.environ.get("PHALANX_COREDNS")
    if given:
        return given
    out = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "phalanx" / "coredns" / "coredns"
    if out.exists():
        return str(out)
    go = shutil.which("go")
    if go is None:
        return None
    print("guard_dns: building CoreDNS from scripts/coredns (Go module proxy) ...", file=sys.stderr)
    proc = subprocess.run([go, "build", "-o", str(out), "."], cwd=ROOT / "scripts" / "coredns", capture_output=True,
                          text=True, timeout=1800)  # fmt: skip
    if proc.returncode != 0:
        print(f"guard_dns: CoreDNS did not build:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return str(out)


def start_coredns(binary: str, tmp: Path, host: str, port: int, upstream: int) -> subprocess.Popen[bytes]:
    corefile = tmp / "Corefile"
    corefile.write_text(
        f".:{port} {{\n  bind {host}\n  template ANY ANY github.com {{\n    rcode NXDOMAIN\n  }}\n"
        f"  forward . 127.0.0.1:{upstream}\n}}\n"
    )
    proc = subprocess.Popen([binary, "-conf", str(corefile), "-quiet"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    wait_for_dns(host, port)
    return proc


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (not its children), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dnsperf(server: str, port: int, qfile: Path, seconds: float, prefix: list[str]) -> tuple[float, float]:
    """(queries/s, CPU microseconds the guard process spent per query during dnsperf; nan unguarded). The guarded
    command says when it is about to start dnsperf and waits after it, so the guard's CPU time is read around
    dnsperf alone (not the guard's start-up): unlike the wall clock, it hardly moves with what else the machine
    runs."""
    cmd = ["dnsperf", "-s", server, "-p", str(port), "-d", str(qfile), "-l", str(seconds), "-c", "4", "-q", "200"]
    script = ["sh", "-c", 'echo ready; read _; out=$("$@"); echo "$out" | tr "\\n" " "; echo; read _', "sh", *cmd]
    proc = subprocess.Popen([*prefix, *script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdout.readline()
    before = cpu_seconds(proc.pid) if prefix else 0.0
    proc.stdin.write("\n")
    proc.stdin.flush()
    out = proc.stdout.readline()
    cpu = cpu_seconds(proc.pid) - before if prefix else float("nan")
    proc.stdin.close()
    proc.wait(timeout=seconds + 60)
    m = re.search(r"Queries per second:\s+([\d.]+)", out)
    done = re.search(r"Queries completed:\s+(\d+)", out)
    qps = float(m.group(1)) if m else float("nan")
    per_query = cpu / int(done.group(1)) * 1e6 if done and int(done.group(1)) else float("nan")
    return qps, per_query


def probe(server: str, port: int, qps: int, seconds: float, prefix: list[str]) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--probe", f"{server}:{port}", "--qps", str(qps), "--seconds", str(seconds)]
    out = subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=seconds + 60).stdout
    try:
        return dict(json.loads(out.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError):
        return {"p50": float("nan"), "p99": float("nan"), "lost": float("nan"), "n": 0}


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
        delay = start + i / qps - time.perf_counter()
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

    def pct(p: float) -> float:
        return rtts[min(len(rtts) - 1, int(p / 100 * len(rtts)))] if rtts else float("nan")

    print(json.dumps({"p50": pct(50), "p99": pct(99), "lost": lost, "n": n}))


def guard_prefix(python: str, upstream: int, events: Path) -> list[str]:
    return [python, "-m", "phalanx", "guard", "--quiet", "--upstream", f"127.0.0.1:{upstream}",
            "--deny", "github.com", "--deny", "*.githubusercontent.com", "--events", str(events), "--"]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--qps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline-python", help="also measure the guard of this Python's phalanx, interleaved")
    ap.add_argument("--no-resolvers", action="store_true", help="skip the dnsmasq and CoreDNS forwarders")
    ap.add_argument("--probe")
    args = ap.parse_args()
    if args.probe:
        run_probe(args.probe, args.qps, args.seconds)
        return 0
    missing = [t for t in ("dnsmasq", "dnsperf") if shutil.which(t) is None]
    if missing or os.geteuid() != 0:
        print(f"guard_dns: skipped (needs root and {', '.join(missing) or 'nothing else'})")
        return 0
    coredns = None if args.no_resolvers else coredns_binary()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        hosts = tmp / "hosts"
        hosts.write_text("".join(f"127.0.1.{i % 250 + 1} bench{i}.test\n" for i in range(NAMES)))
        qfile = tmp / "queries"
        qfile.write_text("".join(f"bench{i}.test A\n" for i in range(NAMES)))
        port = free_port()
        procs = [start_dnsmasq(tmp, "127.0.0.1", port, [f"--addn-hosts={hosts}", "--local=/test/",
                                                        "--cache-size=10000"], "upstream")]  # fmt: skip
        # mode -> (server, port, command prefix)
        modes: dict[str, tuple[str, int, list[str]]] = {
            "direct": ("127.0.0.1", port, []),
            "guard": (OTHER_DNS, 53, guard_prefix(sys.executable, port, tmp / "events.jsonl")),
        }
        if args.baseline_python:
            modes["guard (baseline)"] = (OTHER_DNS, 53, guard_prefix(args.baseline_python, port, tmp / "b.jsonl"))
        try:
            if not args.no_resolvers:
                fwd = free_port("127.0.0.2")
                procs.append(start_dnsmasq(tmp, "127.0.0.2", fwd, [f"--server=127.0.0.1#{port}", "--cache-size=0",
                                                                   "--address=/github.com/"], "forwarder"))  # fmt: skip
                modes["dnsmasq"] = ("127.0.0.2", fwd, [])
                if coredns is not None:
                    cd_port = free_port("127.0.0.3")
                    procs.append(start_coredns(coredns, tmp, "127.0.0.3", cd_port, port))
                    modes["coredns"] = ("127.0.0.3", cd_port, [])
            qps: dict[str, list[float]] = {m: [] for m in modes}
            cpu: dict[str, list[float]] = {m: [] for m in modes}
            lat: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
            for r in range(args.rounds):
                order = list(modes) if r % 2 == 0 else list(reversed(modes))  # no systematic order bias
                for mode in order:
                    server, p, prefix = modes[mode]
                    rate, per_query = dnsperf(server, p, qfile, args.seconds, prefix)
                    qps[mode].append(rate)
                    cpu[mode].append(per_query)
                    lat[mode].append(probe(server, p, args.qps, args.seconds, prefix))
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=10)
    report(list(modes), qps, cpu, lat, args)
    return 0


def report(modes: list[str], qps: dict[str, list[float]], cpu: dict[str, list[float]],
           lat: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:  # fmt: skip
    med = {m: statistics.median(qps[m]) for m in modes}
    p50 = {m: statistics.median(x["p50"] for x in lat[m]) for m in modes}
    p99 = {m: statistics.median(x["p99"] for x in lat[m]) for m in modes}
    lost = {m: sum(x["lost"] for x in lat[m]) for m in modes}
    print(f"DNS through each resolver to dnsmasq ({args.seconds:g} s per run, {args.rounds} rounds alternating, "
          f"medians, {os.cpu_count()} CPUs)")  # fmt: skip
    print(f"{'':18}{'queries/s':>11}{'guard/this':>12}{'p50 ms':>9}{'p99 ms':>9}{'lost':>7}   per round (q/s)")
    for m in modes:
        ratio = med["guard"] / med[m] if med[m] else float("nan")
        rounds = " ".join(f"{x:.0f}" for x in qps[m])
        print(f"{m:18}{med[m]:>11.0f}{ratio:>12.2f}{p50[m]:>9.3f}{p99[m]:>9.3f}{lost[m]:>7.0f}   {rounds}")
    print(f"(latency: a paced client at {args.qps} q/s; 'guard/this' > 1 means the guard is faster)")
    if "guard (baseline)" in modes:
        pairs = [g / b for g, b in zip(qps["guard"], qps["guard (baseline)"], strict=True) if b]
        print(f"guard / baseline queries/s, round by round: {' '.join(f'{x:.2f}' for x in pairs)}; "
              f"median {statistics.median(pairs):.2f}")  # fmt: skip
    for m in (m for m in modes if m.startswith("guard")):
        print(f"{m} process CPU per query: median {statistics.median(cpu[m]):.1f} us "
              f"(rounds: {' '.join(f'{x:.1f}' for x in cpu[m])})")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
