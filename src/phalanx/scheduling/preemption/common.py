"""What every preemption path shares: kube-scheduler's ordering of victims (``MoreImportantPod``), the messages of
the PostFilter, and the what-if removal of placed pods (:class:`Held`)."""

from __future__ import annotations

import math

from phalanx.cluster.pods import PodInfo
from phalanx.cluster.state import ClusterState
from phalanx.dra.claims import Suspension
from phalanx.scheduling.resource_claims import ClaimBinding

__all__ = [
    "MSG_NOT_HELPFUL",
    "MSG_NO_VICTIMS",
    "MSG_PLACEMENT_LIMITATION",
    "MSG_POLICY_NEVER",
    "MSG_WORKLOAD_AWARE",
    "NEVER",
    "PREFIX",
    "PRIORITY_OFFSET",
    "Held",
    "importance",
    "start_time",
]

MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
# Per-pod preemption is off for PodGroup members (GenericWorkload): the group preempts as a whole.
MSG_WORKLOAD_AWARE = "preemption: not eligible due to workload aware preemption enabled"
# ... and, with TopologyAwareWorkloadScheduling, for members of a group with scheduling constraints.
MSG_PLACEMENT_LIMITATION = "preemption: not eligible due to placement-based pod group scheduling limitation"
PREFIX = "preemption: "
NEVER = "Never"
PRIORITY_OFFSET = 1 << 31  # sums of priorities stay non-negative (math.MaxInt32 + 1)


def start_time(pi: PodInfo) -> float:
    """``GetPodStartTime``: status.startTime; for a pod this run placed (assumed or bound, never started) "now",
    later than every pod of the input; else the creation time (the snapshot has no clock)."""
    ts = pi.pod.status.start_time
    if ts is not None:
        return ts.timestamp()
    return math.inf if not pi.pod.spec.node_name else pi.created


def importance(pi: PodInfo) -> tuple[int, float, str]:
    """``MoreImportantPod`` as a sort key: higher priority first, then the earlier started."""
    return (-pi.priority, start_time(pi), pi.key)


class Held:
    """Removes placed pods for a what-if and puts them back: their node usage, and (beyond v1.36, where
    DynamicResources does not model victim removal) their claims, so a victim's devices count as freed."""

    def __init__(self, state: ClusterState, claims: ClaimBinding, devices: bool) -> None:
        self.state = state
        self.claims = claims
        self.devices = devices  # Rules.dra_aware_preemption: suspend the victims' claims too
        self.tokens: dict[str, Suspension] = {}

    def remove(self, pi: PodInfo) -> None:
        self.state.remove(pi)
        self.tokens[pi.key] = self.claims.suspend(pi) if self.devices else Suspension()

    def add(self, pi: PodInfo, row: int) -> None:
        self.state.add_bound(pi, row)
        self.claims.resume(self.tokens.pop(pi.key))
