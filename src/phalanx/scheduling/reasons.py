"""Why a plugin said no, as records: filters and gates return these, one place renders them as kube-scheduler's
text, and tests and front ends read their fields instead of parsing messages.

- :class:`Reason`: a fixed reason (``node(s) had untolerated taint(s)``), resolvable by preemption or not.
- :class:`InsufficientResource`: ``noderesources.InsufficientResource`` (resource, requested, used, capacity);
  counted per resource, so ``used`` and ``capacity`` are those of one example node and do not take part in
  equality (nodes short of cpu count under one reason, whatever their numbers).
- :class:`Waiting`: a PreEnqueue gate holding the pod back, with the pod condition reason it reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["TOO_MANY_PODS", "FailureReason", "InsufficientResource", "Reason", "Waiting", "render"]

TOO_MANY_PODS = "Too many pods"


class FailureReason(Protocol):
    """What every reason record offers: kube-scheduler's text and whether preemption could resolve it."""

    @property
    def message(self) -> str: ...

    @property
    def unresolvable(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Reason:
    """A reason whose text is fixed by the plugin (kube-scheduler's ``ErrReason...`` constants)."""

    message: str
    unresolvable: bool = False  # UNSCHEDULABLE_AND_UNRESOLVABLE: evicting pods would not help
    # kube-scheduler's Filter returns Error here (a fatal DRA allocator error): the attempt aborts there; phalanx
    # reports it per node unless Rules.allocator_error_per_node is off.
    error: bool = False

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """A node lacks free ``resource`` for the pod (``pods``: its pod slots are all taken)."""

    resource: str
    requested: int = field(default=0, compare=False)
    used: int = field(default=0, compare=False)
    capacity: int = field(default=0, compare=False)
    unresolvable: bool = False

    @property
    def message(self) -> str:
        return TOO_MANY_PODS if self.resource == "pods" else f"Insufficient {self.resource}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class Waiting:
    """A PreEnqueue gate holds the pod: ``reason`` is what the pod is reported with (``SchedulingGated``,
    ``WaitingForPodGroup``, ``WaitingForMinCount``, ``WaitingForResourceClaim``)."""

    reason: str
    message: str
    unresolvable: bool = True

    def __str__(self) -> str:
        return self.message


def render(reasons: tuple[FailureReason, ...]) -> str:
    """A status's reasons as kube-scheduler joins them."""
    return ", ".join(r.message for r in reasons)
