"""Leader failover and an API server restart under `phalanx serve`, against real kube-apiserver and
kube-controller-manager (v1.36.3 and v1.37.2). Each test runs its own `phalanx serve` processes (the shared one of
test_serve_real.py has given the lease up by then)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from realcluster import Cluster, serving, wait_for

from phalanx.testenv import ControlPlane

pytestmark = pytest.mark.real


# --- leader election ----------------------------------------------------------------------------------------------


def test_standby_takes_over_when_the_leader_dies_mid_gang(
    control_plane: ControlPlane, cluster: Cluster, serve_kubeconfig: Path
) -> None:
    c = cluster
    for i in range(12):
        c.node(f"{c.ns}-n{i}", cpu="2")
    gang = [f"w{i:02d}" for i in range(20)]
    slow = ("--kube-api-qps=4", "--kube-api-burst=1")  # binding the gang takes seconds: room to kill the leader
    with (
        serving(c.cp, serve_kubeconfig, "first", *slow) as first,
        serving(c.cp, serve_kubeconfig, "second", *slow, wait_leader=False) as second,
    ):
        assert not second.leading()
        c.pod_group("big", 20)
        for n in gang:
            c.pod(n, group="big")
        wait_for("the leader to start binding the gang", lambda: c.bound(gang))
        first.kill()
        seen = c.placement()
        assert 0 < len(c.bound(gang)) < len(gang), "the leader finished before it could be killed"
        wait_for("the standby to lead", second.leading, 30)
        wait_for("the whole gang bound", lambda: c.bound(gang) == set(gang), 90)
        after = c.placement()
        # Pods the dead leader bound were not moved or bound again.
        assert all(after[n] == node for n, node in seen.items() if node)
        # A gang created after the failover is all-or-nothing under the new leader as well.
        c.pod_group("late", 3)
        late = [f"late-{i}" for i in range(3)]
        for n in late:
            c.pod(n, group="late")
        wait_for("the late gang bound", lambda: c.bound(late) == set(late), 60)
        assert "phalanx_leader 1" in second.metrics()
    per_node: dict[str, int] = {}
    for node in c.placement().values():
        assert node is not None
        per_node[node] = per_node.get(node, 0) + 1
    assert max(per_node.values()) <= 2  # 2 cpu per node: nothing over-committed by two leaders


# --- API server restart and an expired watch ----------------------------------------------------------------------


def test_restart_and_compaction_relist_and_lose_nothing(
    control_plane: ControlPlane, cluster: Cluster, serve_kubeconfig: Path
) -> None:
    c = cluster
    cp = control_plane
    c.node(f"{c.ns}-n0", cpu="16")
    # Empty and so the best-scored node for small pods, until serve learns it is gone. The pods made while serve
    # is behind do not fit on it, so per-collection watch order (a pod event handled before a node event, as in
    # kube-scheduler's informers) cannot put one there.
    gone = c.node(f"{c.ns}-gone", cpu="2")["metadata"]["name"]
    with serving(cp, serve_kubeconfig, "serve") as s:
        c.pod("before", cpu="3")
        wait_for("a first pod to bind", lambda: c.bound(["before"]))

        # Freeze serve and cut its watches (an API server restart), then, while it cannot see anything, delete a
        # node, make pods, compact etcd past everything serve saw, and restart the API server again (its watch
        # cache starts from etcd): serve's resumed watches get 410 Gone and must relist.
        os.killpg(s.proc.pid, signal.SIGSTOP)
        try:
            cp.restart_apiserver()
            cp.request("DELETE", f"/api/v1/nodes/{gone}")
            during = [f"during-{i}" for i in range(3)]
            for n in during:
                c.pod(n, cpu="3")
            cp.compact_etcd()
            cp.restart_apiserver()
        finally:
            os.killpg(s.proc.pid, signal.SIGCONT)
        wait_for("the pods made while serve was behind", lambda: c.bound(during) == set(during), 60)
        wait_for("serve to relist nodes and pods", lambda: relisted(s.tail(400), ("nodes", "pods")))
        after = ["after-0", "after-1"]
        for n in after:
            c.pod(n, cpu="1")
        wait_for("pods made after the restart", lambda: c.bound(after) == set(after))
    assert set(c.placement().values()) == {f"{c.ns}-n0"}, c.placement()  # the deleted node was never used


def relisted(log: str, resources: tuple[str, ...]) -> bool:
    return all(f"watch {r}: resourceVersion" in log and "expired, relisting" in log for r in resources)
