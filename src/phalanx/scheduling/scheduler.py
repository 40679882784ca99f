"""The engine: cluster state, queue, PodGroup index and profiles, driven by events from a front end.

``schedule`` loads a snapshot and calls ``run``; ``simulate`` and ``serve`` add and remove objects as their clocks
or watches say and call ``run`` after each batch. No front end holds scheduling logic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from phalanx.api.admission import RuntimeClasses
from phalanx.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from phalanx.api.gcpause import paused_gc
from phalanx.api.models import Namespace, Node, Pod, PodDisruptionBudget, PodGroup, PriorityClass, RuntimeClass
from phalanx.api.priority import PriorityResolver
from phalanx.cluster.pods import PodInfo, pod_key
from phalanx.cluster.state import ClusterState
from phalanx.scheduling import outcome as o
from phalanx.scheduling.config import SchedulerConfig, default_profile
from phalanx.scheduling.cycle import schedule_pod, schedule_pod_group
from phalanx.scheduling.framework import Code, Status
from phalanx.scheduling.plugins.dynamic_resources import DynamicResources
from phalanx.scheduling.plugins.gpu_share import GpuShare
from phalanx.scheduling.plugins.pod_selectors import NAMESPACE_NAME_LABEL
from phalanx.scheduling.preemption import VictimIndex
from phalanx.scheduling.profile import Attempt, Profile
from phalanx.scheduling.queue import SchedulingQueue
from phalanx.scheduling.resource_claims import ClaimBinding, ResourceObjects

__all__ = ["GroupInfo", "Scheduler", "Stats"]

_TERMINAL = ("Succeeded", "Failed")


@dataclass
class GroupInfo:
    key: str
    pod_group: PodGroup
    min_count: int | None  # None for the basic policy


@dataclass
class Stats:
    cycle_seconds: list[float] = field(default_factory=list)
    pods_bound: int = 0
    preemption_seconds: list[float] = field(default_factory=list)  # one entry per preemption decision


class Scheduler:
    def __init__(self, config: SchedulerConfig | None = None, scheduler_name: str | None = None, seed: int = 0):
        config = config or SchedulerConfig()
        self.only = scheduler_name
        profiles = list(config.profiles)
        if scheduler_name and all(p.scheduler_name != scheduler_name for p in profiles):
            profiles.append(default_profile(scheduler_name))
        self.profiles: dict[str, Profile] = {p.scheduler_name: p.build(seed) for p in profiles}
        self.gang_enabled = {p.scheduler_name: p.gang for p in profiles}
        self.default_profile = self.profiles[profiles[0].scheduler_name]
        self.state = ClusterState([])
        self.pods: dict[str, PodInfo] = {}
        self.groups: dict[str, GroupInfo] = {}
        self.members: dict[str, set[str]] = {}  # group key -> non-terminal member pod keys
        self.bound_elsewhere: set[str] = set()  # pods bound to nodes missing from the snapshot
        self.queue = SchedulingQueue(self._pre_enqueue)
        self.outcomes: dict[str, o.PodOutcome] = {}
        self.conditions: dict[str, o.GroupCondition] = {}
        self.priorities = PriorityResolver([])
        self.runtime_classes = RuntimeClasses([])
        self.pdbs: list[PodDisruptionBudget] = []
        self.evictions: list[o.Eviction] = []
        self.disruption_targets: dict[str, o.GroupCondition] = {}  # PodGroups that lost pods to preemption
        self.victim_index = VictimIndex()  # placed pods per node in preemption order, kept from the change log
        self.stats = Stats()
        self.claims = ClaimBinding.build(self.state.table, None, self._group_of)
        self._attach_claims()

    def _group_of(self, pi: PodInfo) -> PodGroup | None:
        gk = pi.group_key
        group = self.groups.get(gk) if gk else None
        return group.pod_group if group is not None else None

    def _attach_claims(self) -> None:
        for profile in self.profiles.values():
            for plugin in (*profile.filters, *(p for p, _ in profile.scores)):
                if isinstance(plugin, DynamicResources | GpuShare):
                    plugin.attach(self.claims)

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
    ) -> None:
        """Take a snapshot: nodes first, then groups, then DRA objects, then pods (bound pods accounted, pending
        pods queued). Raises AdmissionError or UnknownPriorityClass for a pod the API server would not have
        admitted."""
        with paused_gc():
            self.priorities = PriorityResolver(priority_classes)
            self.runtime_classes = RuntimeClasses(runtime_classes)
            self.pdbs = list(pdbs)
            self.state = ClusterState(list(nodes))
            self.state.table.namespace_labels = {
                ns.metadata.name: {**ns.metadata.labels, NAMESPACE_NAME_LABEL: ns.metadata.name} for ns in namespaces
            }
            for pg in pod_groups:
                self._add_group(pg)
            self.claims = ClaimBinding.build(self.state.table, resources, self._group_of)
            self._attach_claims()
            infos = [self._info(p) for p in pods]
            for pi in infos:
                self._register(pi)
            for pi in infos:
                self._admit(pi)

    def _info(self, pod: Pod) -> PodInfo:
        """The pod as admission leaves it (RuntimeClass, priority), with its scheduling facts computed once."""
        pod = self.runtime_classes.admit(pod)
        return PodInfo.of(pod, self.priorities.resolve(pod.spec.priority, pod.spec.priority_class_name))

    def _add_group(self, pg: PodGroup) -> GroupInfo:
        key = pod_key(pg.metadata.namespace, pg.metadata.name)
        policy = pg.spec.scheduling_policy if pg.spec else None
        min_count = policy.gang.min_count if policy is not None and policy.gang is not None else None
        group = GroupInfo(key, pg, min_count)
        self.groups[key] = group
        for cond in pg.status.conditions:
            if cond.type == o.CONDITION_POD_GROUP_SCHEDULED:
                self.conditions[key] = o.GroupCondition(cond.status, cond.reason, cond.message)
        return group

    def _register(self, pi: PodInfo) -> None:
        self.pods[pi.key] = pi
        self.state.attach(pi)
        gk = pi.group_key
        if gk and pi.pod.status.phase not in _TERMINAL:
            self.members.setdefault(gk, set()).add(pi.key)

    def members_of(self, group: GroupInfo) -> set[str]:
        """PodGroupState.AllPods: the non-terminal pods naming the group, whether it exists yet or not."""
        return self.members.get(group.key, set())

    def _admit(self, pi: PodInfo) -> None:
        pod = pi.pod
        if pod.status.phase in _TERMINAL:
            self.outcomes[pi.key] = o.PodOutcome(pod.status.phase, pod.spec.node_name or None)
            return
        if pod.spec.node_name:
            node = self.state.node_index(pod.spec.node_name)
            if node is not None:
                self.state.add_bound(pi, node)
                self.claims.adopt(pi)
            else:
                # Bound to a node the snapshot lacks: it uses nothing we can see, but it is scheduled (the
                # scheduler cache keeps such pods), so it still counts toward its gang's minCount.
                self.bound_elsewhere.add(pi.key)
            self.outcomes[pi.key] = o.PodOutcome(o.PHASE_RUNNING, pod.spec.node_name)
            return
        if pod.metadata.deletion_timestamp is not None:
            self.outcomes[pi.key] = o.PodOutcome(o.PHASE_WAITING, None, o.REASON_TERMINATING, "pod is being deleted")
            return
        if self.only is not None and pod.spec.scheduler_name != self.only:
            msg = f'spec.schedulerName is "{pod.spec.scheduler_name}", not "{self.only}"'
            self.outcomes[pi.key] = o.PodOutcome(o.PHASE_WAITING, None, o.REASON_OTHER_SCHEDULER, msg)
            return
        self.queue.add(pi)

    # --- events (simulate and serve feed these; schedule uses load) ---------------------------------------------

    def add_pod(self, pod: Pod) -> PodInfo:
        """A pod appeared: account it if bound, queue it if pending, and wake its group's waiting members."""
        pi = self._info(pod)
        self._register(pi)
        self._admit(pi)
        self.queue.on_event("PodAdd", pi.group_key)
        return pi

    def delete_pod(self, key: str) -> None:
        """A pod is gone (deleted, completed or evicted): free its node and retry pods that may now fit."""
        pi = self.pods.pop(key, None)
        if pi is None:
            return
        self.queue.remove(key)
        self.outcomes.pop(key, None)
        self.bound_elsewhere.discard(key)
        if pi.group_key:
            self.members.get(pi.group_key, set()).discard(key)
        self.claims.release(pi.pod, key)
        if key in self.state.placement:
            self.state.remove(pi)
            self.queue.on_event("PodDelete")

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
        self.delete_pod(key)
        return self.add_pod(pod)

    def add_resource_claim(self, claim: ResourceClaim, generated_from: str | None = None) -> None:
        """A ResourceClaim appeared or changed (allocation and reservedFor as its status says): pods waiting for
        it are tried again."""
        self.claims.tracker.add_claim(claim, generated_from)
        self.queue.retry_gated("DynamicResources")
        self.queue.on_event("ResourceClaimChange")

    def delete_resource_claim(self, namespace: str, name: str) -> None:
        self.claims.tracker.delete_claim(f"{namespace}/{name}")
        self.queue.on_event("ResourceClaimChange")

    def add_pod_group(self, pg: PodGroup) -> None:
        group = self._add_group(pg)
        self.queue.on_event("PodGroupAdd", group.key)

    def delete_pod_group(self, key: str) -> None:
        """A PodGroup is gone: its pods wait for it again (PreEnqueue) until it is recreated."""
        group = self.groups.pop(key, None)
        self.conditions.pop(key, None)
        if group is not None:
            self.claims.release_group(group.pod_group.metadata.namespace, group.pod_group.metadata.name)

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
        self.queue.on_event("NodeAdd")

    def update_node(self, node: Node) -> None:
        """A node changed: a change of allocatable, labels, taints or unschedulable requeues the pods it may help
        (NodeUpdate); other changes (status conditions, annotations) cost nothing."""
        if node.metadata.name not in self.state.table.index:
            self.add_node(node)
        elif self.state.update_node(node):
            self._reindex_devices()  # labels may change which slices' node selectors match
            self.queue.on_event("NodeUpdate")

    def delete_node(self, name: str) -> list[PodInfo]:
        """A node is gone, and its pods with it: they leave the cache and are returned, for the caller to decide
        their fate (the simulator fails and restarts them; on a live cluster the API server deletes them)."""
        if name not in self.state.table.index:
            return []
        gone = self.state.delete_node(name)
        self._reindex_devices()
        for pi in gone:
            self.pods.pop(pi.key, None)
            self.outcomes.pop(pi.key, None)
            if pi.group_key:
                self.members.get(pi.group_key, set()).discard(pi.key)
            self.claims.release(pi.pod, pi.key)
        if gone:
            # Gone pods may have held a spread skew or an anti-affinity term over a domain with other nodes.
            self.queue.on_event("PodDelete")
        return gone

    def _reindex_devices(self) -> None:
        """Node rows and labels changed: DRA's device index follows (devices are indexed by node row)."""
        if self.claims.tracker.slices:
            self.claims.rebuild(self.state.table)

    def set_devices(self, classes: Iterable[DeviceClass], slices: Iterable[ResourceSlice]) -> None:
        """DeviceClasses or ResourceSlices changed (a driver published devices): index them again, keeping
        claims and reservations, and retry pods DRA rejected."""
        self.claims.rebuild(self.state.table, classes, slices)
        self.queue.on_event("ResourceSliceChange")

    # --- PreEnqueue (SchedulingGates, GangScheduling) -------------------------------------------------------------

    def _pre_enqueue(self, pi: PodInfo) -> Status:
        reason, message = self._gate(pi)
        if not reason:
            return Status()
        plugin = {o.REASON_GATED: "SchedulingGates", o.REASON_WAITING_CLAIM: "DynamicResources"}.get(
            reason, "GangScheduling"
        )
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), plugin)

    def _gate(self, pi: PodInfo) -> tuple[str, str]:
        """The PreEnqueue verdict as (reason, message); an empty reason admits the pod."""
        if pi.pod.spec.scheduling_gates:
            return o.REASON_GATED, o.MSG_GATED
        if waiting := self.claims.waiting(pi):
            return o.REASON_WAITING_CLAIM, waiting
        gk = pi.group_key
        if gk is None or not self.gang_enabled.get(pi.pod.spec.scheduler_name, True):
            return "", ""
        group = self.groups.get(gk)
        if group is None:
            return o.REASON_WAITING_POD_GROUP, o.MSG_WAIT_GROUP.format(pi.group_name)
        if group.min_count is not None and len(self.members_of(group)) < group.min_count:
            return o.REASON_WAITING_MIN_COUNT, o.MSG_WAIT_MIN_COUNT
        return "", ""

    # --- running -------------------------------------------------------------------------------------------------

    def profile_for(self, pi: PodInfo) -> Profile:
        return self.profiles.get(pi.pod.spec.scheduler_name, self.default_profile)

    def run(self) -> int:
        """Schedule until no queued pod can make progress. Returns the number of pods bound by this call."""
        before = self.stats.pods_bound
        while (pi := self.queue.pop()) is not None:
            gk = pi.group_key
            group = self.groups.get(gk) if gk else None
            if group is not None:
                # The PodGroup cycle runs whenever the pod names an existing group (GenericWorkload);
                # GangScheduling only adds the minCount gate and quorum.
                schedule_pod_group(self, pi, group)
            else:
                schedule_pod(self, pi)
        for key, (_, status) in self.queue.gated.items():
            reason = (
                o.REASON_GATED
                if status.plugin == "SchedulingGates"
                else o.REASON_WAITING_CLAIM
                if status.plugin == "DynamicResources"
                else (
                    o.REASON_WAITING_POD_GROUP
                    if "appear in scheduling queue" in status.message and "pod group" in status.message
                    else o.REASON_WAITING_MIN_COUNT
                )
            )
            self.outcomes[key] = o.PodOutcome(o.PHASE_WAITING, None, reason, status.message)
        return self.stats.pods_bound - before

    # --- callbacks from the cycles ---------------------------------------------------------------------------------

    def reserve(self, pi: PodInfo, row: int) -> str:
        """Assume the pod on ``row`` and reserve its claims there (Reserve). Returns '' or why Reserve failed,
        in which case nothing is left assumed."""
        self.state.assume(pi, row)
        failed = self.claims.reserve(pi, row, self.state.table)
        if failed:
            self.state.forget(pi)
        return failed

    def unreserve(self, pi: PodInfo) -> None:
        """Undo ``reserve`` (Unreserve): the node and any allocation made for the pod are released."""
        self.claims.unreserve(pi)
        self.state.forget(pi)

    def bind(self, pi: PodInfo) -> None:
        self.state.bind(pi)
        self.claims.commit(pi)
        node = self.state.table.names[self.state.placement[pi.key]]
        msg = f"Successfully assigned {pi.key} to {node}"
        before = self.outcomes.get(pi.key)
        nominated = before.nominated_node if before is not None else None
        self.outcomes[pi.key] = o.PodOutcome(o.PHASE_SCHEDULED, node, o.REASON_SCHEDULED, msg, nominated)
        self.stats.pods_bound += 1
        self.queue.on_event("AssignedPodAdd")

    def mark_unschedulable(self, pi: PodInfo, attempt: Attempt, nominated: str | None = None) -> None:
        diag = attempt.diagnosis
        message = diag.message() if diag is not None else o.MSG_GROUP_UNSCHEDULABLE
        self.fail(
            pi, o.REASON_UNSCHEDULABLE, message, rejected_by=diag.rejected_by if diag else (), nominated=nominated
        )

    def fail(
        self, pi: PodInfo, reason: str, message: str, rejected_by: Iterable[str], nominated: str | None = None
    ) -> None:
        self.outcomes[pi.key] = o.PodOutcome(o.PHASE_UNSCHEDULABLE, None, reason, message, nominated)
        self.queue.mark_unschedulable(pi, rejected_by)

    def evict(
        self, victims: Iterable[PodInfo], kind: str, preemptor_namespace: str, preemptor_name: str, scheduler: str
    ) -> None:
        """Preemption victims are deleted (DisruptionTarget, reason PreemptionByScheduler). The run treats them
        as gone at once, frees their nodes and sends one PodDelete event; they stay in the result as Evicted."""
        for pi in victims:
            row = self.state.placement.get(pi.key)
            if row is None:
                continue
            node = self.state.table.names[row]
            self.state.remove(pi)
            self.claims.release(pi.pod, pi.key)
            if pi.group_key:
                self.members.get(pi.group_key, set()).discard(pi.key)
            message = o.MSG_PREEMPTED.format(scheduler)
            self.outcomes[pi.key] = o.PodOutcome(o.PHASE_EVICTED, node, o.REASON_PREEMPTED, message)
            if pi.group_key in self.groups:
                self.disruption_targets[pi.group_key] = o.GroupCondition(
                    "True", o.REASON_PREEMPTED, message, o.CONDITION_DISRUPTION_TARGET
                )
            self.evictions.append(o.Eviction(pi.namespace, pi.name, node, kind, preemptor_namespace, preemptor_name))
        self.queue.on_event("PodDelete")

    def bound_members(self, group: GroupInfo) -> int:
        """Members already bound (in the input or by an earlier cycle): they count toward minCount."""
        return sum(1 for k in self.members_of(group) if self.is_bound(k))

    def is_bound(self, key: str) -> bool:
        """Bound to a node (in the input or by this engine), as opposed to pending or only assumed."""
        placed = key in self.state.placement and key not in self.state.assumed
        return placed or key in self.bound_elsewhere

    def set_condition(self, group: GroupInfo, status: str, reason: str, message: str) -> None:
        """Write PodGroupScheduled; a True condition is never regressed."""
        current = self.conditions.get(group.key)
        if current is not None and current.status == "True" and status != "True":
            return
        self.conditions[group.key] = o.GroupCondition(status, reason, message)
