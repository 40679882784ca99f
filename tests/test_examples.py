"""The DRA examples under examples/dra-*: each runs through `phalanx schedule -o json` and shows what its README
states (which pods run where, which claims get which devices, which do not and why)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from phalanx.cli import cli

from schedule_cli import schedule_json

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NO_CLAIMS = "0/1 nodes are available: 1 cannot allocate all claims."


def schedule(name: str) -> dict[str, Any]:
    return schedule_json("-f", str(EXAMPLES / name))


def pods(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in doc["pods"]}


def claim(doc: dict[str, Any], owner: str, entry: str) -> dict[str, Any]:
    """The claim generated for ``owner``'s (a pod's or PodGroup's) claim entry ``entry``: ``<owner>-<entry>-xxxxx``."""
    prefix = f"{owner}-{entry}-"
    found = [c for c in doc["resourceClaims"] if c["name"].startswith(prefix) and len(c["name"]) == len(prefix) + 5]
    assert len(found) == 1, [c["name"] for c in doc["resourceClaims"]]
    return found[0]


def devices(c: dict[str, Any]) -> list[str]:
    """``driver/pool/device`` of every result of an allocated claim, in result order."""
    assert c["allocation"] is not None, c["name"]
    return [f"{r['driver']}/{r['pool']}/{r['device']}" for r in c["allocation"]["devices"]["results"]]


def consumers(c: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["resource"], r["name"]) for r in c["reservedFor"]]


def test_every_dra_example_is_covered() -> None:
    found = {p.name for p in EXAMPLES.glob("dra-*") if p.is_dir()}
    assert found == {"dra-h100", "dra-mig", "dra-nvlink-gang", "dra-shared-gpu"}
    for name in found:
        assert (EXAMPLES / name / "README.md").is_file(), name


def test_dra_h100() -> None:
    doc = schedule("dra-h100")
    by = pods(doc)
    trainers = {by["trainer-0"]["node"], by["trainer-1"]["node"]}
    assert trainers == {"h100-a", "h100-b"}
    for pod in ("trainer-0", "trainer-1"):
        node = by[pod]["node"]
        assert devices(claim(doc, pod, "gpus")) == [f"gpu.nvidia.com/{node}/gpu-{i}" for i in range(8)]
    # firstAvailable: the H200 alternative is preferred, and the result names the subrequest.
    assert by["inference"]["node"] == "h200-a"
    inference = claim(doc, "inference", "gpu")
    assert [r["request"] for r in inference["allocation"]["devices"]["results"]] == ["gpu/h200"]
    assert by["big-h100"]["phase"] == "Unschedulable"
    assert by["big-h100"]["message"].startswith("0/3 nodes are available: 3 cannot allocate all claims.")
    assert claim(doc, "big-h100", "gpus")["allocation"] is None


def test_dra_mig_overlapping_partitions_exclude_each_other() -> None:
    doc = schedule("dra-mig")
    by = pods(doc)
    pool = "gpu.nvidia.com/h100-mig-a"
    expected = {
        "train-7g": "gpu-0-mig-7g80gb-0-0",
        "notebook-3g": "gpu-1-mig-3g40gb-9-0",
        "infer-1g-0": "gpu-1-mig-1g10gb-19-4",
        "infer-1g-1": "gpu-1-mig-1g10gb-19-5",
        "infer-1g-2": "gpu-1-mig-1g10gb-19-6",
    }
    for pod, device in expected.items():
        assert (by[pod]["phase"], by[pod]["node"]) == ("Scheduled", "h100-mig-a"), pod
        c = claim(doc, pod, "mig")
        assert devices(c) == [f"{pool}/{device}"]
        assert consumers(c) == [("pods", pod)]
    # Unallocated 1g devices remain (placements 0-3 of gpu-1, all of gpu-0), yet every one overlaps a partition.
    for pod, entry in (("infer-1g-3", "mig"), ("whole-gpu", "gpu")):
        assert by[pod]["phase"] == "Unschedulable"
        assert by[pod]["message"].startswith(NO_CLAIMS)
        assert claim(doc, pod, entry)["allocation"] is None


def test_dra_shared_gpu_shares_until_memory_runs_out() -> None:
    doc = schedule("dra-shared-gpu")
    by = pods(doc)
    consumed = {"chat-0": "20Gi", "chat-1": "20Gi", "embed-0": "4Gi", "rerank-0": "12Gi", "rerank-1": "12Gi"}
    consumed["embed-1"] = "4Gi"  # a smaller share still fits after chat-2 did not
    share_ids = set()
    for pod, memory in consumed.items():
        assert (by[pod]["phase"], by[pod]["node"]) == ("Scheduled", "infer-a"), pod
        c = claim(doc, pod, "gpu")
        assert devices(c) == ["gpu.example.com/infer-a/gpu-0"]
        (result,) = c["allocation"]["devices"]["results"]
        assert result["consumedCapacity"] == {"memory": memory, "multiprocessors": "16"}
        share_ids.add(result["shareID"])
    assert len(share_ids) == len(consumed)  # every share of the device is told apart
    assert by["chat-2"]["phase"] == "Unschedulable"
    assert by["chat-2"]["message"].startswith(NO_CLAIMS)
    assert claim(doc, "chat-2", "gpu")["allocation"] is None


def test_dra_shared_gpu_share_ids_are_stable() -> None:
    first = {c["name"]: c["allocation"] for c in schedule("dra-shared-gpu")["resourceClaims"]}
    second = {c["name"]: c["allocation"] for c in schedule("dra-shared-gpu")["resourceClaims"]}
    assert first == second


CLIQUE = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def test_dra_nvlink_gang_lands_in_one_clique() -> None:
    doc = schedule("dra-nvlink-gang")
    by = pods(doc)
    groups = {g["name"]: g for g in doc["podGroups"]}
    for job, size, clique in (("trainer", 4, "0"), ("finetune", 2, "1")):
        nodes = [by[f"{job}-{i}"]["node"] for i in range(size)]
        assert all(n is not None and n.startswith(f"gb200-c{clique}-") for n in nodes), nodes
        assert len(set(nodes)) == size  # allocationMode All: one pod per node
        for i, node in enumerate(nodes):
            assert devices(claim(doc, f"{job}-{i}", "gpus")) == [f"gpu.nvidia.com/{node}/gpu-{g}" for g in range(4)]
        assert groups[job]["scheduledPods"] == size
        assert groups[job]["condition"]["status"] == "True"
        imex = claim(doc, job, "imex")
        assert imex["generatedFrom"] == "imex-channel-0"
        assert devices(imex) == [f"compute-domain.nvidia.com/clique-{clique}/channel-0"]
        # One PodGroup reservation, not one per pod; the allocation confines the group to its clique.
        assert imex["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": job}]
        (term,) = imex["allocation"]["nodeSelector"]["nodeSelectorTerms"]
        assert term["matchExpressions"][0]["values"] == [f"{CLIQUE}.{clique}"]
    assert "gb200-c1-1" not in {p["node"] for p in doc["pods"]}


def test_dra_nvlink_gang_larger_than_any_clique_holds_nothing() -> None:
    doc = schedule("dra-nvlink-gang")
    by = pods(doc)
    message = (
        "0/2 placements are available, first placement status: pod group is unschedulable: "
        "4 of 5 pending pods fit, 0 already scheduled, need minCount 5"
    )
    for i in range(5):
        assert (by[f"giant-{i}"]["phase"], by[f"giant-{i}"]["node"]) == ("Unschedulable", None)
        assert by[f"giant-{i}"]["message"] == message
        assert claim(doc, f"giant-{i}", "gpus")["allocation"] is None
    giant = next(g for g in doc["podGroups"] if g["name"] == "giant")
    assert giant["scheduledPods"] == 0
    assert (giant["condition"]["status"], giant["condition"]["message"]) == ("False", message)
    imex = claim(doc, "giant", "imex")
    assert (imex["allocation"], imex["reservedFor"]) == (None, [])


@pytest.mark.parametrize("name", ["dra-h100", "dra-mig", "dra-nvlink-gang", "dra-shared-gpu"])
def test_dra_example_is_valid(name: str) -> None:
    result = CliRunner().invoke(cli, ["validate", "-f", str(EXAMPLES / name)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
