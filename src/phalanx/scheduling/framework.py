"""The plugin contract: statuses, per-cycle state, and one protocol per extension point.

Filters are vectorised: a filter returns a boolean mask over every node of the table, and explains its
rejections only when asked (when a pod fits nowhere). Scores return one integer per feasible node.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo

__all__ = [
    "MAX_NODE_SCORE",
    "BoolArray",
    "Code",
    "CycleState",
    "FilterPlugin",
    "IntArray",
    "PreFilterPlugin",
    "ScorePlugin",
    "StateKey",
    "Status",
    "default_normalize",
]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
MAX_NODE_SCORE = 100


class Code(enum.IntEnum):
    """What a plugin's verdict means for the pod.

    SUCCESS: go on. ERROR: an internal fault; the pod is retried after backoff. UNSCHEDULABLE: does not fit now;
    preemption may help. UNSCHEDULABLE_AND_UNRESOLVABLE: does not fit and preemption cannot help. WAIT: a Permit
    plugin holds the pod (gang quorum not reached). SKIP: the plugin has nothing to do for this pod. PENDING: the
    pod waits for something outside the scheduler, with no backoff penalty.
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
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)


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
    static node columns, so the framework caches their masks per signature."""

    name: ClassVar[str]
    static: ClassVar[bool]
    unresolvable: ClassVar[bool]  # its rejections cannot be resolved by preemption

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        """The mask over ``rows`` (every node when None). Static plugins are only called with None."""
        ...

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[str]:
        """The reasons for rejecting the nodes ``rejected`` (row indices), counted per node."""
        ...

    # Optional: ``skips(pod, nodes) -> bool``, True when the plugin has nothing to check for this pod (PreFilter's
    # Skip). Filters whose verdict for a node depends on other nodes (spread, inter-pod affinity) must provide it,
    # so topology placement can still count capacity exactly for pods they do not concern.


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
