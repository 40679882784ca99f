"""What a scheduling cycle may ask of the engine: the cycle context.

The per-pod cycle, the PodGroup cycle, topology placement and preemption take a :class:`CycleContext`, never the
engine itself: they read the cluster state, the claims, the PodGroups and the rules, and report decisions through
the few calls below (which the engine turns into state changes, queue moves and Recorder events). The engine
implements it; a composite-group cycle (a tree of PodGroups) can hand the same context to each child's cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from phalanx.api.models import PodDisruptionBudget
from phalanx.cluster.pods import PodInfo
from phalanx.cluster.state import ClusterState
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.feature_gates import SchedulingGates
from phalanx.scheduling.framework import Status
from phalanx.scheduling.groups import GroupInfo, PodGroups
from phalanx.scheduling.preemption.victim_index import VictimIndex
from phalanx.scheduling.profile import Profile
from phalanx.scheduling.recorder import Rejection
from phalanx.scheduling.release import Release
from phalanx.scheduling.resource_claims import ClaimBinding
from phalanx.scheduling.rules import Rules

__all__ = ["CycleContext", "Preemptor", "Stats"]


@dataclass
class Stats:
    cycle_seconds: list[float] = field(default_factory=list)
    pods_bound: int = 0
    preemption_seconds: list[float] = field(default_factory=list)  # one entry per preemption decision


@dataclass(frozen=True, slots=True)
class Preemptor:
    """Who preempts: a Pod or a PodGroup, and the schedulerName its victims' DisruptionTarget message names."""

    kind: str
    namespace: str
    name: str
    scheduler: str


class CycleContext(Protocol):
    """The engine as a cycle sees it."""

    @property
    def state(self) -> ClusterState: ...

    @property
    def claims(self) -> ClaimBinding: ...

    @property
    def groups(self) -> PodGroups: ...

    @property
    def rules(self) -> Rules: ...

    @property
    def release(self) -> Release: ...

    @property
    def explains(self) -> bool:
        """The recorder keeps the rules that changed a decision (``changed_by``): name even the costly ones."""
        ...

    @property
    def gates(self) -> SchedulingGates: ...

    @property
    def stats(self) -> Stats: ...

    @property
    def pdbs(self) -> Sequence[PodDisruptionBudget]: ...

    @property
    def victim_index(self) -> VictimIndex: ...

    @property
    def seed(self) -> int:
        """The tie-break seed (``--seed``): where kube-scheduler's order is random, other seeds draw another."""
        ...

    def profile_for(self, pi: PodInfo) -> Profile: ...

    def preemption_policy(self, pi: PodInfo) -> str:
        """The pod's preemptionPolicy as admission writes it."""
        ...

    def is_bound(self, key: str) -> bool:
        """Bound to a node (in the input or by this engine), as opposed to pending or only assumed."""
        ...

    def take(self, keys: Iterable[str]) -> list[PodInfo]:
        """Pull the queued pods ``keys`` out of the queue (a PodGroup cycle takes its members)."""
        ...

    def nominated_row(self, key: str) -> int | None:
        """The node row the pod waits nominated to after its preemption (``nominatedNodeName``), if any."""
        ...

    def member_rank(self, key: str) -> int:
        """Where the pod ranks among its PodGroup's members of equal priority: its first entry into the active
        queue (v1.36, and phalanx's ``quorum-member-first``), or its first arrival in the queue (v1.37,
        ``Release.member_order_by_arrival``)."""
        ...

    def back_off(self, keys: Iterable[str]) -> None:
        """Retry these rejected pods once the active queue is empty (v1.36's backoff for PodGroup members)."""
        ...

    def reserve(self, pi: PodInfo, row: int, candidates: tuple[int, ...] = (), rules: tuple[str, ...] = ()) -> Status:
        """Assume the pod on ``row`` and reserve its claims there; on failure nothing is left assumed.
        ``candidates``: the rows kube-scheduler could have chosen instead, ``rules`` the beyond-v1.36 rules that
        chose the row (both reported if the pod binds)."""
        ...

    def unreserve(self, pi: PodInfo) -> None: ...

    def bind(self, pi: PodInfo) -> None: ...

    def reject(self, pi: PodInfo, rejection: Rejection, nominated: str | None = None) -> None:
        """The cycle did not place the pod: it waits in the unschedulable set for ``rejection.plugins``' events."""
        ...

    def evict(self, victims: Iterable[PodInfo], preemptor: Preemptor) -> None: ...

    def set_condition(self, group: GroupInfo, status: str, reason: str, message: str) -> None: ...

    def set_composite_condition(self, key: str, status: str, reason: str, message: str) -> None:
        """Write a CompositePodGroup's CompositePodGroupScheduled condition (a True one is never regressed)."""
        ...

    def changed_by(self, rule: str, keys: Iterable[str]) -> None:
        """A beyond-v1.36 rule (its ``Rules`` field name) changed the decision for these pods or PodGroups."""
        ...

    def candidates(self, key: str, nodes: Sequence[str]) -> None:
        """kube-scheduler would have picked at random among ``nodes`` (or placements) where the cycle picked one."""
        ...

    def on_event(self, event: ClusterEvent) -> None:
        """A cluster change the cycle itself made (a claim deallocated), for the queue's hints."""
        ...
