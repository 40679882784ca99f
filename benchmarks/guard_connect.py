"""Benchmark: what the guard costs a guarded process, compared with the same process unguarded, in one run.

- connect() latency: a Python client opens and closes TCP connections to a listener on 127.0.0.1 and times each
  connect() (cgroup/connect4 + the egress program on the SYN); p50 and mean, several alternating rounds.
- Server and client are pinned to different CPUs, and the two modes alternate in order, round by round.
- bulk throughput: curl downloads 512 MiB over HTTP from a loopback server (sendfile), -w %{speed_download}; the
  egress program sees every packet the client sends.
The guarded runs carry a realistic policy (denied names and CIDRs) and write events. --baseline-python PYTHON adds
the guard of another installation (e.g. the last release's venv), interleaved round by round, for before/after
comparisons on a noisy machine. Loopback only; run as root:
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


def run_cgroup_of(guard_pid: int) -> str | None:
    """The cgroup of the run a guard (by its pid) started: read from outside, where the whole tree is visible."""
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if line.split()[2] == "cgroup2"]
    parent = Path(min(mounts, key=len)) / "phalanx-guard"
    found = [p for p in parent.glob(f"{guard_pid}-*") if p.is_dir()] if parent.is_dir() else []
    return str(found[0]) if found else None


def bpf_costs(path: str | None) -> dict[str, tuple[int, int]]:
    """(total run ns, runs) of each program attached to a cgroup (needs kernel.bpf_stats_enabled). Measured from
    outside the run: inside it, bpf() is refused."""
    costs: dict[str, tuple[int, int]] = {}
    if path is None:
        return costs
    show = subprocess.run(["bpftool", "-j", "cgroup", "show", path], capture_output=True, text=True, timeout=30)
    try:
        attached = json.loads(show.stdout)
    except json.JSONDecodeError:  # nothing attached
        return costs
    if not isinstance(attached, list):  # {"error": ...}: the run is already gone
        return costs
    for prog in attached:
        info = subprocess.run(
            ["bpftool", "-j", "prog", "show", "id", str(prog["id"])], capture_output=True, text=True, timeout=30
        )
        p = json.loads(info.stdout)
        if p.get("run_cnt"):
            costs[p["name"]] = (p["run_time_ns"], p["run_cnt"])
    return costs


def measured(cmd: list[str], guarded: bool) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """Run a client (guarded or not); it prints its result and waits on stdin, so that the programs' costs are
    read while its run still exists."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    costs = bpf_costs(run_cgroup_of(proc.pid)) if guarded else {}
    proc.stdin.close()
    proc.wait(timeout=300)
    return json.loads(line), costs


def _wait_for_stdin() -> None:
    sys.stdout.flush()
    sys.stdin.read()


def run_curl(url: str) -> None:
    """Download with curl; print its speed and how long it took, as JSON."""
    import time

    pin(CLIENT_CPU)
    t0 = time.perf_counter()
    out = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}", url], capture_output=True, text=True, timeout=300
    ).stdout
    print(json.dumps({"speed": float(out or "nan"), "elapsed": time.perf_counter() - t0}))
    _wait_for_stdin()


def run_probe(port: int, n: int) -> None:
    """Time n connect() calls; print p50, mean and p99 in microseconds as JSON."""
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
    print(json.dumps({"p50": times[len(times) // 2], "mean": statistics.fmean(times), "p99": times[int(n * 0.99)]}))
    _wait_for_stdin()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connects", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--baseline-python", help="also measure the guard of this Python's phalanx, interleaved")
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
        guard_args = [
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
        modes: dict[str, list[str]] = {"direct": [], "guarded": [sys.executable, *guard_args]}
        if args.baseline_python:
            modes["baseline"] = [args.baseline_python, *guard_args]
        probe = [sys.executable, __file__, "--probe", str(c_port), "--connects", str(args.connects)]
        curl = [sys.executable, __file__, "--curl", f"http://127.0.0.1:{h_port}/"]
        res: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        stats = Path("/proc/sys/kernel/bpf_stats_enabled")
        stats_before = stats.read_text().strip()
        stats.write_text("1")  # per-program run time, for the kernel-side cost below; restored at the end
        tput: dict[str, list[float]] = {m: [] for m in modes}
        shares: dict[str, list[float]] = {m: [] for m in modes}
        try:
            for i in range(args.rounds):
                order = list(modes.items())
                for mode, prefix in order if i % 2 == 0 else reversed(order):  # no systematic order bias
                    result, costs = measured([*prefix, *probe], bool(prefix))
                    res[mode].append({**result, "bpf_ns": costs})
                    dl, costs = measured([*prefix, *curl], bool(prefix))
                    tput[mode].append(dl["speed"])
                    shares[mode].append(costs.get("guard_egress", (0, 1))[0] / 1e9 / dl["elapsed"])
        finally:
            c_sock.close()
            h_sock.close()
            stats.write_text(stats_before)
    med = {m: {k: statistics.median(r[k] for r in res[m]) for k in ("p50", "mean", "p99")} for m in res}
    bw = {m: statistics.median(tput[m]) for m in tput}
    print(f"connect() and bulk transfer, guarded vs unguarded ({args.rounds} rounds, medians, {os.cpu_count()} CPUs)")
    guarded = [m for m in modes if m != "direct"]
    print(f"{'':26}{'direct':>12}" + "".join(f"{m:>12}{'added':>9}" for m in guarded))
    for k in ("p50", "mean", "p99"):
        row = f"{'connect() ' + k + ' us':26}{med['direct'][k]:>12.1f}"
        row += "".join(f"{med[m][k]:>12.1f}{med[m][k] - med['direct'][k]:>9.1f}" for m in guarded)
        print(row)
    for m in guarded:
        per_run: dict[str, list[float]] = {}
        for r in res[m]:
            for name, (total, runs) in r["bpf_ns"].items():
                per_run.setdefault(name, []).append(total / runs)
        for name in sorted(per_run):
            print(f"{'  ' + m + ' ' + name + ' ns/run':44}{statistics.median(per_run[name]):>8.0f}")
    row = f"{'HTTP download MB/s':26}{bw['direct'] / 1e6:>12.0f}"
    row += "".join(f"{bw[m] / 1e6:>12.0f}{(bw[m] / bw['direct'] - 1) * 100:>8.1f}%" for m in guarded)
    print(row)
    for m in guarded:
        print(f"{'  ' + m + ' egress program CPU share of the transfer':52}{statistics.median(shares[m]) * 100:>7.2f}%")
    if "baseline" in modes:
        print(
            f"guarded/baseline: connect p50 added {med['guarded']['p50'] - med['direct']['p50']:.1f} us vs "
            f"{med['baseline']['p50'] - med['direct']['p50']:.1f} us; download {bw['guarded'] / bw['baseline']:.3f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
