"""Benchmark: what the guard costs a guarded process, compared with the same process unguarded, in one run.

- connect() latency: a Python client opens and closes TCP connections to a listener on 127.0.0.1 and times each
  connect() (cgroup/connect4 + the egress program on the SYN); p50 and mean, several alternating rounds.
- Server and client are pinned to different CPUs, and the two modes alternate in order, round by round.
- bulk throughput: curl downloads 512 MiB over HTTP from a loopback server (sendfile), -w %{speed_download}; the
  egress program sees every packet the client sends.
The guarded runs carry a realistic policy (denied names and CIDRs) and write events. Loopback only; run as root:
python benchmarks/guard_connect.py [--connects 3000] [--rounds 21]. Prints a table; never fails on numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

SIZE = 1 << 29
SERVER_CPU, CLIENT_CPU = 0, 1  # pinned apart: where the scheduler puts them would otherwise swing results by 2x


def pin(cpu: int) -> None:
    if len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, {cpu})


def serve_connects(sock: socket.socket) -> None:
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        conn.close()


def serve_http(sock: socket.socket, payload: Path) -> None:
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn, payload.open("rb") as f:
            try:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % SIZE)
                conn.sendfile(f)
            except OSError:
                pass


def listener() -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(4096)
    return s


def bpf_costs() -> dict[str, tuple[int, int]]:
    """(total run ns, runs) of each program attached to this process's cgroup (needs kernel.bpf_stats_enabled)."""
    rel = Path("/proc/self/cgroup").read_text().split("0::", 1)[1].strip()
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if line.split()[2] == "cgroup2"]
    path = min(mounts, key=len) + rel
    show = subprocess.run(["bpftool", "-j", "cgroup", "show", path], capture_output=True, text=True, timeout=30)
    costs: dict[str, tuple[int, int]] = {}
    try:
        attached = json.loads(show.stdout)
    except json.JSONDecodeError:  # nothing attached (the unguarded run)
        return costs
    for prog in attached:
        info = subprocess.run(
            ["bpftool", "-j", "prog", "show", "id", str(prog["id"])], capture_output=True, text=True, timeout=30
        )
        p = json.loads(info.stdout)
        if p.get("run_cnt"):
            costs[p["name"]] = (p["run_time_ns"], p["run_cnt"])
    return costs


def run_curl(url: str) -> None:
    """Download with curl; print its speed and the egress program's total run time during it, as JSON."""
    import time

    pin(CLIENT_CPU)
    before = bpf_costs().get("guard_egress", (0, 0))
    t0 = time.perf_counter()
    out = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}", url], capture_output=True, text=True, timeout=300
    ).stdout
    elapsed = time.perf_counter() - t0
    after = bpf_costs().get("guard_egress", (0, 0))
    print(json.dumps({"speed": float(out or "nan"), "egress_share": (after[0] - before[0]) / 1e9 / elapsed}))


def run_probe(port: int, n: int) -> None:
    """Time n connect() calls; print p50 and mean in microseconds (and, when guarded, the programs' cost) as JSON."""
    import time

    pin(CLIENT_CPU)
    times = []
    for _ in range(n):
        s = socket.socket()
        t0 = time.perf_counter_ns()
        s.connect(("127.0.0.1", port))
        times.append((time.perf_counter_ns() - t0) / 1000)
        s.close()
    times.sort()
    result = {"p50": times[len(times) // 2], "mean": statistics.fmean(times), "p99": times[int(n * 0.99)]}
    print(json.dumps({**result, "bpf_ns": bpf_costs()}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connects", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--probe", type=int)
    ap.add_argument("--curl")
    args = ap.parse_args()
    if args.curl:
        run_curl(args.curl)
        return 0
    if args.probe:
        run_probe(args.probe, args.connects)
        return 0
    if os.geteuid() != 0:
        print("guard_connect: skipped (needs root)")
        return 0
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        payload = Path(d) / "payload"
        with payload.open("wb") as f:
            f.truncate(SIZE)  # sparse: sendfile reads zero pages, no disk involved
        pin(SERVER_CPU)  # the server threads inherit it
        c_sock, h_sock = listener(), listener()
        threading.Thread(target=serve_connects, args=(c_sock,), daemon=True).start()
        threading.Thread(target=serve_http, args=(h_sock, payload), daemon=True).start()
        c_port, h_port = c_sock.getsockname()[1], h_sock.getsockname()[1]
        events = Path(d) / "events.jsonl"
        guard = [
            sys.executable,
            "-m",
            "phalanx",
            "guard",
            "--quiet",
            "--upstream",
            "127.0.0.1:9",
            "--deny",
            "203.0.113.0/24",
            "--deny",
            "2001:db8::/32",
            "--deny",
            "*.githubusercontent.com",
            "--events",
            str(events),
            "--",
        ]
        probe = [sys.executable, __file__, "--probe", str(c_port), "--connects", str(args.connects)]
        curl = [sys.executable, __file__, "--curl", f"http://127.0.0.1:{h_port}/"]
        res: dict[str, list[dict[str, Any]]] = {"direct": [], "guarded": []}
        stats = Path("/proc/sys/kernel/bpf_stats_enabled")
        stats_before = stats.read_text().strip()
        stats.write_text("1")  # per-program run time, for the kernel-side cost below; restored at the end
        tput: dict[str, list[float]] = {"direct": [], "guarded": []}
        shares: list[float] = []
        try:
            for i in range(args.rounds):
                order = [("direct", []), ("guarded", guard)]
                for mode, prefix in order if i % 2 == 0 else reversed(order):  # no systematic order bias
                    out = subprocess.run([*prefix, *probe], capture_output=True, text=True, timeout=300).stdout
                    res[mode].append(json.loads(out.strip().splitlines()[-1]))
                    out = subprocess.run([*prefix, *curl], capture_output=True, text=True, timeout=300).stdout
                    dl = json.loads(out.strip().splitlines()[-1])
                    tput[mode].append(dl["speed"])
                    if mode == "guarded":
                        shares.append(dl["egress_share"])
        finally:
            c_sock.close()
            h_sock.close()
            stats.write_text(stats_before)
    med = {m: {k: statistics.median(r[k] for r in res[m]) for k in ("p50", "mean", "p99")} for m in res}
    bw = {m: statistics.median(tput[m]) for m in tput}
    print(f"connect() and bulk transfer, guarded vs unguarded ({args.rounds} rounds, medians, {os.cpu_count()} CPUs)")
    print(f"{'':26}{'direct':>12}{'guarded':>12}{'added':>12}")
    for k in ("p50", "mean", "p99"):
        print(
            f"{'connect() ' + k + ' us':26}{med['direct'][k]:>12.1f}{med['guarded'][k]:>12.1f}"
            f"{med['guarded'][k] - med['direct'][k]:>12.1f}"
        )
    costs: dict[str, list[float]] = {}
    for r in res["guarded"]:
        for name, (total, runs) in r["bpf_ns"].items():
            costs.setdefault(name, []).append(total / runs)
    for name in sorted(costs):
        print(f"{'  ' + name + ' ns/run':26}{'':>12}{statistics.median(costs[name]):>12.0f}")
    loss = (1 - bw["guarded"] / bw["direct"]) * 100
    print(f"{'HTTP download MB/s':26}{bw['direct'] / 1e6:>12.0f}{bw['guarded'] / 1e6:>12.0f}{-loss:>11.1f}%")
    print(f"{'  egress program CPU share of the transfer':44}{statistics.median(shares) * 100:>11.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
