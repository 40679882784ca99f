"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; untolerated PreferNoSchedule taints lower the
score. Nodes with identical taints form one group, so the toleration check runs once per group, not per node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from phalanx.api.models import Taint, Toleration
from phalanx.cluster.nodes import NodeTable
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.framework import (
    BoolArray,
    CycleState,
    FilterPlugin,
    IntArray,
    ScorePlugin,
    default_normalize,
)
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import PluginSpec
from phalanx.scheduling.reasons import FailureReason, Reason

__all__ = ["NAME", "PLUGIN", "REASON", "TaintToleration", "tolerates"]

NAME = "TaintToleration"
REASON = Reason("node(s) had untolerated taint(s)", unresolvable=True)


def tolerates(t: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint``: effect and key must match when set; Equal compares values, Exists does not."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    return t.operator == "Exists"


def _untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: tuple[str, ...]) -> int:
    return sum(1 for taint in taints if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations))


class TaintToleration:
    name: ClassVar[str] = NAME
    static: ClassVar[bool] = True
    unresolvable: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: IntArray | None = None) -> BoolArray:
        ok = np.array(
            [_untolerated(ts, pod.tolerations, ("NoSchedule", "NoExecute")) == 0 for ts in nodes.taint_sets],
            dtype=bool,
        )
        return ok[nodes.taint_group]

    def reasons(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rejected: IntArray) -> Counter[FailureReason]:
        out: Counter[FailureReason] = Counter({REASON: len(rejected)})
        return out

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, feasible: IntArray) -> IntArray | None:
        # Only tolerations that could tolerate PreferNoSchedule taints count (getAllTolerationPreferNoSchedule).
        prefer = [t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule")]
        counts = np.array([_untolerated(ts, prefer, ("PreferNoSchedule",)) for ts in nodes.taint_sets], dtype=np.int64)
        return counts[nodes.taint_group[feasible]]

    def normalize(self, scores: IntArray) -> IntArray:
        return default_normalize(scores, reverse=True)


_f: FilterPlugin = TaintToleration()
_s: ScorePlugin = TaintToleration()


def _new(args: None, handle: Handle) -> TaintToleration:
    return TaintToleration()


PLUGIN: PluginSpec[None] = PluginSpec(
    NAME,
    _new,
    frozenset({"filter", "score"}),
    frozenset({ClusterEvent.NODE_ADD, ClusterEvent.NODE_UPDATE}),
    default_weight=3,
)
