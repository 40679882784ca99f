"""`phalanx serve` as a process: kubeconfig, config file, SIGTERM is a graceful shutdown that releases the Lease."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import phalanx.kube.api as api_mod
from kube.apiserver import APIServer
from kube.conftest import node, pod
from phalanx.kube.api import TokenBucket


def test_serve_process_binds_then_shuts_down_on_sigterm(apiserver: APIServer, tmp_path: Path) -> None:
    st = apiserver.store
    st.create("nodes", node("n0"))
    st.create("pods", pod("p0", scheduler="gang"))
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": apiserver.url}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "test", "user": "u"}}],
        "current-context": "c",
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "gang"}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    args = ["serve", "--kubeconfig", str(tmp_path / "kubeconfig"), "--config", str(tmp_path / "config.yaml")]
    args += ["--health-address", "127.0.0.1", "--health-port", "0", "--leader-elect-retry-period", "0.1"]
    args += ["--victim-removal", "deletion"]
    proc = subprocess.Popen([sys.executable, "-m", "phalanx", *args], stderr=subprocess.PIPE, text=True)
    try:
        assert st.wait_for(lambda: "default/p0" in st.bindings, timeout=30)
        assert st.get("leases", "kube-system/phalanx")["spec"]["holderIdentity"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert st.get("leases", "kube-system/phalanx")["spec"]["holderIdentity"] == ""


def test_token_bucket_allows_a_burst_then_paces(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(api_mod.time, "sleep", waits.append)
    bucket = TokenBucket(qps=10, burst=3)
    for _ in range(5):
        bucket.take()
    assert len(waits) == 2 and all(w > 0 for w in waits)
    unlimited = TokenBucket(qps=0, burst=1)
    for _ in range(100):
        unlimited.take()
    assert len(waits) == 2
