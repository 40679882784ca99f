"""Why a pod fits nowhere: reason records counted per node, rendered as kube-scheduler's FitError message (the
one place filter reasons become text)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from phalanx.scheduling.reasons import FailureReason

__all__ = ["FILTER_ERROR_PLUGIN", "NO_NODE_AVAILABLE", "Diagnosis"]

NO_NODE_AVAILABLE = "0/{} nodes are available"
FILTER_ERROR_PLUGIN = "DynamicResources"  # the one Filter plugin with error reasons (Reason.error)


@dataclass
class Diagnosis:
    """The reasons nodes were rejected. ``reasons`` counts nodes per reason record (a node rejected for two
    resources counts under both); ``rejected_by`` maps plugin name to the number of nodes it rejected first."""

    num_nodes: int
    reasons: Counter[FailureReason] = field(default_factory=Counter)
    rejected_by: Counter[str] = field(default_factory=Counter)
    unresolvable_nodes: int = 0
    pre_filter_message: str = ""
    post_filter_message: str = ""

    def filter_error(self) -> str | None:
        """The Filter error kube-scheduler would have aborted the attempt with (``running "PLUGIN" filter plugin:
        ...``), when a node was rejected by one (a fatal DRA allocator error); None otherwise."""
        for reason in sorted(self.reasons, key=lambda r: r.message):
            if getattr(reason, "error", False):
                return f'running "{FILTER_ERROR_PLUGIN}" filter plugin: {reason.message}'
        return None

    def message(self) -> str:
        """``FitError.Error()``: ``0/N nodes are available: 3 Insufficient cpu, 2 node(s) ... .``"""
        out = NO_NODE_AVAILABLE.format(self.num_nodes) + ":"
        if self.pre_filter_message:
            out += f" {self.pre_filter_message}."
        else:
            histogram = sorted(f"{count} {reason.message}" for reason, count in self.reasons.items())
            out += f" {', '.join(histogram)}."
        if self.post_filter_message:
            out += f" {self.post_filter_message}"  # ends with its own period, as kube-scheduler writes it
        return out
