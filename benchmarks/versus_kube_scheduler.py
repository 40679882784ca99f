"""kube-scheduler v1.36.3 and ``phalanx serve`` side by side, end to end, in one run on one machine (issue 13 §5).

    python benchmarks/versus_kube_scheduler.py                          # every shape, full size
    python benchmarks/versus_kube_scheduler.py SchedulingBasic --scale 0.1
    python benchmarks/versus_kube_scheduler.py --backlog --scale 0.1    # every pod pending before the start
    python benchmarks/versus_kube_scheduler.py --only phalanx --profile /tmp/prof   # py-spy of phalanx serve

For each shape, first kube-scheduler and then ``phalanx serve`` schedule the same objects, each against a fresh
control plane from phalanx.testenv (etcd + kube-apiserver v1.36.3 with the same flags and feature gates, and
kube-controller-manager's resourceclaim controller for the DRA shape, which turns templates into claims):

1. nodes (scheduler_perf's node-default: 4 CPU, 32Gi, 110 pods; a rack label for TAS), DRA objects and, for
   SchedulingBasic, the initial pods already bound (``nodeName``) are created;
2. the scheduler under test is started and waited for (``/readyz`` of each);
3. for the DRA shape, the initial pods are created and scheduled by it (not measured, as scheduler_perf does);
4. the measured phase: the PodGroups, then the pods are created by 8 client threads as fast as the API server
   takes them, while the scheduler runs; a watch (admin credentials, this process) records when each pod is seen
   bound. Stops when every pod is bound, or when nothing was bound for ``--stall`` seconds (and a fresh list
   agrees).

``--backlog`` instead creates the PodGroups and pods before step 2 (the DRA cluster then starts empty): the
scheduler's own throughput, not the client's creation rate, is the limit; latency then counts from the
scheduler's start, so it includes start-up (for phalanx serve: the interpreter, its imports and the lists).

Both schedulers get the same client rate limit (QPS 5000, burst 5000; kube-scheduler's defaults of 50/100 would
throttle it to 50 requests/s, and phalanx serve's defaults are the same 50/100) and evaluate every node
(kube-scheduler ``percentageOfNodesToScore: 100``; phalanx always scores all feasible nodes). kube-scheduler
runs with the control plane's gates (GenericWorkload, GangScheduling, TopologyAwareWorkloadScheduling,
WorkloadAwarePreemption, DRAWorkloadResourceClaims, WorkloadWithJob on), which enable its GangScheduling,
TopologyPlacementGenerator and PodGroupPodsCount plugins; phalanx serve runs its default profile (workload gates
on). Scheduled events: both write them (kube-scheduler through its event broadcaster, phalanx serve best effort).

Columns, per scheduler: pods bound in the measured phase, pods/s (live: bound / seconds from the first pod
created to the last seen bound; backlog: from the first bind to the last), the creation rate (live, to see when
the client, not the scheduler, was the limit) or the seconds from the start to the first bind (backlog), p50/p99
seconds from a pod's creation (the API server's answer to its POST) to its binding (the watch event) as this
client saw them, and the CPU seconds each process used in the measured phase: the scheduler (phalanx: serve plus
its writer process), kube-apiserver, etcd, this process (client + watch), and kube-controller-manager for DRA.
The ratio line gives phalanx / kube-scheduler in pods/s, kube / phalanx in p50 latency and in the time to the
last bind, and the scheduler's CPU per bound pod: a measure that moves much less with the machine's load than
the wall-clock ones. The machine's load average (1/5/15 min) is printed with each run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phalanx.testenv import ControlPlane
from phalanx.testenv.bulk import create_many
from phalanx.testenv.controlplane import free_port

ROOT = Path(__file__).resolve().parent.parent
RACK = "topology.kubernetes.io/rack"
DRIVER = "test-driver.cdi.k8s.io"
QPS = 5000
NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
GROUPS = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{NS}/podgroups"


@dataclass(frozen=True)
class Shape:
    nodes: int
    measured: int
    init: int = 0  # SchedulingBasic: bound before the scheduler starts; DRA: scheduled before the measured phase
    gang: int = 0  # pods per gang (0: no PodGroups)
    rack: int = 0  # nodes per rack, with a topology constraint on the rack label
    devices: int = 0  # DRA devices per node (one claim from a template per pod)

    def scaled(self, f: float) -> Shape:
        def s(n: int, floor: int = 1) -> int:
            return max(floor, round(n * f)) if n else 0

        measured = s(self.measured // self.gang) * self.gang if self.gang else s(self.measured)
        # Keep racks big enough for a gang, and the cluster big enough for the gangs' pods.
        return Shape(s(self.nodes, 10), measured, s(self.init, 0), self.gang, self.rack, self.devices)


SHAPES: dict[str, Shape] = {
    "SchedulingBasic": Shape(nodes=5000, init=1000, measured=10000),
    "GangScheduling-1000x3": Shape(nodes=5000, measured=3000, gang=3),
    "GangScheduling-10x1000": Shape(nodes=5000, measured=10000, gang=1000),
    "TopologyAwareScheduling-2250x4": Shape(nodes=5000, measured=9000, gang=4, rack=100),
    "SchedulingWithResourceClaimTemplate": Shape(nodes=500, init=2500, measured=2500, devices=10),
}


# --- the objects -------------------------------------------------------------------------------------------------


def node_objects(shape: Shape) -> Iterator[tuple[str, dict[str, Any]]]:
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    for i in range(shape.nodes):
        name = f"node-{i:05d}"
        labels = {"kubernetes.io/hostname": name}
        if shape.rack:
            labels[RACK] = f"rack-{i // shape.rack}"
        status = {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]}
        yield "/api/v1/nodes", {"metadata": {"name": name, "labels": labels}, "status": status}


def dra_objects(shape: Shape) -> Iterator[tuple[str, dict[str, Any]]]:
    """scheduler_perf's test driver: a DeviceClass, one ResourceSlice of ``devices`` devices per node, the
    template each pod's claim comes from."""
    base = "/apis/resource.k8s.io/v1"
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    yield f"{base}/deviceclasses", {"metadata": {"name": "test-class"}, "spec": {"selectors": [selector]}}
    for i in range(shape.nodes):
        node = f"node-{i:05d}"
        spec = {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"device-{d}"} for d in range(shape.devices)],
        }
        yield f"{base}/resourceslices", {"metadata": {"name": f"{node}-slice"}, "spec": spec}
    request = {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
    template = {"spec": {"devices": {"requests": [request]}}}
    path = f"{base}/namespaces/{NS}/resourceclaimtemplates"
    yield path, {"metadata": {"name": "test-claim-template", "namespace": NS}, "spec": template}


def pod(name: str, scheduler: str, shape: Shape, node: str = "", group: str = "") -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "500Mi"}
    container: dict[str, Any] = {"name": "pause", "image": "registry.k8s.io/pause:3.10.2"}
    container["resources"] = {"requests": requests, "limits": requests}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [container],
        "automountServiceAccountToken": False,
    }
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if shape.devices:
        container["resources"]["claims"] = [{"name": "resource"}]
        spec["resourceClaims"] = [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}]
    return {"metadata": {"name": name, "namespace": NS}, "spec": spec}


def group_objects(shape: Shape) -> Iterator[tuple[str, dict[str, Any]]]:
    for g in range(shape.measured // shape.gang if shape.gang else 0):
        spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": shape.gang}}}
        if shape.rack:
            spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
        yield GROUPS, {"metadata": {"name": f"g{g:05d}", "namespace": NS}, "spec": spec}


def measured_pods(shape: Shape, scheduler: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for i in range(shape.measured):
        group = f"g{i // shape.gang:05d}" if shape.gang else ""
        yield PODS, pod(f"pod-{i:06d}", scheduler, shape, group=group)


# --- measuring ---------------------------------------------------------------------------------------------------


class BindWatch:
    """A watch on the namespace's pods: the wall time each pod was first seen with a nodeName.

    kube-apiserver closes a watch whose client falls behind (its per-watcher buffer fills while this process's
    threads are busy creating pods); the watch is then re-made from a fresh list, and pods the list shows bound
    for the first time get the list's time (late by at most the gap, which ``restarts`` counts)."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.bound: dict[str, float] = {}
        self.lock = threading.Lock()
        self.error = ""
        self.closing = False
        self.restarts = -1
        self.conn: http.client.HTTPSConnection | None = None
        rv = self._list()
        threading.Thread(target=self._run, args=(rv,), daemon=True, name="bind-watch").start()

    def resync(self) -> None:
        """Record what a list shows bound (at the list's time)."""
        self._list()

    def _list(self) -> str:
        listed = self.cp.request("GET", PODS)
        now = time.time()
        with self.lock:
            for obj in listed["items"]:
                if obj["spec"].get("nodeName"):
                    self.bound.setdefault(obj["metadata"]["name"], now)
        self.restarts += 1
        return str(listed["metadata"]["resourceVersion"])

    def _run(self, rv: str) -> None:
        while not self.closing:
            try:
                self._watch(rv)
            except Exception as exc:  # a bug here must show in the table, not make pods look unbound
                if not self.closing:
                    self.error = repr(exc)
                    return
            if not self.closing:
                rv = self._list()

    def _watch(self, rv: str) -> None:
        self.conn = http.client.HTTPSConnection("127.0.0.1", self.cp.port, context=self.cp._ssl(), timeout=3600)
        self.conn.request("GET", f"{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=3600")
        for line in self.conn.getresponse():
            ev = json.loads(line)
            obj = ev.get("object") or {}
            if ev.get("type") == "ERROR":  # 410 Gone and the like: list again
                return
            if ev.get("type") in ("ADDED", "MODIFIED") and (obj.get("spec") or {}).get("nodeName"):
                name = obj["metadata"]["name"]
                if name not in self.bound:
                    with self.lock:
                        self.bound.setdefault(name, time.time())

    def count(self, prefix: str) -> int:
        with self.lock:
            return sum(1 for n in self.bound if n.startswith(prefix))

    def close(self) -> None:
        # Not conn.close(): the reading thread holds the response's buffer; shutting the socket down ends its read.
        self.closing = True
        if self.conn is not None and self.conn.sock is not None:
            self.conn.sock.shutdown(socket.SHUT_RDWR)


def wait_bound(watch: BindWatch, prefix: str, want: int, stall: float) -> None:
    """Until ``want`` pods named ``prefix*`` are bound, or none was bound for ``stall`` seconds (checked against a
    fresh list before giving up: a gang binds all at once after a long wait)."""
    last, seen = time.monotonic(), -1
    while True:
        n = watch.count(prefix)
        if n >= want:
            return
        if n != seen:
            last, seen = time.monotonic(), n
        elif time.monotonic() - last > stall:
            watch.resync()
            if watch.count(prefix) == n:
                return
        time.sleep(0.1)


def proc_cpu(pid: int) -> float:
    """User plus system CPU seconds of ``pid`` and its live descendants (/proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            total += proc_cpu(int(child))
    return total


def self_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def quantile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


@dataclass
class Result:
    scheduler: str
    bound: int = 0
    rate: float = 0.0
    created_rate: float = 0.0
    p50: float = float("nan")
    p99: float = float("nan")
    cpu: dict[str, float] = field(default_factory=dict)
    load: str = ""
    note: str = ""
    first_bind: float = 0.0
    span: float = 0.0  # seconds from the first pod created (backlog: the scheduler's start) to the last bind


# --- the two schedulers ------------------------------------------------------------------------------------------


class KubeScheduler:
    name = "kube-scheduler"
    scheduler_name = "default-scheduler"

    def start(self, cp: ControlPlane, profile: Path | None) -> None:
        config = {"percentageOfNodesToScore": 100, "profiles": [{"schedulerName": self.scheduler_name}]}
        comp = cp.start_scheduler(config)  # clientConnection qps/burst 5000 (set by the testenv)
        port = next(a.split("=", 1)[1] for a in comp.argv if a.startswith("--secure-port="))
        _wait_http(f"https://127.0.0.1:{port}/readyz", insecure=True)
        self.cp = cp

    def cpu(self) -> float:
        return self.cp.cpu_seconds("kube-scheduler")

    def stop(self) -> None:
        self.cp.stop_scheduler()


class PhalanxServe:
    name = "phalanx"
    scheduler_name = "phalanx"

    def start(self, cp: ControlPlane, profile: Path | None) -> None:
        kubeconfig = cp.service_account_kubeconfig("phalanx-system", "phalanx-scheduler")
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "phalanx",
            "serve",
            f"--kubeconfig={kubeconfig}",
            f"--kube-api-qps={QPS}",
            f"--kube-api-burst={QPS}",
            "--no-leader-elect",
            "--health-address=127.0.0.1",
            f"--health-port={port}",
        ]
        self.log = (cp.log_dir() / "phalanx-serve.log").open("ab")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _wait_http(f"http://127.0.0.1:{port}/readyz", proc=self.proc)
        self.spy: subprocess.Popen[bytes] | None = None
        if profile is not None:
            profile.mkdir(parents=True, exist_ok=True)
            out = profile / f"phalanx-{cp.dir.name}.txt"
            spy = ["py-spy", "record", "--pid", str(self.proc.pid), "--subprocesses", "--rate", "50"]
            self.spy = subprocess.Popen([*spy, "--format", "raw", "-o", str(out)], stdout=subprocess.DEVNULL)

    def cpu(self) -> float:
        return proc_cpu(self.proc.pid)

    def stop(self) -> None:
        if self.spy is not None:
            self.spy.send_signal(2)  # py-spy writes its file on SIGINT
            self.spy.wait(60)
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _wait_http(url: str, insecure: bool = False, proc: subprocess.Popen[bytes] | None = None) -> None:
    import ssl

    ctx = ssl._create_unverified_context() if insecure else None  # a component's self-signed health port
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the scheduler exited ({proc.returncode}) before {url} answered")
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after 180 s")


# --- one run -----------------------------------------------------------------------------------------------------


APISERVER_ARGS = [
    "--max-requests-inflight=2000",
    "--max-mutating-requests-inflight=1000",
    # No node lifecycle controller runs to lift the not-ready taint this plugin puts on every new node.
    "--disable-admission-plugins=TaintNodesByCondition",
]


def uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(
    sched: KubeScheduler | PhalanxServe,
    shape: Shape,
    version: str,
    stall: float,
    profile: Path | None,
    backlog: bool = False,
    keep: bool = False,
) -> Result:
    result = Result(sched.name, load=uptime())
    with ControlPlane(version, apiserver_args=APISERVER_ARGS, controller_manager=bool(shape.devices)) as cp:
        t0 = t_created = 0.0
        cp.kubectl("apply", "-f", str(ROOT / "deploy"))
        create_many(cp, node_objects(shape), workers=8)
        if shape.devices:
            create_many(cp, dra_objects(shape), workers=8)
        if shape.init and not shape.devices:
            init = (
                (PODS, pod(f"init-{i:06d}", sched.scheduler_name, shape, node=f"node-{i % shape.nodes:05d}"))
                for i in range(shape.init)
            )
            create_many(cp, init, workers=8)
        created: dict[str, float] = {}

        def stamp(body: dict[str, Any]) -> None:
            created[body["metadata"]["name"]] = time.time()

        names = ("kube-apiserver", "etcd", "kube-controller-manager")

        def cpu() -> dict[str, float]:
            return {"scheduler": sched.cpu(), "self": self_cpu()} | {
                n: cp.cpu_seconds(n) for n in names if n in cp.components
            }

        if backlog:  # every measured pod pending before the scheduler starts
            create_many(cp, group_objects(shape), workers=8)
            create_many(cp, measured_pods(shape, sched.scheduler_name), workers=8, created_hook=stamp)
            watch = BindWatch(cp)
            t0 = t_created = time.time()
            created = dict.fromkeys(created, t0)  # latency counts from the scheduler's start
            sched.start(cp, profile)
            cpu0 = cpu()
        else:
            sched.start(cp, profile)
            watch = BindWatch(cp)
        try:
            if shape.init and shape.devices and not backlog:  # backlog: the DRA cluster starts empty
                init = ((PODS, pod(f"init-{i:06d}", sched.scheduler_name, shape)) for i in range(shape.init))
                create_many(cp, init, workers=8)
                wait_bound(watch, "init-", shape.init, stall)
                if watch.count("init-") < shape.init:
                    result.note = f"only {watch.count('init-')} of {shape.init} initial pods bound"
            if not backlog:
                cpu0 = cpu()
                create_many(cp, group_objects(shape), workers=8)
                t0 = time.time()
                create_many(cp, measured_pods(shape, sched.scheduler_name), workers=8, created_hook=stamp)
                t_created = time.time()
            wait_bound(watch, "pod-", shape.measured, stall)
            cpu1 = cpu()
            with watch.lock:
                bound = {n: t for n, t in watch.bound.items() if n.startswith("pod-")}
            watch.close()
            # The watch is for timing; the count is the API server's.
            listed = cp.request("GET", f"{PODS}?fieldSelector=spec.nodeName%21%3D")["items"]
            really = sum(1 for p in listed if p["metadata"]["name"].startswith("pod-"))
            if really != len(bound):
                result.note += f" watch saw {len(bound)} bound, the API server lists {really}"
            if watch.error:
                result.note += f" watch failed: {watch.error}"
            if watch.restarts:
                result.note += f" watch re-listed {watch.restarts}x"
        finally:
            sched.stop()
            if not keep:
                shutil.rmtree(cp.dir, ignore_errors=True)
    first = min(bound.values(), default=t0)
    result.first_bind = first - t0
    result.span = max(bound.values(), default=t0) - t0
    result.bound = len(bound)
    if bound:
        # Live: from the first pod created; backlog: from the first bind (the start is its own column).
        result.rate = len(bound) / max(max(bound.values()) - (first if backlog else t0), 1e-9)
    result.created_rate = shape.measured / max(t_created - t0, 1e-9) if not backlog else float("nan")
    latencies = [t - created[n] for n, t in bound.items() if n in created]
    result.p50, result.p99 = quantile(latencies, 0.5), quantile(latencies, 0.99)
    result.cpu = {k: cpu1[k] - cpu0[k] for k in cpu1}
    return result


# --- the table ---------------------------------------------------------------------------------------------------


def row(name: str, shape: Shape, r: Result) -> str:
    cpu = "/".join(f"{r.cpu.get(k, 0.0):.1f}" for k in ("scheduler", "kube-apiserver", "etcd", "self"))
    if "kube-controller-manager" in r.cpu:
        cpu += f" kcm {r.cpu['kube-controller-manager']:.1f}"
    lat = f"{r.p50:.2f}/{r.p99:.2f}"
    second = f"{r.first_bind:.1f} s" if r.created_rate != r.created_rate else f"{r.created_rate:.0f}"  # NaN: backlog
    return (
        f"{name:32} {r.scheduler:15} {shape.nodes:>6} {r.bound:>6}/{shape.measured:<6} {r.rate:>8.0f} "
        f"{second:>10} {lat:>14} {cpu:>28}  {r.load}{'  ' + r.note if r.note else ''}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", choices=[[], *SHAPES], default=[])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply nodes and pods (gang sizes are kept)")
    parser.add_argument("--version", default="1.36.3", help="the control plane's and kube-scheduler's version")
    parser.add_argument("--stall", type=float, default=120.0, help="give up after this many seconds without a bind")
    parser.add_argument("--only", choices=["kube-scheduler", "phalanx"], help="run one scheduler")
    parser.add_argument("--profile", type=Path, help="py-spy phalanx serve (raw collapsed stacks in this folder)")
    parser.add_argument("--backlog", action="store_true", help="create every measured pod before the scheduler starts")
    parser.add_argument("--keep", action="store_true", help="keep each control plane's folder (logs)")
    args = parser.parse_args()
    second = "1st bind" if args.backlog else "created/s"
    print(
        f"{'shape':32} {'scheduler':15} {'nodes':>6} {'bound':>13} {'pods/s':>8} {second:>10} "
        f"{'p50/p99 s':>14} {'CPU s sched/api/etcd/client':>28}  load 1/5/15 min"
    )
    for name in args.shapes or list(SHAPES):
        shape = SHAPES[name].scaled(args.scale)
        results: dict[str, Result] = {}
        for sched in (KubeScheduler(), PhalanxServe()):
            if args.only and args.only != sched.name:
                continue
            r = run(sched, shape, args.version, args.stall, args.profile, args.backlog, args.keep)
            results[sched.name] = r
            print(row(name, shape, r), flush=True)
        if len(results) == 2:
            k, p = results["kube-scheduler"], results["phalanx"]
            rate = p.rate / k.rate if k.rate else float("inf")
            lat = k.p50 / p.p50 if p.p50 else float("inf")
            k_ms, p_ms = (r.cpu["scheduler"] / max(r.bound, 1) * 1000 for r in (k, p))
            print(
                f"{'':32} ratio phalanx/kube: pods/s {rate:.2f}x, p50 latency {lat:.2f}x shorter, "
                f"to the last bind {k.span / (p.span or 1e-9):.2f}x sooner ({k.span:.0f} vs {p.span:.0f} s), "
                f"scheduler CPU per pod {k_ms / (p_ms or 1e-9):.2f}x less ({k_ms:.1f} vs {p_ms:.1f} ms)",
                flush=True,
            )


if __name__ == "__main__":
    main()
