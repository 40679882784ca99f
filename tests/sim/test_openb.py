"""The openb loaders and the FGD artifact's arrival procedure: clear FILE:LINE errors, the tune-up/down arithmetic of
spec/fgd-experiment.md §3.2, and one order per seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phalanx.api.errors import InputError
from phalanx.sim.fragmentation.openb import OpenbNodes, OpenbPods, arrival, load_nodes, load_pods

DATA = Path(__file__).parent / "data"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def nodes_of(*gpus: int) -> OpenbNodes:
    n = len(gpus)
    return OpenbNodes(
        [f"n{i}" for i in range(n)],
        np.full(n, 64000),
        np.full(n, 1 << 20),
        np.array(gpus, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        ("G2",),
    )


def pods_of(*shapes: tuple[int, int]) -> OpenbPods:
    """Pods from (num_gpu, gpu_milli) pairs, named p000, p001, ..."""
    n = len(shapes)
    return OpenbPods(
        [f"p{i:03d}" for i in range(n)],
        np.full(n, 1000),
        np.full(n, 1024),
        np.array([s[0] for s in shapes], dtype=np.int64),
        np.array([s[1] for s in shapes], dtype=np.int64),
        [None] * n,
    )


def test_sample_loads() -> None:
    nodes, pods = load_nodes(DATA / "openb_nodes_sample.csv"), load_pods(DATA / "openb_pods_sample.csv")
    assert nodes.models == ("G2", "P100", "T4", "V100M16")
    assert nodes.gpu_capacity == 21_000
    assert pods.spec[-1] == frozenset({"V100M16", "V100M32"})
    assert pods.num_gpu[-1] == 4 and pods.gpu_milli[-1] == 1000


def test_multigpu_style_csv_without_gpu_spec(tmp_path: Path) -> None:
    pods = load_pods(
        write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,10,1,1500\nb,1,1,0,300\n")
    )
    assert pods.spec == [None, None]
    assert list(pods.gpu_milli) == [1000, 0]  # clamped to one GPU; CPU-only pods ask no GPU share


def test_header_is_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "n.csv", "sn,cpu_milli,gpu,model\nx,1,1,G2\n")
    with pytest.raises(InputError) as exc:
        load_nodes(path)
    assert exc.value.lines == [
        f"{path}:1: node CSV header lacks column(s) memory_mib (need sn,cpu_milli,memory_mib,gpu,model)"
    ]


def test_bad_rows_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.csv",
        POD_HEADER
        + "ok,1000,10,1,500,\nneg,-5,10,1,500,\ntwo,1000,10,2,500,\nzero,1000,10,1,0,\nword,1000,ten,0,0,\n"
        + "inf,1000,inf,0,0,\nhalf,1000.5,10,0,0,\nhuge,1e300,10,0,0,\nfloat,1000.0,10,0,0,\n",
    )
    with pytest.raises(InputError) as exc:
        load_pods(path)
    assert exc.value.lines == [
        f"{path}:3: pod: cpu_milli: must be an integer from 0 to 2^53, got '-5'",
        f"{path}:4: pod: gpu_milli: a pod with 2 GPUs must take whole GPUs (1000), got 500",
        f"{path}:5: pod: gpu_milli: a pod with num_gpu > 0 needs gpu_milli > 0",
        f"{path}:6: pod: memory_mib: must be an integer from 0 to 2^53, got 'ten'",
        f"{path}:7: pod: memory_mib: must be an integer from 0 to 2^53, got 'inf'",
        f"{path}:8: pod: cpu_milli: must be an integer from 0 to 2^53, got '1000.5'",
        f"{path}:9: pod: cpu_milli: must be an integer from 0 to 2^53, got '1e300'",
    ]  # 1000.0 is a whole number: accepted


def test_missing_file_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read node CSV"):
        load_nodes(tmp_path / "absent.csv")
    with pytest.raises(InputError, match="no pods"):
        load_pods(write(tmp_path, "p.csv", POD_HEADER))


def test_node_with_gpus_needs_a_model(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"n.csv:2: node: model: a node with GPUs needs a GPU model"):
        load_nodes(write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nx,1000,10,2,\n"))


def test_tune_up_appends_clones_until_the_per_gpu_share_would_pass_the_target() -> None:
    # capacity 2 GPUs -> target 2600 milli; originals ask 1500; clones of 500-milli pods stop at 2500
    nodes = nodes_of(1, 1)
    pods = pods_of((1, 500), (1, 500), (1, 500), (0, 0))
    a = arrival(pods, nodes, seed=3)
    assert sorted(a.order[:4]) == [0, 1, 2, 3]  # every original once, shuffled
    assert int(pods.total_milli[a.order].sum()) == 2500
    assert a.clones == len(a.order) - 4 >= 2


def test_tune_up_stop_test_uses_the_per_gpu_share_not_the_total() -> None:
    # capacity 4 GPUs -> target 5200; the stop test adds only the per-GPU 1000 of a 2-GPU pod (spec §3.2 step 4):
    # 2000 -> 4000 (3000 <= 5200) -> 6000 (5000 <= 5200, overshooting) -> stop (7000 > 5200)
    a = arrival(pods_of((2, 1000)), nodes_of(4), seed=0)
    assert list(a.order) == [0, 0, 0]
    assert a.clones == 2


def test_tune_down_deletes_random_pods_until_at_or_below_target() -> None:
    nodes = nodes_of(1)  # target 1300
    pods = pods_of(*([(1, 1000)] * 5 + [(0, 0)] * 5))
    a = arrival(pods, nodes, seed=5)
    assert int(pods.total_milli[a.order].sum()) == 1000
    assert a.clones < 0 and len(set(a.order.tolist())) == len(a.order)


def test_one_order_per_seed() -> None:
    nodes, pods = load_nodes(DATA / "openb_nodes_sample.csv"), load_pods(DATA / "openb_pods_sample.csv")
    a, b, c = arrival(pods, nodes, 42), arrival(pods, nodes, 42), arrival(pods, nodes, 43)
    assert np.array_equal(a.order, b.order) and np.array_equal(a.node_rank, b.node_rank)
    assert not np.array_equal(a.order, c.order)
    assert sorted(a.node_rank.tolist()) == list(range(len(nodes.names)))  # a static priority: a permutation
