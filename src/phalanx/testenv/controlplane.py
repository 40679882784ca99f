"""Start, stop and poke a loopback control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler.

Each component is its own process group with its output in ``<workdir>/logs/<name>.log``, and dies with the
process that started it (``PR_SET_PDEATHSIG``), so a killed test run leaves nothing behind. Ports are free ports
on 127.0.0.1 chosen at start. The admin kubeconfig (``system:masters``) is for the test itself; components and
``phalanx serve`` get their own identities, so RBAC applies to them as on a real cluster.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from phalanx.testenv.assets import Assets, find_assets
from phalanx.testenv.pki import Pki, make_pki
from phalanx.testenv.versions import KubeVersion, kube_version

__all__ = ["Component", "ControlPlane", "ControlPlaneError", "RequestError", "free_port"]

_PR_SET_PDEATHSIG = 1
_SA_ISSUER = "https://kubernetes.default.svc.cluster.local"


class ControlPlaneError(Exception):
    """A component did not start or answer in time; the message carries the tail of its log."""


class RequestError(Exception):
    """kube-apiserver answered with an error: ``code`` is the HTTP status, ``status`` its Status object."""

    def __init__(self, code: int, body: bytes) -> None:
        try:
            status = json.loads(body)
        except ValueError:
            status = {"message": body.decode(errors="replace")}
        self.code = code
        self.status: dict[str, Any] = status if isinstance(status, dict) else {}
        super().__init__(f"{code}: {self.status.get('message', '')}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Component:
    """One control-plane process."""

    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    _out: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        self._out = self.log.open("ab")
        self._out.write(f"--- start {time.strftime('%H:%M:%S')}: {' '.join(self.argv)}\n".encode())
        self._out.flush()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # a child of a test run must not outlive it
        )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> None:
        """Signal the process group, wait, then SIGKILL what is left."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        if self._out is not None:
            self._out.close()
            self._out = None

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class ControlPlane:
    """A control plane of one Kubernetes version. ``start`` brings up etcd, kube-apiserver and
    kube-controller-manager; ``start_scheduler`` adds kube-scheduler. Use as a context manager."""

    def __init__(
        self,
        version: str,
        workdir: Path | None = None,
        assets: Assets | None = None,
        apiserver_args: Sequence[str] = (),
        controller_manager_args: Sequence[str] = (),
        feature_gates: dict[str, bool] | None = None,
        controller_manager: bool = True,
    ) -> None:
        self.kube: KubeVersion = kube_version(version)
        self.assets = assets or find_assets(self.kube.version)
        self._own_dir = workdir is None
        self.dir = workdir or Path(tempfile.mkdtemp(prefix=f"phalanx-k8s-{self.kube.version}-"))
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        self.gates = dict(self.kube.feature_gates) | (feature_gates or {})
        self.apiserver_args = list(apiserver_args)
        self.controller_manager_args = list(controller_manager_args)
        self.with_controller_manager = controller_manager
        self.pki: Pki | None = None
        self.components: dict[str, Component] = {}
        self.etcd_port = self.port = 0
        self.scheduler_port = 0  # kube-scheduler's secure port (healthz, readyz, metrics) while it runs

    # --- life cycle ----------------------------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        atexit.register(self.stop)
        try:
            self.port = free_port()
            self.pki = make_pki(self.dir / "pki")
            self._write_kubeconfigs()
            self._start_etcd()
            self._start_apiserver()
            if self.with_controller_manager:
                self._start_controller_manager()
            else:
                # The service-account controller would make it; pods cannot be created in a namespace without it.
                sa = {"metadata": {"name": "default", "namespace": "default"}}
                self.request("POST", "/api/v1/namespaces/default/serviceaccounts", sa)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every component, newest first; safe to call twice."""
        for comp in reversed(list(self.components.values())):
            comp.stop()
        atexit.unregister(self.stop)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    def cpu_seconds(self, name: str) -> float:
        """User plus system CPU seconds a running component has used so far (/proc/PID/stat)."""
        proc = self.components[name].proc
        if proc is None:
            return 0.0
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def log_dir(self) -> Path:
        return self.dir / "logs"

    def logs(self, lines: int = 40) -> str:
        """The tail of every component's log, for a failing test's report."""
        return "\n".join(f"===== {c.name} ({c.log})\n{c.tail(lines)}" for c in self.components.values())

    def _component(self, name: str, argv: list[str]) -> Component:
        comp = Component(name, argv, self.log_dir() / f"{name}.log")
        self.components[name] = comp
        comp.start()
        return comp

    def _gates_flag(self) -> str:
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.gates.items())

    def _start_etcd(self) -> None:
        self.etcd_port, peer = free_port(), free_port()
        data = self.dir / "etcd"
        argv = [
            self.assets.path("etcd"),
            "--name=default",
            f"--data-dir={data}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=default=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",  # a test cluster: durability across power loss is not the point
            "--log-level=warn",
        ]
        comp = self._component("etcd", argv)
        self._wait(comp, lambda: self._get_plain(f"{self.etcd_url}/health"), 30)

    def _apiserver_argv(self) -> list[str]:
        assert self.pki is not None
        cert, key = self.pki.serving
        sa_pub, sa_key = self.pki.service_account
        return [
            self.assets.path("kube-apiserver"),
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.dir / 'apiserver-certs'}",
            f"--tls-cert-file={cert}",
            f"--tls-private-key-file={key}",
            f"--client-ca-file={self.pki.ca}",
            f"--service-account-issuer={_SA_ISSUER}",
            f"--service-account-key-file={sa_pub}",
            f"--service-account-signing-key-file={sa_key}",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",  # the kubernetes Service cannot point at a loopback address
            f"--feature-gates={self._gates_flag()}",
            f"--runtime-config={','.join(self.kube.runtime_config)}",
            *self.apiserver_args,
        ]

    def _start_apiserver(self) -> None:
        comp = self._component("kube-apiserver", self._apiserver_argv())
        self._wait(comp, lambda: self.get("/readyz", raw=True) == b"ok", 90)

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port and etcd (watches are cut, clients reconnect)."""
        self.components["kube-apiserver"].stop()
        self._start_apiserver()

    def _start_controller_manager(self) -> None:
        assert self.pki is not None
        kubeconfig = self.kubeconfig("kube-controller-manager")
        argv = [
            self.assets.path("kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--authentication-skip-lookup=true",  # no front proxy: no request-header CA to look up
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--controllers={','.join(self.kube.controllers)}",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={self.pki.service_account[1]}",
            f"--root-ca-file={self.pki.ca}",
            "--leader-elect=false",
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
            f"--feature-gates={self._gates_flag()}",
            *self.controller_manager_args,
        ]
        comp = self._component("kube-controller-manager", argv)
        # Ready once it has made the default namespace's ServiceAccount: pods can be created from then on.
        self._wait(comp, lambda: self.exists("/api/v1/namespaces/default/serviceaccounts/default"), 60)

    def start_scheduler(self, config: dict[str, Any] | None = None, args: Sequence[str] = ()) -> Component:
        """kube-scheduler with ``config`` (a KubeSchedulerConfiguration as a dict; leader election is turned off
        and the kubeconfig filled in) and the control plane's feature gates."""
        kubeconfig = self.kubeconfig("kube-scheduler")
        cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"} | (config or {})
        cfg["clientConnection"] = {"kubeconfig": str(kubeconfig), "qps": 5000, "burst": 5000}
        cfg["leaderElection"] = {"leaderElect": False}
        path = self.dir / "kube-scheduler.yaml"
        path.write_text(json.dumps(cfg))  # JSON is YAML
        port = free_port()
        argv = [
            self.assets.path("kube-scheduler"),
            f"--config={path}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--authentication-skip-lookup=true",  # no front proxy: no request-header CA to look up
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--feature-gates={self._gates_flag()}",
            *args,
        ]
        self.stop_scheduler()
        comp = self._component("kube-scheduler", argv)
        self._wait(comp, lambda: self._get_plain(f"https://127.0.0.1:{port}/healthz", insecure=True), 60)
        self.scheduler_port = port
        return comp

    def stop_scheduler(self) -> None:
        comp = self.components.pop("kube-scheduler", None)
        self.scheduler_port = 0
        if comp is not None:
            comp.stop()

    # --- credentials ---------------------------------------------------------------------------------------------

    def kubeconfig(self, client: str = "admin") -> Path:
        return self.dir / f"{client}.kubeconfig"

    def _write_kubeconfigs(self) -> None:
        assert self.pki is not None
        for client in ("admin", "kube-controller-manager", "kube-scheduler"):
            cert, key = self.pki.client(client)
            user = {"client-certificate": str(cert), "client-key": str(key)}
            self._write_kubeconfig(self.kubeconfig(client), user)

    def _write_kubeconfig(self, path: Path, user: dict[str, str]) -> None:
        assert self.pki is not None
        ca = str(self.pki.ca)
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "testenv", "cluster": {"server": self.url, "certificate-authority": ca}}],
            "users": [{"name": "user", "user": user}],
            "contexts": [{"name": "testenv", "context": {"cluster": "testenv", "user": "user"}}],
            "current-context": "testenv",
        }
        path.write_text(json.dumps(cfg))
        path.chmod(0o600)

    def service_account_kubeconfig(self, namespace: str, name: str, path: Path | None = None) -> Path:
        """A kubeconfig holding a fresh token (TokenRequest) of ServiceAccount ``namespace/name``."""
        token = self.kubectl("create", "token", name, "-n", namespace, "--duration=24h").strip()
        path = path or self.dir / f"sa-{namespace}-{name}.kubeconfig"
        self._write_kubeconfig(path, {"token": token})
        return path

    # --- talking to it -------------------------------------------------------------------------------------------

    def kubectl(self, *args: str, stdin: str | None = None, kubeconfig: Path | None = None, check: bool = True) -> str:
        """Run the kubectl of the same version; returns stdout, raises ControlPlaneError with stderr on failure."""
        argv = [self.assets.path("kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig()}", *args]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False, timeout=120)
        if check and done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def _ssl(self) -> ssl.SSLContext:
        assert self.pki is not None
        ctx = ssl.create_default_context(cafile=str(self.pki.ca))
        cert, key = self.pki.client("admin")
        ctx.load_cert_chain(str(cert), str(key))
        return ctx

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One admin request to kube-apiserver; returns the decoded JSON body, or raises RequestError with the
        API server's Status."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        raw = self._open(req, 30)
        return json.loads(raw) if raw else None

    def get(self, path: str, raw: bool = False) -> Any:
        data = self._open(urllib.request.Request(self.url + path), 10)
        return data if raw else json.loads(data)

    def _open(self, req: urllib.request.Request, timeout: float) -> bytes:
        try:
            with urllib.request.urlopen(req, context=self._ssl(), timeout=timeout) as resp:
                data: bytes = resp.read()
                return data
        except urllib.error.HTTPError as exc:
            with exc:
                raise RequestError(exc.code, exc.read()) from None

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except RequestError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def compact_etcd(self) -> int:
        """Compact etcd up to its current revision (through its JSON gateway), so that a watch from any older
        resourceVersion gets 410 Gone. Returns the revision."""
        head = self._post_plain(f"{self.etcd_url}/v3/kv/range", {"key": "AA=="})  # any key: for the header
        revision = int(head["header"]["revision"])
        self._post_plain(f"{self.etcd_url}/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    @staticmethod
    def _post_plain(url: str, body: dict[str, Any]) -> Any:
        req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    @staticmethod
    def _get_plain(url: str, insecure: bool = False) -> bool:
        ctx = ssl._create_unverified_context() if insecure else None  # a component's self-signed health port
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError as exc:
            exc.close()
            return False

    def _wait(self, comp: Component, ready: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if not comp.running:
                raise ControlPlaneError(f"{comp.name} exited during start-up:\n{comp.tail()}")
            try:
                if ready():
                    return
            except (OSError, RequestError, ValueError) as exc:
                last = exc
            time.sleep(0.2)
        raise ControlPlaneError(f"{comp.name} not ready after {timeout:.0f} s ({last}):\n{comp.tail()}")
