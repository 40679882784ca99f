"""phalanx's rules beyond kube-scheduler v1.36, named, in one frozen object the cycle context exposes.

Every place that does better than v1.36 asks ``ctx.rules.<name>`` before doing so, so a compatibility mode
(``--compat v1.36``, issue #13) only has to build a :class:`Rules` with some of them off, and a report can name
the rules it ran with. Today every rule is on; docs/scheduling.md and docs/preemption.md describe each one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["RULES", "Rules"]


@dataclass(frozen=True, slots=True)
class Rules:
    """Which beyond-v1.36 rules are on. Field names are the rules' names (kebab-case in documents)."""

    # A heterogeneous gang that fails in v1.36's member order is retried once, largest member first
    # (scheduling/cycle/group.py).
    largest_first_retry: bool = True
    # A PodGroup claim is tried in each place it could be allocated until the whole group fits there, instead of
    # wherever the first member lands (scheduling/cycle/group.py).
    group_aware_claim_placement: bool = True
    # Inside the chosen topology domain, the gang is kept to as few finer domains as hold it, BestFit
    # (scheduling/cycle/placement.py).
    best_fit_narrowing: bool = True
    # Workload-aware preemption of a group with a topology intent looks for victims domain by domain
    # (scheduling/cycle/group_preemption.py).
    topology_aware_preemption: bool = True
    # Preemption counts the devices of victims' claims as freed, and DynamicResources names the nodes where that
    # helps (scheduling/preemption).
    dra_aware_preemption: bool = True
    # A running gang is evicted whole or not at all, and its members are reprieved first (scheduling/preemption).
    gang_safe_eviction: bool = True

    def names(self) -> list[str]:
        """The rules that are on, kebab-case, for reports."""
        return [f.name.replace("_", "-") for f in fields(self) if getattr(self, f.name)]


RULES = Rules()  # every rule on: the engine's default
