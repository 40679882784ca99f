"""PodDisruptionBudgets as preemption reads them: disruptionsAllowed from status or computed from the spec, and
the split of victims into PDB-violating and non-violating (filterPodsWithPDBViolation)."""

from __future__ import annotations

import msgspec
import pytest

from phalanx.api.models import OwnerReference, PodDisruptionBudget
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.preemption.budgets import Budgets

from builders import make_pod


def _pdb(spec: dict[str, object], status: dict[str, object] | None = None, ns: str = "default") -> PodDisruptionBudget:
    doc = {"metadata": {"name": "pdb", "namespace": ns}, "spec": spec, "status": status or {}}
    return msgspec.convert(doc, PodDisruptionBudget)


def _pods(n: int, app: str = "web", owner: str | None = "web-rs") -> list[PodInfo]:
    """``n`` placed pods, controlled by the ReplicaSet ``owner`` (bare when None)."""
    out = []
    for i in range(n):
        pod = make_pod(f"{app}-{i}").labels(app=app).obj()
        if owner is not None:
            pod.metadata.owner_references = [
                OwnerReference(api_version="apps/v1", kind="ReplicaSet", name=owner, uid=owner, controller=True)
            ]
        out.append(PodInfo.of(pod, 0))
    return out


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ({"minAvailable": 3}, 1),
        ({"minAvailable": "50%"}, 2),  # ceil(50% of 4) = 2 must stay
        ({"minAvailable": "60%"}, 1),  # ceil(2.4) = 3 must stay
        ({"maxUnavailable": 1}, 1),
        ({"maxUnavailable": "30%"}, 2),  # ceil(1.2) = 2 may go
        ({"minAvailable": 5}, 0),  # never negative
    ],
)
def test_disruptions_allowed_computed_from_spec(spec: dict[str, object], allowed: int) -> None:
    pods = _pods(4)
    budgets = Budgets.of([_pdb({**spec, "selector": {"matchLabels": {"app": "web"}}})], pods)
    violating, fine = budgets.split(pods)
    assert len(fine) == allowed
    assert [p.name for p in violating] == [p.name for p in pods[allowed:]]


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ({"minAvailable": 3}, 1),  # an integer minAvailable counts every pod, managed or not
        ({"minAvailable": "50%"}, 0),
        ({"maxUnavailable": 1}, 0),
        ({"maxUnavailable": "100%"}, 0),
    ],
)
def test_bare_pods_expect_nothing_from_a_scaled_budget(spec: dict[str, object], allowed: int) -> None:
    """kube-controller-manager's disruption controller finds no controller scale for bare pods, so a
    maxUnavailable or percentage budget over them has no disruption to allow (seen on the real v1.36.3 and
    v1.37.2 control planes, tests/e2e)."""
    pods = _pods(4, owner=None)
    budgets = Budgets.of([_pdb({**spec, "selector": {"matchLabels": {"app": "web"}}})], pods)
    assert len(budgets.split(pods)[1]) == allowed


def test_a_budget_that_covers_no_pod_allows_nothing() -> None:
    budgets = Budgets.of([_pdb({"minAvailable": 0, "selector": {"matchLabels": {"app": "web"}}})], _pods(2, "db"))
    assert budgets.split(_pods(1))[1] == []


def test_status_wins_and_disrupted_pods_do_not_count() -> None:
    pods = _pods(3)
    pdb = _pdb(
        {"minAvailable": 0, "selector": {"matchLabels": {"app": "web"}}},
        {"disruptionsAllowed": 1, "disruptedPods": {"web-0": "2026-01-01T00:00:00Z"}},
    )
    violating, fine = Budgets.of([pdb], pods).split(pods)
    assert [p.name for p in fine] == ["web-0", "web-1"]  # web-0 is already being disrupted: it uses no budget
    assert [p.name for p in violating] == ["web-2"]


def test_other_namespaces_other_labels_and_empty_selectors_are_not_covered() -> None:
    pods = _pods(2) + _pods(2, app="db")
    budgets = Budgets.of(
        [
            _pdb({"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}, ns="other"),
            _pdb({"maxUnavailable": 0, "selector": {}}),
            _pdb({"maxUnavailable": 0, "selector": {"matchLabels": {"app": "cache"}}}),
        ],
        pods,
    )
    violating, fine = budgets.split(pods)
    assert violating == []
    assert len(fine) == 4
