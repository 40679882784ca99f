"""The fragmentation experiment through the engine: GPUs as DRA devices with consumable capacity, the GpuShare
Score plugin wrapping the policies. The engine must decide exactly as the array runner does when both pick GPUs
the same way (first fit), and its claims never overfill a GPU."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from phalanx.scheduling.config import default_profile
from phalanx.scheduling.plugins.gpu_share import NAME as GPU_SHARE
from phalanx.scheduling.plugins.gpu_share import GpuShare, parse_args
from phalanx.scheduling.plugins.gpu_share import policy as gs
from phalanx.sim.fragmentation import engine as fe
from phalanx.sim.fragmentation.openb import load_nodes, load_pods
from phalanx.sim.fragmentation.reference import run_reference as run

DATA = Path(__file__).parent / "data"
NODES, PODS = load_nodes(DATA / "openb_nodes_sample.csv"), load_pods(DATA / "openb_pods_sample.csv")


def first_fit(view: gs.GpuView, pod: gs.GpuPod, row: int, target: object = None, rng: object = None) -> list[int]:
    """DRA's choice among a node's shared devices: the first GPUs in device order with room."""
    free = view.gpu_free[row]
    if pod.num_gpu == 0:
        return []
    if pod.sharing:
        return [i for i in range(len(free)) if free[i] >= pod.gpu_milli][:1]
    return [i for i in range(len(free)) if free[i] == gs.GPU_MILLI][: pod.num_gpu]


@pytest.mark.parametrize("policy", ["phalanx", "bestfit", "fgd"])
@pytest.mark.parametrize("seed", [42, 43])
def test_engine_places_every_pod_where_the_array_runner_does(
    policy: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(gs.CHOOSERS, policy, first_fit)
    array = run(NODES, PODS, policy, seed)
    engine = fe.run_engine(NODES, PODS, policy, seed)
    assert engine.node.tolist() == array.node.tolist()
    assert engine.used.tolist() == array.used.tolist()
    assert engine.at100 == array.at100


def test_gpu_share_scores_kept_per_need_equal_scoring_every_node_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin keeps each need's scores and rescores only the nodes whose usage changed, sharing them between
    pods that differ in memory alone; on every cycle of a run that must equal the policy over all feasible nodes,
    and the placements must stay the array runner's (whose cache is per full shape, memory included)."""
    # pairs of pods alike but for memory, so that needs share their cached scores
    pods = replace(PODS, mem=PODS.mem + 512 * (np.arange(len(PODS.names)) % 3))
    checked: list[int] = []
    cached = GpuShare._scores

    def fresh_too(self: GpuShare, view: gs.GpuView, need: gs.GpuPod, rows: object, target: object) -> object:
        got = cached(self, view, need, rows, target)  # type: ignore[arg-type]
        policy = gs.POLICIES[self.args.policy]
        assert got.tolist() == policy(view, need, rows, target).tolist()  # type: ignore[arg-type]
        checked.append(len(got))
        return got

    monkeypatch.setattr(GpuShare, "_scores", fresh_too)
    for policy in ("phalanx", "fgd"):
        monkeypatch.setitem(gs.CHOOSERS, policy, first_fit)
        engine = fe.run_engine(NODES, pods, policy, 42)
        assert engine.node.tolist() == run(NODES, pods, policy, 42).node.tolist()
    assert len(checked) > len(pods.names) and max(checked) > 1


def test_engine_run_is_deterministic_and_never_overfills_a_gpu() -> None:
    a = fe.run_engine(NODES, PODS, "random", 7)
    b = fe.run_engine(NODES, PODS, "random", 7)
    assert a.node.tolist() == b.node.tolist()
    # allocation only grows by what was placed, and never beyond the cluster's GPU capacity
    assert (np.diff(a.used) >= 0).all() and int(a.used[-1]) <= NODES.gpu_capacity


def test_cluster_objects_publish_each_gpu_as_a_shared_device() -> None:
    rank = np.arange(len(NODES.names))
    nodes, resources = fe.cluster_objects(NODES, rank)
    assert [n.metadata.name for n in nodes] == [f"{i:04d}-{name}" for i, name in enumerate(NODES.names)]
    devices = [d for s in resources.slices for d in s.spec.devices]
    assert len(devices) == int(NODES.gpus.sum())
    assert all(d.allow_multiple_allocations and d.capacity["milli"].value == gs.GPU_MILLI for d in devices)


def test_gpu_share_is_in_the_default_profile_and_skips_clusters_without_shared_gpus() -> None:
    assert (GPU_SHARE, 1) in default_profile().scores
    plugin = GpuShare()
    assert plugin.score(None, None, None, np.arange(3)) is None  # type: ignore[arg-type]  # not attached: skip


def test_gpu_share_args_reject_unknown_policies_and_fields() -> None:
    assert parse_args({"policy": "fgd"}).policy == "fgd"
    with pytest.raises(ValueError, match="Unsupported value"):
        parse_args({"policy": "greedy"})
    with pytest.raises(ValueError, match="unknown field"):
        parse_args({"weight": 3})


def test_cli_runs_the_experiment_through_the_engine_by_default() -> None:
    import json

    from click.testing import CliRunner

    from phalanx.cli import cli

    args = ["simulate", "--experiment", "fragmentation", "--nodes", str(DATA / "openb_nodes_sample.csv")]
    args += ["--pods", str(DATA / "openb_pods_sample.csv"), "--policy", "phalanx", "--policy", "bestfit", "-o", "json"]
    out = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["runner"] == "engine"
    assert set(doc["unallocatedGpuPercentAt100"]) == {"phalanx", "bestfit"}
    array = CliRunner().invoke(cli, [*args, "--runner", "array"], catch_exceptions=False)
    assert json.loads(array.stdout)["runner"] == "array"
