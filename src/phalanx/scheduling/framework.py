"""The plugin contract: statuses, per-cycle state, the framework handle, and one protocol per extension point.

Filters are vectorised: a filter returns a boolean mask over every node of the table, and explains its
rejections (as reason records, :mod:`phalanx.scheduling.reasons`) only when asked, when a pod fits nowhere.
Scores return one integer per feasible node. Optional abilities (``skips``, ``resolvable_rows``, device slots) are
protocols of their own, so the profile finds them by type, never by name.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

from phalanx.arrays import BoolArray, IntArray
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.reasons import FailureReason, render

__all__ = [
    "MAX_NODE_SCORE",
    "BoolArray",
    "Code",
    "CountingPlugin",
    "CycleState",
    "FilterPlugin",
    "IntArray",
    "PreFilterPlugin",
    "ResolvingPlugin",
    "ScorePlugin",
    "SkippingPlugin",
    "StateKey",
    "Status",
    "default_normalize",
]

MAX_NODE_SCORE = 100


class Code(enum.IntEnum):
    """What a verdict means for the pod, as kube-scheduler's status codes.

    SUCCESS: go on. ERROR: an internal fault (a broken selector, contradictory bound members); the pod is reported
    ``SchedulerError``. UNSCHEDULABLE: does not fit now; preemption may help. UNSCHEDULABLE_AND_UNRESOLVABLE: does
    not fit and preemption cannot help (a PreEnqueue gate, a taint, a missing label). WAIT: Permit holds the pod
    (its gang has not reached minCount). SKIP: the plugin has nothing to do for this pod. PENDING: the pod waits
    for something outside the scheduler (a ResourceClaim not created yet), with no backoff penalty.
    """

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's or the framework's verdict: a code, the reasons (records), the plugin that gave it, and for
    ERROR the exception behind it."""

    code: Code = Code.SUCCESS
    reasons: tuple[FailureReason, ...] = ()
    plugin: str = ""
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    @property
    def message(self) -> str:
        if not self.reasons and self.error is not None:
            return str(self.error)
        return render(self.reasons)


SUCCESS = Status()

T = TypeVar("T")


class StateKey(Generic[T]):
    """A typed key into CycleState, named "<ExtensionPoint><PluginName>" by its owning plugin."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name})"


class CycleState:
    """Scratch data of one pod's scheduling attempt. Values are shared, not copied, on clone."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def write(self, key: StateKey[T], value: T) -> None:
        self._data[key.name] = value

    def read(self, key: StateKey[T]) -> T:
        try:
            return self._data[key.name]  # type: ignore[no-any-return]
        except KeyError:
            raise KeyError(f"{key.name} not found in cycle state: its PreFilter did not run") from None


@runtime_checkable
class PreFilterPlugin(Protocol):
    """PreFilter: narrows the candidate nodes before any filter runs (``PreFilterResult.NodeNames``). Returns a mask
    of the allowed nodes (None: all) and a status; a rejected status means no node can fit
    (``0/N nodes are available: <message>.``). Only static plugins have a PreFilter here, cached per signature."""

    name: ClassVar[str]

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> tuple[BoolArray | None, Status]: ...


class FilterPlugin(Protocol):
    """Filter: which nodes can run the pod. ``static`` plugins depend only on the pod's signature and the
    static node columns, so the framework caches their masks per signature. ``unresolvable``: every rejection is
    UNSCHEDULABLE_AND_UNRESOLVABLE. A plugin whose code depends on the reason sets ``per_reason = True``, and
    each of its reason records says whether it is resolvable."""

    name: ClassVar[str]
    static: ClassVar[bool]
    unresolvable: ClassVar[bool]

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        """The mask over ``rows`` (every node when None). Static plugins are only called with None."""
        ...

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        """The reasons for rejecting the nodes ``rejected`` (row indices), counted per node."""
        ...


@runtime_checkable
class SkippingPlugin(Protocol):
    """PreFilter's Skip: True when the plugin has nothing to check for this pod. Filters whose verdict for a node
    depends on other nodes (spread, inter-pod affinity) must provide it, so topology placement can still count
    capacity exactly for pods they do not concern."""

    def skips(self, pod: PodInfo, nodes: NodeTable) -> bool: ...


@runtime_checkable
class ResolvingPlugin(Protocol):
    """A filter that can tell which of its rejections preemption would resolve (DynamicResources: devices held
    only by lower-priority pods)."""

    def resolvable_rows(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: BoolArray) -> BoolArray: ...


@runtime_checkable
class CountingPlugin(Protocol):
    """A filter whose capacity for pods like ``pod`` can be counted node by node (slots for topology placement and
    preemption); DynamicResources counts devices this way."""

    def countable(self, pod: PodInfo, nodes: NodeTable) -> bool: ...

    def device_slots(self, pod: PodInfo, nodes: NodeTable, caps: IntArray) -> IntArray | None: ...


class ScorePlugin(Protocol):
    """Score: how good each feasible node is, normalised to 0..MAX_NODE_SCORE."""

    name: ClassVar[str]
    static: ClassVar[bool]

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        """Raw scores for the rows ``feasible``, or None when the plugin skips this pod (PreScore Skip)."""
        ...

    def normalize(self, scores: IntArray) -> IntArray: ...


def default_normalize(scores: IntArray, reverse: bool = False) -> IntArray:
    """``helper.DefaultNormalizeScore``: scale to 0..100 by the maximum; ``reverse`` turns counts into scores."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full(len(scores), MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    out = MAX_NODE_SCORE * scores // top
    return MAX_NODE_SCORE - out if reverse else out
