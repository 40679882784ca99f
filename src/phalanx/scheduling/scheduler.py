"""The engine: cluster state, queue, PodGroups and profiles, with one front door and one exit.

In: ``load`` a snapshot, then object events (``add_pod``, ``update_node``, ``delete_resource_claim`` ...), then
``run`` until no queued pod can make progress. Out: every decision goes to the :class:`Recorder` given at
construction (``recorder.py``), and front ends read the engine only through its queries (``node_usage``,
``resource_claims``, ``bound_node`` ...). The cycles see the engine as a ``CycleContext`` (``context.py``) and
plugins as a ``Handle``. No front end holds scheduling logic, and none reaches into the engine's state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from phalanx.api.admission import RuntimeClasses
from phalanx.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from phalanx.api.gcpause import paused_gc
from phalanx.api.models import (
    CompositePodGroup,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    RuntimeClass,
)
from phalanx.api.priority import PriorityResolver
from phalanx.arrays import IntArray
from phalanx.cluster.pods import PodInfo, pod_key
from phalanx.cluster.state import ClusterState
from phalanx.scheduling import outcome as o
from phalanx.scheduling import views as v
from phalanx.scheduling.config import SchedulerConfig, default_profile
from phalanx.scheduling.context import Preemptor, Stats
from phalanx.scheduling.cycle.composite import reject_problem, schedule_tree
from phalanx.scheduling.cycle.group import schedule_pod_group
from phalanx.scheduling.cycle.pod import schedule_pod
from phalanx.scheduling.events import ClusterEvent
from phalanx.scheduling.feature_gates import SchedulingGates
from phalanx.scheduling.framework import Code, Status
from phalanx.scheduling.groups import GroupInfo, PodGroups
from phalanx.scheduling.plugins import dynamic_resources, gang_scheduling, scheduling_gates
from phalanx.scheduling.plugins.pod_selectors import NAMESPACE_NAME_LABEL
from phalanx.scheduling.plugins.registry import EVENT_HINTS, GROUP_SCOPED
from phalanx.scheduling.preemption.victim_index import VictimIndex
from phalanx.scheduling.profile import Profile
from phalanx.scheduling.queue import SchedulingQueue
from phalanx.scheduling.reasons import Waiting, render
from phalanx.scheduling.recorder import Recorder, Rejection
from phalanx.scheduling.release import Release, release_for
from phalanx.scheduling.resource_claims import EXTENDED_RESOURCE_ANNOTATION, ClaimBinding, ResourceObjects
from phalanx.scheduling.rules import Rules, kebab
from phalanx.scheduling.trees import PENDING, CompositeGroups, TreeNode, TreeProblem

__all__ = ["GroupInfo", "Scheduler", "Stats"]

_TERMINAL = ("Succeeded", "Failed")
_UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


class Scheduler:
    """The engine. ``recorder`` hears every decision (default: an :class:`~phalanx.scheduling.outcome.OutcomeLog`);
    ``rules`` switches phalanx's beyond-v1.36 rules (default: the configuration's, all on unless a compatibility
    mode turned them off); the configuration's feature gates switch the workload and DRA features.
    ``async_victims`` models kube-scheduler's asynchronous preemption: a victim keeps its room until the active
    queue has drained (the pods queued behind the preemptor see it still running, as they do while kube-scheduler's
    deletion is on its way); by default victims are gone at once."""

    def __init__(
        self,
        config: SchedulerConfig | None = None,
        scheduler_name: str | None = None,
        seed: int = 0,
        recorder: Recorder | None = None,
        rules: Rules | None = None,
        async_victims: bool = False,
    ) -> None:
        config = config or SchedulerConfig()
        self.async_victims = async_victims
        self._terminating: dict[
            str, PodInfo
        ] = {}  # evicted, still on their nodes (async_victims) until the queue drains
        self.only = scheduler_name
        self._seed = seed
        self.recorder: Recorder = recorder if recorder is not None else o.OutcomeLog()
        self._rules = rules if rules is not None else config.rules
        self._release = release_for(config.compat)
        # v1.37's member order, unless the quorum-member-first rule keeps v1.36's
        self._by_arrival = self._release.member_order_by_arrival and not self._rules.quorum_member_first
        self._gates = config.feature_gates.scheduling()
        self.feature_gates = config.feature_gates  # the effective gates, for reports
        self.compat = config.compat if rules is None else None
        profiles = list(config.profiles)
        if scheduler_name and all(p.scheduler_name != scheduler_name for p in profiles):
            profiles.append(default_profile(scheduler_name))
        self.state = ClusterState([])
        self._claims = ClaimBinding.build(self.state.table, None, self._group_of, self._gates.dra)
        pct = config.percentage_of_nodes_to_score
        self.profiles: dict[str, Profile] = {p.scheduler_name: p.build(self, seed, self._rules, pct) for p in profiles}
        for profile in self.profiles.values():
            profile.tas = profile.tas and self._gates.topology_aware_scheduling
        self.default_profile = self.profiles[profiles[0].scheduler_name]
        self.priorities = PriorityResolver([])
        gang = {p.scheduler_name: p.gang and self._gates.gang_scheduling for p in profiles}
        self._groups = PodGroups(gang, self.priorities, enabled=self._gates.generic_workload)
        # v1.36 has no CompositePodGroup: under --compat v1.36 (or CompositePodGroup=false in v1.37) every PodGroup
        # of a tree is scheduled on its own.
        trees = self._release.composite_trees and self._gates.composite_pod_group
        self._trees = CompositeGroups(self._groups, self._rules, enabled=trees)
        self._groups.tree_units = self._trees
        self.pods: dict[str, PodInfo] = {}
        self.bound_elsewhere: set[str] = set()  # pods bound to nodes missing from the snapshot
        self.queue = SchedulingQueue(self._pre_enqueue, EVENT_HINTS, GROUP_SCOPED)
        self.runtime_classes = RuntimeClasses([])
        self._pdbs: list[PodDisruptionBudget] = []
        self._victim_index = VictimIndex()  # placed pods per node in preemption order, kept from the change log
        self._stats = Stats()
        self._gpus: dict[frozenset[str], v.GpuDevices] = {}
        # pod key -> (rows kube-scheduler could have chosen, beyond-v1.36 rules that chose its row), until it binds
        self._candidates: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {}
        self._nominations: dict[str, str] = {}  # pod key -> the node it waits nominated to
        self._held: dict[str, PodInfo] = {}  # nominated pods counted on their node for the current cycle
        self._new_nominations: list[str] = []  # nominated since the held set was last brought up to date
        self._held_priority: int | None = None  # the priority the held set was computed for

    def _group_of(self, pi: PodInfo) -> PodGroup | None:
        """The PodGroup whose claims the pod may share (DRAWorkloadResourceClaims)."""
        if not self._gates.workload_resource_claims:
            return None
        group = self._groups.get(pi.group_key)
        return group.pod_group if group is not None else None

    # --- what cycles and plugins see (CycleContext, Handle) ---------------------------------------------------------

    @property
    def claims(self) -> ClaimBinding:
        return self._claims

    @property
    def groups(self) -> PodGroups:
        return self._groups

    @property
    def rules(self) -> Rules:
        return self._rules

    @property
    def release(self) -> Release:
        return self._release

    @property
    def explains(self) -> bool:
        return self.recorder.explains

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def gates(self) -> SchedulingGates:
        return self._gates

    @property
    def stats(self) -> Stats:
        return self._stats

    @property
    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self._pdbs

    @property
    def victim_index(self) -> VictimIndex:
        return self._victim_index

    def profile_for(self, pi: PodInfo) -> Profile:
        return self.profiles.get(pi.pod.spec.scheduler_name, self.default_profile)

    def preemption_policy(self, pi: PodInfo) -> str:
        """The pod's preemptionPolicy as admission writes it (from its PriorityClass when the pod leaves it unset)."""
        if pi.pod.spec.preemption_policy:
            return pi.pod.spec.preemption_policy
        return self.priorities.policies.get(pi.pod.spec.priority_class_name, "PreemptLowerPriority")

    def is_bound(self, key: str) -> bool:
        """Bound to a node (in the input or by this engine), as opposed to pending or only assumed."""
        placed = key in self.state.placement and key not in self.state.assumed
        return placed or key in self.bound_elsewhere

    def take(self, keys: Iterable[str]) -> list[PodInfo]:
        return self.queue.take(keys)

    def nominated_row(self, key: str) -> int | None:
        node = self._nominations.get(key)
        return self.state.node_index(node) if node is not None else None

    def member_rank(self, key: str) -> int:
        return self.queue.arrived(key) if self._by_arrival else self.queue.entered(key)

    def back_off(self, keys: Iterable[str]) -> None:
        self.queue.back_off(keys)

    def on_event(self, event: ClusterEvent) -> None:
        self.queue.on_event(event)

    # --- loading -------------------------------------------------------------------------------------------------

    def load(
        self,
        nodes: Iterable[Node],
        pods: Iterable[Pod],
        pod_groups: Iterable[PodGroup] = (),
        priority_classes: Iterable[PriorityClass] = (),
        runtime_classes: Iterable[RuntimeClass] = (),
        namespaces: Iterable[Namespace] = (),
        pdbs: Iterable[PodDisruptionBudget] = (),
        resources: ResourceObjects | None = None,
        composite_pod_groups: Iterable[CompositePodGroup] = (),
    ) -> None:
        """Take a snapshot: nodes first, then groups (PodGroups and CompositePodGroups), then DRA objects, then pods
        (bound pods accounted, pending pods queued). Raises AdmissionError or UnknownPriorityClass for a pod the
        API server would not have admitted."""
        with paused_gc():
            self.priorities = self._groups.priorities = PriorityResolver(priority_classes)
            self.runtime_classes = RuntimeClasses(runtime_classes)
            self._pdbs = list(pdbs)
            self.state = ClusterState(list(nodes))
            self.state.table.namespace_labels = {
                ns.metadata.name: {**ns.metadata.labels, NAMESPACE_NAME_LABEL: ns.metadata.name} for ns in namespaces
            }
            for pg in pod_groups:
                self._groups.add(pg)
            for cpg in composite_pod_groups:
                self._trees.add(cpg)
            self._trees.changed()
            self._claims = ClaimBinding.build(self.state.table, resources, self._group_of, self._gates.dra)
            infos = [self._info(p) for p in pods]
            for pi in infos:
                self._register(pi)
            for pi in self._arrival_order(infos):
                self._admit(pi)

    def _arrival_order(self, infos: list[PodInfo]) -> list[PodInfo]:
        """The snapshot's pods in the order kube-scheduler's queue would take them in, had they arrived one by one
        by creation (then name): GangScheduling's PreEnqueue holds a gang's members until minCount of them exist,
        so the member that completes the quorum enters first and the held ones follow it. The order in which
        pending pods first enter the active queue orders a PodGroup cycle's members (``member_rank``). v1.37 (when
        ``member_rank`` follows arrival) holds nobody back here: its members go by creation, then name."""
        if self._by_arrival:
            return sorted(infos, key=lambda p: (p.created, p.key))  # v1.37 orders members by arrival, not entry
        out: list[PodInfo] = []
        held: dict[str, list[PodInfo]] = {}
        arrived: dict[str, int] = {}
        for pi in sorted(infos, key=lambda p: (p.created, p.key)):
            group = self._groups.get(pi.group_key)
            if group is None or group.min_count is None or not self._groups.gang_enabled_for(pi):
                out.append(pi)
                continue
            if pi.pod.status.phase not in _TERMINAL:
                arrived[group.key] = arrived.get(group.key, 0) + 1
            if arrived.get(group.key, 0) < group.min_count and not pi.pod.spec.node_name:
                held.setdefault(group.key, []).append(pi)
                continue
            out.append(pi)
            out.extend(held.pop(group.key, ()))
        for waiting in held.values():
            out.extend(waiting)  # short of minCount: they stay gated
        return out

    def _info(self, pod: Pod) -> PodInfo:
        """The pod as admission leaves it (RuntimeClass, priority), with its scheduling facts computed once."""
        pod = self.runtime_classes.admit(pod)
        return PodInfo.of(pod, self.priorities.resolve(pod.spec.priority, pod.spec.priority_class_name))

    def _register(self, pi: PodInfo) -> None:
        self.pods[pi.key] = pi
        self.state.attach(pi)
        if pi.pod.status.phase not in _TERMINAL:
            self._groups.add_member(pi)

    def _admit(self, pi: PodInfo) -> None:
        pod = pi.pod
        if pod.status.phase in _TERMINAL:
            self.recorder.observed(pi.key, pod.status.phase, pod.spec.node_name or None)
            return
        if pod.spec.node_name:
            node = self.state.node_index(pod.spec.node_name)
            if node is not None:
                self.state.add_bound(pi, node)
                self._claims.adopt(pi)
            else:
                # Bound to a node the snapshot lacks: it uses nothing we can see, but it is scheduled (the
                # scheduler cache keeps such pods), so it still counts toward its gang's minCount.
                self.bound_elsewhere.add(pi.key)
            self.recorder.observed(pi.key, o.PHASE_RUNNING, pod.spec.node_name)
            return
        if pod.metadata.deletion_timestamp is not None:
            self.recorder.waiting(pi.key, o.REASON_TERMINATING, "pod is being deleted")
            return
        if self.only is not None and pod.spec.scheduler_name != self.only:
            msg = f'spec.schedulerName is "{pod.spec.scheduler_name}", not "{self.only}"'
            self.recorder.waiting(pi.key, o.REASON_OTHER_SCHEDULER, msg)
            return
        self.queue.add(pi)

    # --- events (simulate and serve feed these; schedule uses load) ---------------------------------------------

    def add_pod(self, pod: Pod) -> PodInfo:
        """A pod appeared: account it if bound, queue it if pending, and wake its group's waiting members."""
        pi = self._info(pod)
        self._register(pi)
        self._admit(pi)
        for key in self._tree_leaves(pi.group_key):
            self.queue.on_event(ClusterEvent.POD_ADD, key)
        return pi

    def delete_pod(self, key: str, replaced: bool = False) -> None:
        """A pod is gone (deleted, completed or evicted): free its node and retry pods that may now fit.
        ``replaced``: a new version of it follows, which keeps its place in the queue's entry order."""
        pi = self.pods.pop(key, None)
        self._nominations.pop(key, None)
        if pi is None:
            return
        if replaced:
            self.queue.remove(key)
        else:
            self.queue.forget(key)
        self.recorder.forgotten(key)
        self.bound_elsewhere.discard(key)
        self._groups.discard_member(pi)
        self._release_claims(pi)
        if key in self.state.placement:
            self.state.remove(pi)
            self.queue.on_event(ClusterEvent.POD_DELETE)

    def update_pod(self, pod: Pod) -> PodInfo:
        """A pod changed. One this engine already placed on the node the update names (our own bind coming back
        through a watch) is left alone; any other change replaces the pod, freeing and re-accounting its node."""
        key = pod_key(pod.metadata.namespace, pod.metadata.name)
        current = self.pods.get(key)
        if current is not None and pod.spec.node_name and pod.status.phase not in _TERMINAL:
            row = self.state.placement.get(key)
            if row is not None and self.state.table.names[row] == pod.spec.node_name:
                self.state.bind(current)
                current.pod = pod
                return current
        self.delete_pod(key, replaced=True)
        return self.add_pod(pod)

    def add_resource_claim(self, claim: ResourceClaim, generated_from: str | None = None) -> None:
        """A ResourceClaim appeared or changed (allocation and reservedFor as its status says): pods waiting for
        it are tried again."""
        self._claims.tracker.add_claim(claim, generated_from)
        self.queue.retry_gated(dynamic_resources.NAME)
        self.queue.on_event(ClusterEvent.RESOURCE_CLAIM_CHANGE)

    def delete_resource_claim(self, namespace: str, name: str) -> None:
        self._claims.tracker.delete_claim(f"{namespace}/{name}")
        self.queue.on_event(ClusterEvent.RESOURCE_CLAIM_CHANGE)

    def add_pod_group(self, pg: PodGroup) -> None:
        group = self._groups.add(pg)
        self._trees.changed()
        for key in self._tree_leaves(group.key):
            self.queue.on_event(ClusterEvent.POD_GROUP_ADD, key)

    def add_composite_pod_group(self, cpg: CompositePodGroup) -> None:
        """A CompositePodGroup appeared or changed: the PodGroups of its tree are checked again (PreEnqueue)."""
        self._trees.add(cpg)
        leaves = {k for g in self._groups.groups.values() if self._trees.in_tree(g) for k in self._tree_leaves(g.key)}
        for leaf in sorted(leaves):
            self.queue.on_event(ClusterEvent.POD_GROUP_ADD, leaf)

    def delete_composite_pod_group(self, key: str) -> None:
        self._trees.remove(key)

    def _tree_leaves(self, group_key: str | None) -> list[str]:
        """The PodGroups of the tree ``group_key`` belongs to (itself alone when it is in none)."""
        group = self._groups.get(group_key)
        if group is None or not self._trees.in_tree(group):
            return [group_key] if group_key else []
        tree = self._trees.resolve(group)
        if isinstance(tree, TreeProblem):
            return [k for kind, k in tree.groups if kind == "PodGroup"]
        return [leaf.key for leaf in tree.leaves()]

    def delete_pod_group(self, key: str) -> None:
        """A PodGroup is gone: its pods wait for it again (PreEnqueue) until it is recreated."""
        group = self._groups.remove(key)
        self._trees.changed()
        if group is not None:
            self._claims.release_group(group.pod_group.metadata.namespace, group.pod_group.metadata.name)

    def add_node(self, node: Node) -> None:
        """A node appeared (an existing name is an update). Pods the input already showed bound to it are
        accounted on it, and unschedulable pods it may help go back to the active queue (NodeAdd)."""
        name = node.metadata.name
        if name in self.state.table.index:
            self.update_node(node)
            return
        row = self.state.add_node(node)
        self._reindex_devices()
        for key in sorted(k for k in self.bound_elsewhere if self.pods[k].pod.spec.node_name == name):
            self.bound_elsewhere.discard(key)
            self.state.add_bound(self.pods[key], row)
        self.queue.on_event(ClusterEvent.NODE_ADD)

    def update_node(self, node: Node) -> None:
        """A node changed: a change of allocatable, labels, taints or unschedulable requeues the pods it may help
        (NodeUpdate); other changes (status conditions, annotations) cost nothing."""
        if node.metadata.name not in self.state.table.index:
            self.add_node(node)
        elif self.state.update_node(node):
            self._reindex_devices()  # labels may change which slices' node selectors match
            self.queue.on_event(ClusterEvent.NODE_UPDATE)

    def delete_node(self, name: str) -> list[PodInfo]:
        """A node is gone, and its pods with it: they leave the cache and are returned, for the caller to decide
        their fate (the simulator fails and restarts them; on a live cluster the API server deletes them)."""
        if name not in self.state.table.index:
            return []
        gone = self.state.delete_node(name)
        self._reindex_devices()
        for pi in gone:
            self.pods.pop(pi.key, None)
            self.recorder.forgotten(pi.key)
            self._groups.discard_member(pi)
            self._release_claims(pi)
        if gone:
            # Gone pods may have held a spread skew or an anti-affinity term over a domain with other nodes.
            self.queue.on_event(ClusterEvent.POD_DELETE)
        return gone

    def _reindex_devices(self) -> None:
        """Node rows and labels changed: DRA's device index follows (devices are indexed by node row)."""
        if self._claims.tracker.slices:
            self._claims.rebuild(self.state.table)

    def set_devices(self, classes: Iterable[DeviceClass], slices: Iterable[ResourceSlice]) -> None:
        """DeviceClasses or ResourceSlices changed (a driver published devices): index them again, keeping
        claims and reservations, and retry pods DRA rejected."""
        self._claims.rebuild(self.state.table, classes, slices)
        self.queue.on_event(ClusterEvent.RESOURCE_SLICE_CHANGE)

    # --- PreEnqueue (SchedulingGates, DynamicResources, GangScheduling) -----------------------------------------------

    def _pre_enqueue(self, pi: PodInfo) -> Status:
        if pi.pod.spec.scheduling_gates:
            return Status(_UNRESOLVABLE, (Waiting(o.REASON_GATED, o.MSG_GATED),), scheduling_gates.NAME)
        if waiting := self._claims.waiting(pi):
            return Status(Code.PENDING, (Waiting(o.REASON_WAITING_CLAIM, waiting),), dynamic_resources.NAME)
        if pi.group_key is None:
            return Status()
        group = self._groups.get(pi.group_key)
        if group is not None and (held := self._held_by_member(pi, group)) is not None:
            return held
        if not self._groups.gang_enabled_for(pi):
            return Status()
        if group is None:
            gate = Waiting(o.REASON_WAITING_POD_GROUP, o.MSG_WAIT_GROUP.format(pi.group_name))
            return Status(_UNRESOLVABLE, (gate,), gang_scheduling.NAME)
        if self._trees.in_tree(group):
            return self._tree_pre_enqueue(group)
        if group.min_count is not None and len(self._groups.members_of(group.key)) < group.min_count:
            gate = Waiting(o.REASON_WAITING_MIN_COUNT, o.MSG_WAIT_MIN_COUNT)
            return Status(_UNRESOLVABLE, (gate,), gang_scheduling.NAME)
        return Status()

    def _held_by_member(self, pi: PodInfo, group: GroupInfo) -> Status | None:
        """v1.37 (``Release.gated_member_holds_group``): a member of the pod's group, or of any PodGroup of its
        tree, that its own PreEnqueue holds (gates, a missing claim) holds the pod too."""
        if not self._release.gated_member_holds_group:
            return None
        for key in self._tree_leaves(group.key):
            other = min(self.queue.gated_members(key) - {pi.key}, default=None)
            if other is not None:
                _, status = self.queue.gated[other]
                gate = Waiting(o.REASON_WAITING_MEMBER, o.MSG_WAIT_MEMBER.format(other, render(status.reasons)))
                return Status(_UNRESOLVABLE, (gate,), gang_scheduling.NAME)
        return None

    def _tree_pre_enqueue(self, group: GroupInfo) -> Status:
        """GangScheduling's PreEnqueue for a member of a tree: the tree's root must exist and be admissible (an
        invalid tree passes, so that its cycle reports it)."""
        tree = self._trees.resolve(group)
        if isinstance(tree, TreeProblem):
            if tree.kind != PENDING:
                return Status()
            return Status(_UNRESOLVABLE, (Waiting(o.REASON_WAITING_POD_GROUP, tree.message),), gang_scheduling.NAME)
        if not self._trees.admissible(tree):
            gate = Waiting(o.REASON_WAITING_MIN_COUNT, o.MSG_WAIT_MIN_COUNT)
            return Status(_UNRESOLVABLE, (gate,), gang_scheduling.NAME)
        return Status()

    # --- running -------------------------------------------------------------------------------------------------

    def run(self) -> int:
        """Schedule until no queued pod can make progress. Returns the number of pods bound by this call."""
        before = self._stats.pods_bound
        try:
            while True:
                if self._terminating and not len(self.queue):
                    self._finish_terminating()  # their PodDelete may wake pods: pop again
                if (pi := self.queue.pop()) is None:
                    if self._terminating:
                        continue
                    break
                self._hold_nominated(pi)
                self._dispatch(pi)
        finally:
            self._release_nominated()
        for key, (_, status) in self.queue.gated.items():
            gate = status.reasons[0] if status.reasons else None
            reason = gate.reason if isinstance(gate, Waiting) else o.REASON_WAITING_MIN_COUNT
            self.recorder.waiting(key, reason, status.message)
        return self._stats.pods_bound - before

    def _dispatch(self, pi: PodInfo) -> None:
        group = self._groups.get(pi.group_key)
        if group is not None and self._held_by_member(pi, group) is not None:
            self.queue.add(pi)  # a member gated after this one was queued holds it (PreEnqueue again)
        elif group is not None and self._trees.in_tree(group):
            self._schedule_tree(pi, group)
        elif group is not None:
            # The PodGroup cycle runs whenever the pod names an existing group (GenericWorkload);
            # GangScheduling only adds the minCount gate and quorum.
            schedule_pod_group(self, pi, group)
        else:
            schedule_pod(self, pi)

    def _hold_nominated(self, pi: PodInfo) -> None:
        """Count the pods waiting nominated to a node on that node for ``pi``'s cycle, where they have ``pi``'s
        priority or more (kube-scheduler's Filter adds them: the room a preemption made is kept for its pod);
        members of the PodGroups ``pi``'s cycle schedules (its group, or its tree's) are the cycle's, not held.

        Held pods stay assumed from one cycle to the next (a run's cycles mostly share a priority, and assuming
        and forgetting every nominee around every cycle cost PreemptionAsync 14x its pods/s); the set is
        recomputed in full only when the priority changes, and released when the run ends."""
        if not self._nominations and not self._held:
            return
        own = set(self._tree_leaves(pi.group_key)) if pi.group_key is not None else set()
        full = pi.priority != self._held_priority

        def excluded(other: PodInfo) -> bool:
            return other.key == pi.key or other.group_key in own

        # the cycle's own pods are left out now and looked at again next cycle
        later = [pi.key] if pi.key in self._held else []
        if own:
            later += [k for k, other in self._held.items() if other.group_key in own and k != pi.key]
        drop = later + ([k for k, other in self._held.items() if other.priority < pi.priority] if full else [])
        for key in set(drop):
            other = self._held.pop(key)
            if key in self.state.assumed:
                self.state.forget(other)
        candidates = list(self._nominations) if full else self._new_nominations
        self._new_nominations, self._held_priority = later, pi.priority
        for key in candidates:
            node = self._nominations.get(key)
            waiting = self.pods.get(key)
            row = self.state.node_index(node) if node is not None else None
            if waiting is None or row is None or key in self._held or key in self.state.placement:
                continue
            if excluded(waiting):
                self._new_nominations.append(key)
            elif waiting.priority >= pi.priority:
                self.state.assume(waiting, row)
                self._held[key] = waiting

    def _release_nominated(self) -> None:
        for key, other in self._held.items():
            if key in self.state.assumed:
                self.state.forget(other)
        self._held.clear()
        self._new_nominations = list(self._nominations)
        self._held_priority = None

    def _schedule_tree(self, pi: PodInfo, group: GroupInfo) -> None:
        tree: TreeNode | TreeProblem = self._trees.resolve(group)
        if isinstance(tree, TreeProblem):
            reject_problem(self, pi, tree)
        else:
            schedule_tree(self, pi, tree)

    # --- decisions (the cycles call these through the CycleContext) -------------------------------------------------

    def reserve(self, pi: PodInfo, row: int, candidates: tuple[int, ...] = (), rules: tuple[str, ...] = ()) -> Status:
        """Assume the pod on ``row`` and reserve its claims there (Reserve); on failure nothing is left assumed.
        ``candidates``: the rows kube-scheduler could have chosen instead, ``rules`` the beyond-v1.36 rules that
        chose the row; both are reported if the pod binds."""
        self.state.assume(pi, row)
        status = self._claims.reserve(pi, row, self.state.table)
        if not status.ok:
            self.state.forget(pi)
        elif candidates or rules:
            self._candidates[pi.key] = (candidates, rules)
        return status

    def unreserve(self, pi: PodInfo) -> None:
        """Undo ``reserve`` (Unreserve): the node and any allocation made for the pod are released."""
        self._claims.unreserve(pi)
        self.state.forget(pi)
        self._candidates.pop(pi.key, None)

    def bind(self, pi: PodInfo) -> None:
        self._nominations.pop(pi.key, None)
        candidates, rules = self._candidates.pop(pi.key, ((), ()))
        if candidates:
            self.recorder.candidates(pi.key, sorted(self.state.table.names[r] for r in candidates))
        for rule in rules:
            self.changed_by(rule, [pi.key])
        self.state.bind(pi)
        self._claims.commit(pi)
        node = self.state.table.names[self.state.placement[pi.key]]
        self._stats.pods_bound += 1
        self.queue.on_event(ClusterEvent.ASSIGNED_POD_ADD)
        for pc in self._claims.held.get(pi.key, ()):
            record = self._claims.tracker.records.get(pc.key)
            self.recorder.claim_allocated(pc.key, pi.key, record.allocation if record is not None else None)
        self.recorder.bound(pi.key, node)

    def reject(self, pi: PodInfo, rejection: Rejection, nominated: str | None = None) -> None:
        self.queue.mark_unschedulable(pi, rejection.plugins)
        if nominated is not None:
            self._nominations[pi.key] = nominated
            self._new_nominations.append(pi.key)
        else:
            self._nominations.pop(pi.key, None)
        self.recorder.unschedulable(pi.key, rejection)
        if nominated is not None:
            self.recorder.nominated(pi.key, nominated)

    def evict(self, victims: Iterable[PodInfo], preemptor: Preemptor) -> None:
        """Preemption victims are deleted (DisruptionTarget, reason PreemptionByScheduler). The run treats them
        as gone at once, frees their nodes and sends one PodDelete event; they stay in the result as Evicted.
        With ``async_victims`` they keep their nodes until the active queue drains (``_finish_terminating``)."""
        for pi in victims:
            row = self.state.placement.get(pi.key)
            if row is None or pi.key in self._terminating:
                continue
            node = self.state.table.names[row]
            if self.async_victims:
                self._terminating[pi.key] = pi
            else:
                self._remove_victim(pi)
            group = pi.group_key if pi.group_key in self._groups else None
            ev = o.Eviction(
                pi.namespace,
                pi.name,
                node,
                preemptor.kind,
                preemptor.namespace,
                preemptor.name,
                preemptor.scheduler,
                group,
            )
            self.recorder.evicted(ev)
            if group is not None:
                target = o.GroupCondition("True", o.REASON_PREEMPTED, ev.message, o.CONDITION_DISRUPTION_TARGET)
                self.recorder.condition_changed(group, target)
        if not self.async_victims:
            self.queue.on_event(ClusterEvent.POD_DELETE)

    def _remove_victim(self, pi: PodInfo) -> None:
        self.state.remove(pi)
        self._release_claims(pi)
        self._groups.discard_member(pi)

    def _finish_terminating(self) -> None:
        """The evicted pods' deletions land: their nodes are freed and one PodDelete event is sent."""
        done, self._terminating = self._terminating, {}
        for pi in done.values():
            if pi.key in self.state.placement:
                self._remove_victim(pi)
        self.queue.on_event(ClusterEvent.POD_DELETE)

    def changed_by(self, rule: str, keys: Iterable[str]) -> None:
        """A beyond-v1.36 rule (a ``Rules`` field name) changed the decision for these pods or PodGroups."""
        self.recorder.changed_by(kebab(rule), sorted(set(keys)))

    def candidates(self, key: str, nodes: Sequence[str]) -> None:
        """kube-scheduler would pick among ``nodes`` (or placements) at random where this engine picked one."""
        self.recorder.candidates(key, sorted(nodes))

    def set_condition(self, group: GroupInfo, status: str, reason: str, message: str) -> None:
        """Write PodGroupScheduled; a True condition is never regressed. The recorder hears the condition as it
        now is (also when a True one was kept)."""
        self._groups.set_condition(group.key, o.GroupCondition(status, reason, message))
        self.recorder.condition_changed(group.key, self._groups.conditions[group.key])

    def set_composite_condition(self, key: str, status: str, reason: str, message: str) -> None:
        """Write CompositePodGroupScheduled; a True condition is never regressed."""
        condition = o.GroupCondition(status, reason, message, o.CONDITION_COMPOSITE_SCHEDULED)
        self._trees.set_condition(key, condition)

    def _release_claims(self, pi: PodInfo) -> None:
        held = self._claims.held.get(pi.key, ())
        self._claims.release(pi.pod, pi.key)
        for pc in held:
            self.recorder.claim_released(pc.key, pi.key)

    # --- queries (read-only; what front ends may know) ------------------------------------------------------------

    def pod(self, key: str) -> Pod | None:
        pi = self.pods.get(key)
        return pi.pod if pi is not None else None

    def pod_keys(self) -> list[str]:
        """Every pod the engine knows, sorted by namespace/name."""
        return sorted(self.pods)

    def group_of(self, key: str) -> str | None:
        """The key of the pod's PodGroup, when that PodGroup exists."""
        pi = self.pods.get(key)
        return pi.group_key if pi is not None and pi.group_key in self._groups else None

    def node_of(self, key: str) -> str | None:
        """The node the pod occupies (bound, or assumed during a cycle), None when it occupies none here."""
        row = self.state.placement.get(key)
        return self.state.table.names[row] if row is not None else None

    def bound_node(self, key: str) -> str | None:
        """The node the pod is bound to, when it is a node of this engine (not merely assumed)."""
        return self.node_of(key) if key not in self.state.assumed else None

    def pods_on(self, node: str) -> list[str]:
        row = self.state.table.index.get(node)
        return list(self.state.node_pods[row]) if row is not None else []

    def node_usage(self) -> v.NodeUsage:
        return v.NodeUsage.of(self.state.table)

    def resource_usage(self, resource: str) -> tuple[IntArray, IntArray]:
        """(allocatable, requested) of one resource per node row (zeros when no node has it)."""
        t = self.state.table
        col = t.resources.column.get(resource)
        if col is None:
            zeros = t.pod_count * 0
            return zeros, zeros.copy()
        return t.allocatable[:, col].copy(), t.requested[:, col].copy()

    def node_label(self, key: str) -> tuple[IntArray, list[str]]:
        """Per node row, the code of its value of label ``key`` (-1: none), and the values codes index."""
        col = self.state.table.label(key)
        return col.codes.astype("int64"), list(col.values)

    def gpu_devices(self, drivers: frozenset[str]) -> tuple[IntArray, IntArray]:
        """(GPU devices, allocated GPU devices) per node row, counting devices of ``drivers`` (views.GpuDevices)."""
        counter = self._gpus.setdefault(drivers, v.GpuDevices(drivers))
        return counter.per_row(self._claims.tracker, len(self.state.table))

    def resource_claims(self) -> list[v.ClaimStatus]:
        """Every claim, input or generated, as the engine would write its status; sorted by key."""
        records = self._claims.tracker.records
        return [v.claim_status(records[k]) for k in sorted(records)]

    def claim(self, key: str) -> v.ClaimStatus | None:
        record = self._claims.tracker.get(key)
        return v.claim_status(record) if record is not None else None

    def pod_claims(self, key: str) -> list[v.PodClaimStatus]:
        """The claims the pod references, resolved (none while one is missing)."""
        pi = self.pods.get(key)
        if pi is None or not pi.pod.spec.resource_claims:
            return []
        records = self._claims.tracker.records
        resolved = self._claims.claims(pi).claims
        return [v.PodClaimStatus(v.claim_status(records[pc.key]), pc.group) for pc in resolved if pc.key in records]

    def reserved_claims(self, key: str) -> list[v.PodClaimStatus]:
        """The claims the pod reserved (PreBind writes them), once each, with the extended-resource claim's
        container mapping."""
        pi, held = self.pods.get(key), self._claims.held.get(key)
        if pi is None or not held:
            return []
        out = []
        for pc in dict.fromkeys(held):
            record = self._claims.tracker.records.get(pc.key)
            if record is None:
                continue
            extended = None
            if EXTENDED_RESOURCE_ANNOTATION in record.claim.metadata.annotations and key in self.state.placement:
                row = self.state.placement[key]
                extended = v.extended_status(self._claims, pi, self.state.table, row, record.claim)
            out.append(v.PodClaimStatus(v.claim_status(record), pc.group, extended))
        return out

    def condition(self, group: str) -> o.GroupCondition | None:
        """The PodGroupScheduled condition as the engine would write it."""
        return self._groups.conditions.get(group)

    def group_statuses(self) -> list[v.GroupStatus]:
        out = []
        for key in sorted(self._groups.groups):
            group = self._groups.groups[key]
            meta = group.pod_group.metadata
            scheduled = sum(1 for k in self._groups.members_of(key) if self.is_bound(k))
            parent = group.pod_group.spec.parent_composite_pod_group_name if group.pod_group.spec else None
            status = v.GroupStatus(
                meta.namespace, meta.name, key, group.min_count, scheduled, self.condition(key), meta.uid, parent
            )
            out.append(status)
        return out

    def composite_statuses(self) -> list[v.CompositeStatus]:
        """Every CompositePodGroup, sorted by key: its policy, parent, children and condition."""
        out = []
        children: dict[str, list[str]] = {}
        for key, cpg in self._trees.composites.items():
            parent = cpg.spec.parent_composite_pod_group_name if cpg.spec is not None else None
            if parent:
                children.setdefault(pod_key(cpg.metadata.namespace, parent), []).append(f"CompositePodGroup/{key}")
        for key, group in self._groups.groups.items():
            parent = group.pod_group.spec.parent_composite_pod_group_name if group.pod_group.spec is not None else None
            if parent:
                children.setdefault(pod_key(group.pod_group.metadata.namespace, parent), []).append(f"PodGroup/{key}")
        for key in sorted(self._trees.composites):
            cpg = self._trees.composites[key]
            policy = cpg.spec.scheduling_policy if cpg.spec is not None else None
            gang = policy.gang if policy is not None else None
            out.append(
                v.CompositeStatus(
                    cpg.metadata.namespace,
                    cpg.metadata.name,
                    key,
                    gang.min_group_count if gang is not None else None,
                    cpg.spec.parent_composite_pod_group_name if cpg.spec is not None else None,
                    sorted(children.get(key, [])),
                    sum(1 for child in children.get(key, []) if self._satisfied(child)),
                    self._trees.conditions.get(key),
                )
            )
        return out

    def _satisfied(self, child: str) -> bool:
        kind, _, key = child.partition("/")
        cond = self._trees.conditions.get(key) if kind == "CompositePodGroup" else self.condition(key)
        return cond is not None and cond.status == "True"

    def pending(self) -> tuple[int, int]:
        """(active, gated) pods in the queue."""
        return len(self.queue), len(self.queue.gated)
