"""PodDisruptionBudgets as preemption reads them: which victims would take a budget below zero
(``filterPodsWithPDBViolation``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from phalanx.api.models import PodDisruptionBudget
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.plugins.pod_selectors import Selector

__all__ = ["Budgets"]


@dataclass
class _Budget:
    namespace: str
    selector: Selector
    allowed: int
    disrupted: frozenset[str]


@dataclass
class Budgets:
    """PodDisruptionBudgets with their disruptionsAllowed (from status, or computed as the disruption controller
    would: healthy matching pods minus the desired healthy count)."""

    budgets: list[_Budget] = field(default_factory=list)

    @classmethod
    def of(cls, pdbs: Iterable[PodDisruptionBudget], placed: Iterable[PodInfo]) -> Budgets:
        placed = list(placed)
        out = []
        for pdb in pdbs:
            sel = Selector.of(pdb.spec.selector)
            if not sel.requirements:
                continue  # filterPodsWithPDBViolation skips nil and empty selectors
            ns = pdb.metadata.namespace
            allowed = pdb.status.disruptions_allowed
            if allowed is None:
                covered = [p for p in placed if p.namespace == ns and sel.matches(p.pod.metadata.labels)]
                allowed = _disruptions_allowed(pdb, covered)
            out.append(_Budget(ns, sel, allowed, frozenset(pdb.status.disrupted_pods)))
        return cls(out)

    def split(self, pods: Sequence[PodInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
        """``filterPodsWithPDBViolation``: pods (in the given order) whose eviction would take some budget below
        zero, and the others."""
        left = [b.allowed for b in self.budgets]
        violating: list[PodInfo] = []
        fine: list[PodInfo] = []
        for pi in pods:
            bad = False
            for i, b in enumerate(self.budgets):
                if b.namespace != pi.namespace or pi.name in b.disrupted:
                    continue
                if not b.selector.matches(pi.pod.metadata.labels):
                    continue
                left[i] -= 1
                bad |= left[i] < 0
            (violating if bad else fine).append(pi)
        return violating, fine


def _disruptions_allowed(pdb: PodDisruptionBudget, covered: Sequence[PodInfo]) -> int:
    """What the disruption controller would write to status: healthy pods (every placed pod counts as healthy)
    minus the desired healthy count, and 0 when no pod is expected. A ``maxUnavailable`` or percentage budget
    counts only pods with a controller, each controller's scale taken as its pods here (the snapshot has no scale
    subresource); bare pods are unmanaged and expect nothing, so such a budget over bare pods allows no
    disruption, as kube-controller-manager decides (``getExpectedPodCount``)."""
    spec = pdb.spec
    if spec.max_unavailable is not None:
        expected = _managed(covered)
        desired = max(0, expected - _scaled(spec.max_unavailable, expected))
    elif isinstance(spec.min_available, int):
        expected, desired = len(covered), spec.min_available
    elif spec.min_available is not None:
        expected = _managed(covered)
        desired = _scaled(spec.min_available, expected)
    else:
        expected = desired = 0
    return max(0, len(covered) - desired) if expected > 0 else 0


def _managed(pods: Sequence[PodInfo]) -> int:
    return sum(1 for p in pods if any(ref.controller for ref in p.pod.metadata.owner_references))


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text)
