"""``phalanx serve`` end to end against the test API server on loopback (issue 8 benchmarks).

    python benchmarks/serve_perf.py                       # every shape
    python benchmarks/serve_perf.py SchedulingBasic       # one shape
    python benchmarks/serve_perf.py --in-process-writes   # binder threads in the scheduler's process (no writer)
    python benchmarks/serve_perf.py --real [--version 1.37.2]  # a real kube-apiserver and etcd (phalanx.testenv)

The API server (tests/kube/apiserver.py) runs in its own process, filled before the scheduler starts; the scheduler
runs in this process with client rate limits lifted (qps 0) and its writes in a writer process, and both talk to it
over HTTP on 127.0.0.1 with the official client: list, watch, one pods/binding POST and one Scheduled event per
pod. Nodes are scheduler_perf's node-default (4 CPU, 32Gi, 110 pods), pods its pod-default (100m CPU, 500Mi).

With ``--real`` the same shapes are created as objects in a real kube-apiserver v1.36.3 (or the version given), backed
by a real etcd, both on loopback (no controller manager: nothing else writes), before the scheduler starts; the
scheduler runs with the phalanx-scheduler ServiceAccount's token and deploy/'s RBAC. The CPU columns are then
scheduler/writer/kube-apiserver/etcd.

Columns: pods bound by the scheduler, seconds from its start to the first bind, pods/s from the first bind to the
last (every pod is pending when the scheduler starts, unlike scheduler_perf, which creates them while it runs),
p50/p99 bind latency (from the engine's decision to the API server's answer, queueing in the binder included),
the scheduler's peak RSS, the CPU seconds each process used (to see which one is the bottleneck) and how many
Scheduled events were dropped by the binder's backlog.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import resource
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kube.apiserver import APIServer, Store
from phalanx.kube.serve import ServeOptions, Server
from phalanx.testenv import ControlPlane
from phalanx.testenv.bulk import create_many

ROOT = Path(__file__).resolve().parent.parent

SHAPES: dict[str, dict[str, int]] = {
    "SchedulingBasic": {"nodes": 5000, "bound": 5000, "pending": 10000, "gang": 0},
    "GangScheduling-1000x3": {"nodes": 5000, "bound": 0, "pending": 3000, "gang": 3},
    "GangScheduling-10x1000": {"nodes": 5000, "bound": 0, "pending": 10000, "gang": 1000},
    "StartToFirstBind-150k": {"nodes": 5000, "bound": 140000, "pending": 10000, "gang": 0},
}


def _pod(name: str, node: str = "", group: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "phalanx",
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}],
    }
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def fill(store: Store, shape: dict[str, int]) -> None:
    nodes = shape["nodes"]
    for i in range(nodes):
        alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
        store.create("nodes", {"metadata": {"name": f"node-{i:05d}"}, "status": {"allocatable": alloc}})
    for i in range(shape["bound"]):
        store.create("pods", _pod(f"init-{i:06d}", node=f"node-{i % nodes:05d}"))
    size = shape["gang"]
    for g in range(shape["pending"] // size if size else 0):
        spec = {"schedulingPolicy": {"gang": {"minCount": size}}}
        store.create("podgroups", {"metadata": {"name": f"g{g:05d}", "namespace": "default"}, "spec": spec})
    for i in range(shape["pending"]):
        store.create("pods", _pod(f"pod-{i:06d}", group=f"g{i // size:05d}" if size else ""))


def _serve_api(shape: dict[str, int], port_out: Any, done: Any) -> None:
    store = Store(history_limit=1_000_000)
    fill(store, shape)
    with APIServer(store) as srv:
        port_out.put((srv.url, _cpu(resource.RUSAGE_SELF)))
        done.wait()
        port_out.put(_cpu(resource.RUSAGE_SELF))


@dataclass
class Result:
    bound: int
    first_bind: float
    rate: float
    p50_ms: float
    p99_ms: float
    rss_mib: float
    cpu_scheduler: float
    cpu_writer: float
    cpu_apiserver: float
    dropped: int
    cpu_etcd: float | None = None
    fill_seconds: float = 0.0


def _cpu(who: int) -> float:
    use = resource.getrusage(who)
    return use.ru_utime + use.ru_stime


def _timed_binds(server: Server, latencies: list[float]) -> None:
    """Record, per binding, the time from the engine's decision (submission to the binder) to the answer."""
    binder = server.binder
    submit = binder.submit

    def timed(fn: Any, *args: Any, done: Any = None) -> None:
        if fn != binder.bind or done is None:
            submit(fn, *args, done=done)
            return
        t0 = time.perf_counter()

        def answered(err: Any) -> None:
            latencies.append(time.perf_counter() - t0)
            done(err)

        submit(fn, *args, done=answered)

    binder.submit = timed  # type: ignore[method-assign]


def _quantile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def run(name: str, shape: dict[str, int], writer_process: bool, workers: int, timeout: float = 600.0) -> Result:
    ctx = mp.get_context("fork")
    port_out, done = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve_api, args=(shape, port_out, done), daemon=True)
    proc.start()
    url, api_cpu0 = port_out.get(timeout=timeout)
    opts = ServeOptions(
        host=url, qps=0, leader_elect=False, health_port=None, bind_workers=workers, writer_process=writer_process
    )
    result = _measure(opts, shape, timeout)
    done.set()
    result.cpu_apiserver = port_out.get(timeout=30) - api_cpu0
    proc.join(30)
    return result


def _measure(opts: ServeOptions, shape: dict[str, int], timeout: float) -> Result:
    """Run one scheduler until every pending pod is bound (or ``timeout``); the API server's CPU is the caller's."""
    server = Server(opts)
    latencies: list[float] = []
    _timed_binds(server, latencies)
    cpu0, children0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    bound = server.metrics
    deadline = start + timeout
    while bound.get("phalanx_bindings_total", result="bound") < shape["pending"] and time.monotonic() < deadline:
        time.sleep(0.05)
    end = time.monotonic()
    n = int(bound.get("phalanx_bindings_total", result="bound"))
    dropped = int(bound.get("phalanx_api_writes_total", kind="event", result="dropped"))
    first = server.controller.first_bind or end
    cpu = _cpu(resource.RUSAGE_SELF) - cpu0
    server.stop.set()
    thread.join(30)
    writer_cpu = _cpu(resource.RUSAGE_CHILDREN) - children0  # the writer process has exited
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Result(
        n,
        first - start,
        n / max(end - first, 1e-9),
        _quantile(latencies, 0.5) * 1000,
        _quantile(latencies, 0.99) * 1000,
        rss,
        cpu,
        writer_cpu,
        0.0,
        dropped,
    )


def _objects(shape: dict[str, int]) -> list[tuple[str, dict[str, Any]]]:
    """The shape's nodes, bound pods, PodGroups (v1alpha2, as v1.36 serves them) and pending pods, as API writes."""
    out: list[tuple[str, dict[str, Any]]] = []
    nodes = shape["nodes"]
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    for i in range(nodes):
        meta = {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"node-{i:05d}"}}
        out.append(("/api/v1/nodes", {"metadata": meta, "status": {"capacity": alloc, "allocatable": alloc}}))
    pods = "/api/v1/namespaces/default/pods"
    for i in range(shape["bound"]):
        out.append((pods, _real_pod(f"init-{i:06d}", node=f"node-{i % nodes:05d}")))
    size = shape["gang"]
    groups = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups"
    for g in range(shape["pending"] // size if size else 0):
        spec = {"schedulingPolicy": {"gang": {"minCount": size}}}
        out.append((groups, {"metadata": {"name": f"g{g:05d}", "namespace": "default"}, "spec": spec}))
    for i in range(shape["pending"]):
        out.append((pods, _real_pod(f"pod-{i:06d}", group=f"g{i // size:05d}" if size else "")))
    return out


def _real_pod(name: str, node: str = "", group: str = "") -> dict[str, Any]:
    pod = _pod(name, node, group)
    del pod["metadata"]["uid"]  # the API server assigns it
    pod["spec"]["automountServiceAccountToken"] = False
    return pod


def run_real(name: str, shape: dict[str, int], version: str, workers: int, timeout: float = 900.0) -> Result:
    inflight = ["--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000"]
    # Nodes are registered Ready: without a node lifecycle controller nothing would lift the not-ready taint that
    # this admission plugin puts on every new node.
    inflight.append("--disable-admission-plugins=TaintNodesByCondition")
    with ControlPlane(version, apiserver_args=inflight, controller_manager=False) as cp:
        cp.kubectl("apply", "-f", str(ROOT / "deploy"))
        t0 = time.monotonic()
        create_many(cp, _objects(shape), workers=16)
        fill = time.monotonic() - t0
        api0, etcd0 = cp.cpu_seconds("kube-apiserver"), cp.cpu_seconds("etcd")
        kubeconfig = cp.service_account_kubeconfig("phalanx-system", "phalanx-scheduler")
        opts = ServeOptions(
            kubeconfig=str(kubeconfig), qps=0, leader_elect=False, health_port=None, bind_workers=workers
        )
        result = _measure(opts, shape, timeout)
        result.cpu_apiserver = cp.cpu_seconds("kube-apiserver") - api0
        result.cpu_etcd = cp.cpu_seconds("etcd") - etcd0
        result.fill_seconds = fill
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", default=list(SHAPES))
    parser.add_argument("--in-process-writes", action="store_true", help="binder threads in the scheduler's process")
    parser.add_argument("--bind-workers", type=int, default=16)
    parser.add_argument("--real", action="store_true", help="a real kube-apiserver and etcd (phalanx.testenv)")
    parser.add_argument("--version", default="1.36.3", help="with --real: the Kubernetes version")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    head = f"{'shape':24} {'nodes':>6} {'pods in server':>15} {'bound':>7} {'start->1st bind s':>18} {'pods/s':>8}"
    cpu_head = "CPU s sched/writer/api/etcd" if args.real else "CPU s sched/writer/api"
    print(f"{head} {'p50/p99 bind ms':>16} {'RSS MiB':>8} {cpu_head:>28} {'events dropped':>15}")
    for name in args.shapes:
        shape = SHAPES[name]
        if args.real:
            r = run_real(name, shape, args.version, args.bind_workers)
        else:
            r = run(name, shape, not args.in_process_writes, args.bind_workers)
        total = shape["bound"] + shape["pending"]
        row = f"{name:24} {shape['nodes']:>6} {total:>15} {r.bound:>7} {r.first_bind:>18.2f} {r.rate:>8.0f}"
        lat = f"{r.p50_ms:.0f}/{r.p99_ms:.0f}"
        cpu = f"{r.cpu_scheduler:.1f}/{r.cpu_writer:.1f}/{r.cpu_apiserver:.1f}"
        if r.cpu_etcd is not None:
            cpu += f"/{r.cpu_etcd:.1f}"
        print(f"{row} {lat:>16} {r.rss_mib:>8.0f} {cpu:>28} {r.dropped:>15}", flush=True)
        if args.real:
            print(f"    (filling the API server took {r.fill_seconds:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
