"""phalanx's rules beyond kube-scheduler v1.36, named, in one frozen object the cycle context exposes.

Every place that does better than v1.36 asks ``ctx.rules.<name>`` before doing so, so the compatibility mode
(``--compat v1.36``) is a :class:`Rules` with every rule off (:data:`COMPAT_V1_36`), and a report can name the
rules a run used and the rule that changed an outcome (the Recorder's ``changed_by``). docs/scheduling.md,
docs/topology.md, docs/preemption.md and docs/dra.md describe each one; docs/compat.md lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

__all__ = ["COMPAT_V1_36", "COMPAT_V1_37", "COMPAT_VERSIONS", "RULES", "Rules", "kebab", "rules_for"]


@dataclass(frozen=True, slots=True)
class Rules:
    """Which beyond-v1.36 rules are on. Field names are the rules' names (kebab-case in documents)."""

    # A heterogeneous gang that fails in v1.36's member order is retried once, largest member first
    # (scheduling/cycle/members.py).
    largest_first_retry: bool = True
    # A PodGroup claim is tried in each place it could be allocated until the whole group fits there, instead of
    # wherever the first member lands (scheduling/cycle/group.py).
    group_aware_claim_placement: bool = True
    # Inside the chosen topology domain, the gang is kept to as few finer domains as hold it, BestFit
    # (scheduling/cycle/placement.py).
    best_fit_narrowing: bool = True
    # The phalanx topology annotations (required, preferred, unconstrained) over TopologyPlacementGenerator's
    # ``levels``; off, only v1.36's ``schedulingConstraints.topology`` places a group (scheduling/placement.py).
    topology_annotations: bool = True
    # Workload-aware preemption of a group with a topology intent looks for victims domain by domain; v1.36
    # refuses WAP for such groups (scheduling/cycle/group_preemption.py).
    topology_aware_preemption: bool = True
    # Preemption counts the devices of victims' claims as freed, and DynamicResources names the nodes where that
    # helps (scheduling/preemption).
    dra_aware_preemption: bool = True
    # Members of running gangs are reprieved before other victims of the same PDB class, so other pods are
    # preferred as victims: a tie-break on top of v1.36's order, never a change of the declared disruptionMode
    # (scheduling/preemption).
    prefer_non_gang_victims: bool = True
    # Per-pod preemption honours a lower-priority PodGroup's disruptionMode, as v1.37 makes explicit: a
    # PodGroup-mode group is one victim unit (all its pods go) with the PodGroup's priority; v1.36's per-pod
    # preemption ignores PodGroups (scheduling/preemption/default_preemption.py).
    disruption_mode_in_pod_preemption: bool = True
    # Workload-aware preemption reprieves a unit only if the group then places no fewer members than with every
    # victim gone (the fix that followed v1.36); v1.36 reprieves whenever the group still fits at all
    # (scheduling/preemption/workload.py).
    reprieve_keeps_placed_members: bool = True
    # Ties between equally good nodes, placements and preemption candidates go to a seeded hash (or the first
    # candidate); off, the tied set is reported as the candidates kube-scheduler picks from at random
    # (scheduling/profile.py, cycle/placement.py, preemption/default_preemption.py).
    seeded_tie_break: bool = True
    # Every feasible node is scored; off, percentageOfNodesToScore applies as in v1.36, and the nodes a sample
    # could have chosen are reported as candidates (scheduling/profile.py).
    all_nodes_scored: bool = True
    # phalanx's GpuShare score plugin is in the default profile (it scores only GPU-sharing DRA clusters);
    # off, the default profile is v1.36's (scheduling/config.py).
    gpu_share_scoring: bool = True
    # The PodGroupScheduled=False message says how far the gang was from fitting; off, v1.36's message, with
    # workload-aware preemption's verdict appended (scheduling/cycle).
    group_message_counts: bool = True
    # A fatal DRA allocator error (a CEL runtime error, a missing DeviceClass, ...) makes the pod Unschedulable with
    # the error as every node's reason; off, as v1.36's Filter Error: the attempt aborts with reason
    # SchedulerError (``running "DynamicResources" filter plugin: ...``) and no PostFilter, and a PodGroup cycle
    # stops at that member and fails with SchedulerError (scheduling/cycle/pod.py, cycle/members.py).
    allocator_error_per_node: bool = True
    # ``serve`` removes preemption victims through the Eviction API (PodDisruptionBudgets enforced by the API
    # server); off, it deletes them as kube-scheduler does (kube/serve.py).
    victims_by_eviction: bool = True
    # A CompositePodGroup tree is placed min-first (each PodGroup places only what its minCount needs, each
    # CompositePodGroup stops at minGroupCount) until the root is satisfied, then the rest; when the children's
    # first choices of topology domain do not satisfy their parent, a bounded depth-first backtracking tries their
    # other domains. Off, as v1.37: greedy, in order, no backtracking, children "stealing" each other's capacity
    # (scheduling/cycle/composite.py).
    composite_min_first_backtracking: bool = True
    # The members a successful PodGroup cycle left unplaced run workload-aware preemption at once, as v1.37.2 does
    # (its next cycle of them comes straight away and preempts); off, as v1.36.3: they are requeued through
    # backoff and preempt only after the pods queued before them had their turn (scheduling/cycle/group.py).
    leftover_members_preempt_at_once: bool = True
    # A CompositePodGroup tree whose groups name more than one Workload is Invalid (every group gets reason
    # ``Invalid``, nothing in it is scheduled), as KEP-6012 describes a tree: one Workload's groups. Off, as
    # v1.37.2: its scheduler does not look at workloadRef when it builds a tree and schedules such a tree like any
    # other (scheduling/trees.py).
    one_workload_per_tree: bool = True
    # A gang cycle rejected before any member is tried (fewer live members than minCount) fails as Unschedulable.
    # Off, as v1.37.2 (Release.early_rejection_post_filter_error, a bug): DynamicResources' PodGroupPostFilter
    # errors and the group fails with SchedulerError (scheduling/cycle/group.py).
    early_rejection_unschedulable: bool = True
    # Workload-aware preemption re-runs the group algorithm after each reprieve (as v1.36 does), so a member may
    # move off a reprieved victim's node. Off, as v1.37 (Release.wap_single_run): the group algorithm runs once
    # with every victim gone, and a unit is reprieved only if each member still passes Filter on the node that
    # run chose (scheduling/preemption/workload.py).
    reprieve_by_rerun: bool = True
    # A PodGroup cycle's members of equal priority go in v1.36's order: the member that completed minCount first,
    # then those that waited for it. Not better in general; phalanx keeps one order across releases, so a
    # snapshot's placements do not change with the cluster's version. Off, as v1.37 (Release.member_order_by_arrival):
    # by arrival (scheduling/cycle/group.py).
    quorum_member_first: bool = True

    def names(self) -> list[str]:
        """The rules that are on, kebab-case, for reports."""
        return [kebab(f.name) for f in fields(self) if getattr(self, f.name)]

    @staticmethod
    def all_names() -> list[str]:
        return [kebab(f.name) for f in fields(Rules)]


def kebab(name: str) -> str:
    """A rule's name in documents and reports: ``largest_first_retry`` -> ``largest-first-retry``."""
    return name.replace("_", "-")


RULES = Rules()  # every rule on: the engine's default
COMPAT_V1_36 = Rules(**{f.name: False for f in fields(Rules)})  # exactly kube-scheduler v1.36
# kube-scheduler v1.37.2: the same rules off, but for those v1.37 itself does (its per-pod preemption honours
# disruptionMode, GetVictimsOnNode; a successful group's leftovers preempt at once); docs/compat.md says why.
COMPAT_V1_37 = replace(COMPAT_V1_36, disruption_mode_in_pod_preemption=True, leftover_members_preempt_at_once=True)
COMPAT_VERSIONS = {"v1.36": COMPAT_V1_36, "v1.37": COMPAT_V1_37}


def rules_for(compat: str | None) -> Rules:
    """The rules of a compatibility mode (``v1.36``, ``v1.37``; ``1.36`` is accepted too), or phalanx's own (None).
    Raises KeyError for a version without a compatibility mode."""
    if compat is None:
        return RULES
    version = compat if compat.startswith("v") else f"v{compat}"
    return COMPAT_VERSIONS[version]
