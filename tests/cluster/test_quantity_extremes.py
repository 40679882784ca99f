"""Quantities at kube-apiserver's limits, in every resource column of the node table: they load, validate and
schedule without an overflow, and the decisions are right. Amounts are exact up to ``MAX_AMOUNT`` units; above it
an allocatable counts as ``MAX_AMOUNT`` and a request fits no node (cluster/resources.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.api.quantity import parse_quantity
from phalanx.cluster.resources import MAX_AMOUNT, allocatable_amount, amount, pod_requests
from phalanx.cluster.state import ClusterState

from builders import make_node, make_pod
from schedule_cli import schedule_json

# Each resource column, with the other requests a pod of it needs (hugepages need cpu or memory).
COLUMNS = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi"]
SMALL = {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi", "nvidia.com/gpu": "1", "hugepages-2Mi": "2Mi"}
# kube-apiserver accepts all of these; 9Ei is capped at the int64 maximum by resource.ParseQuantity.
EXTREMES = ["1e18", "9Ei", "1e100"]


def _snapshot(tmp_path: Path, node: dict[str, str], pod: dict[str, str]) -> Path:
    def resources(requests: dict[str, str]) -> str:
        extended = {k: v for k, v in requests.items() if "/" in k or k.startswith("hugepages-")}
        limits = f", limits: {_flow(extended)}" if extended else ""
        return f"{{requests: {_flow(requests)}{limits}}}"

    path = tmp_path / "snapshot.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        f"status: {{allocatable: {_flow({'pods': '110', **node})}}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
        f"spec: {{containers: [{{name: c, resources: {resources(pod)}}}]}}\n"
    )
    return path


def _flow(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in values.items()) + "}"


def _pod(tmp_path: Path, node: dict[str, str], pod: dict[str, str]) -> dict[str, object]:
    doc = schedule_json("-f", str(_snapshot(tmp_path, node, pod)))
    (result,) = doc["pods"]
    return dict(result)


def _with(column: str, value: str) -> dict[str, str]:
    """A pod request (or node allocatable) of ``value`` in ``column``, plus memory for hugepages."""
    return {column: value, **({"memory": "1Gi"} if column.startswith("hugepages-") else {})}


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("extreme", EXTREMES)
def test_a_node_at_the_limit_runs_a_small_pod(tmp_path: Path, column: str, extreme: str) -> None:
    node = {"memory": "1e19", **_with(column, extreme)}
    result = _pod(tmp_path, node, _with(column, SMALL[column]))
    assert result["phase"] == "Scheduled", result


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("extreme", EXTREMES)
def test_a_pod_at_the_limit_fits_no_ordinary_node(tmp_path: Path, column: str, extreme: str) -> None:
    node = {**SMALL, "memory": "64Gi", "hugepages-2Mi": "1Gi"}
    result = _pod(tmp_path, node, _with(column, extreme))
    assert result["phase"] == "Unschedulable", result
    assert f"Insufficient {column}" in str(result["message"])


@pytest.mark.parametrize("column", COLUMNS)
def test_amounts_are_exact_up_to_the_limit(tmp_path: Path, column: str) -> None:
    exact = f"{MAX_AMOUNT}m" if column == "cpu" else str(MAX_AMOUNT)
    fits = _pod(tmp_path, {"memory": exact, **_with(column, exact)}, _with(column, exact))
    assert fits["phase"] == "Scheduled", fits
    below = f"{MAX_AMOUNT - 1}m" if column == "cpu" else str(MAX_AMOUNT - 1)
    short = _pod(tmp_path, {"memory": exact, **_with(column, below)}, _with(column, exact))
    assert short["phase"] == "Unschedulable" and f"Insufficient {column}" in str(short["message"])


def test_above_the_limit_an_allocatable_saturates_and_a_request_fits_nowhere() -> None:
    huge = parse_quantity("1e30")
    assert amount("memory", "1e30") == int(huge)  # exact in Python
    assert allocatable_amount("memory", "1e30") == MAX_AMOUNT
    state = ClusterState([make_node("n1").allocatable(memory="1e30").obj()])
    assert int(state.table.allocatable[0, 1]) == MAX_AMOUNT


def test_the_pods_column_saturates_too() -> None:
    state = ClusterState([make_node("n1").allocatable(pods="1e18").obj()])
    assert int(state.table.max_pods[0]) == MAX_AMOUNT


def test_a_huge_request_is_summed_exactly_before_it_saturates() -> None:
    """Two containers of MAX_AMOUNT/2 + 1 are more than MAX_AMOUNT together: the sum is exact, then saturated;
    two of MAX_AMOUNT/2 are exactly MAX_AMOUNT, which still fits."""
    over, under = MAX_AMOUNT // 2 + 1, MAX_AMOUNT // 2
    pod = make_pod("p").container("a", memory=str(over)).container("b", memory=str(over)).obj()
    assert pod_requests(pod).requests["memory"] == MAX_AMOUNT + 1
    pod = make_pod("p").container("a", memory=str(under)).container("b", memory=str(under + 1)).obj()
    assert pod_requests(pod).requests["memory"] == MAX_AMOUNT
