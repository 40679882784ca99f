"""CompositePodGroup trees (KEP-6012, v1.37): the CompositePodGroups the engine knows, their conditions, and the
tree a PodGroup belongs to, resolved from ``parentCompositePodGroupName`` references and checked as kube-scheduler
checks it at run time.

A tree is resolved from any of its groups by climbing parents to the root (the group without a parent), then
building the children of every CompositePodGroup downward, sorted by creation time then name (v1.37's alpha order).
The result is one of:

- :class:`TreeNode`, the root of a valid tree;
- :class:`TreeProblem` ``pending``: a parent does not exist yet, so the tree waits (v1.37 holds such groups and
  their pods aside until the root is observed);
- :class:`TreeProblem` ``invalid``: a cycle of parent references, a tree deeper than 4 levels, or (rule
  ``one-workload-per-tree``, off under ``--compat v1.37``) groups naming more than one Workload. Every group of it
  gets reason ``Invalid`` and nothing in it is scheduled.

Keys are ``namespace/name``; a CompositePodGroup and a PodGroup may share a key, so nodes carry their kind.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from phalanx.api.models import CompositePodGroup
from phalanx.api.scheduling import MAX_TREE_DEPTH, disrupts_together
from phalanx.cluster.pods import pod_key
from phalanx.scheduling import outcome as o
from phalanx.scheduling.groups import GroupInfo, PodGroups, write_condition
from phalanx.scheduling.rules import RULES, Rules

__all__ = ["INVALID", "KIND_COMPOSITE", "KIND_POD_GROUP", "PENDING", "CompositeGroups", "TreeNode", "TreeProblem"]

KIND_POD_GROUP = "PodGroup"
KIND_COMPOSITE = "CompositePodGroup"
PENDING = "pending"
INVALID = "invalid"
ONE_WORKLOAD_RULE = "one_workload_per_tree"


@dataclass
class TreeNode:
    """A group of a tree: a leaf PodGroup (``group`` set) or a CompositePodGroup (``composite`` set, ``children``)."""

    kind: str
    key: str
    min_count: int | None  # minCount of a gang PodGroup, minGroupCount of a gang CompositePodGroup; None: basic
    group: GroupInfo | None = None
    composite: CompositePodGroup | None = None
    children: list[TreeNode] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.key.partition("/")[2]

    @property
    def topology_key(self) -> str | None:
        """A CompositePodGroup's ``schedulingConstraints.topology[0].key``."""
        spec = self.composite.spec if self.composite is not None else None
        constraints = spec.scheduling_constraints if spec is not None else None
        return constraints.topology[0].key if constraints is not None and constraints.topology else None

    def walk(self) -> Iterator[TreeNode]:
        yield self
        for child in self.children:
            yield from child.walk()

    def leaves(self) -> Iterator[TreeNode]:
        return (n for n in self.walk() if n.group is not None)


@dataclass(frozen=True)
class TreeProblem:
    """A tree that cannot be scheduled now: ``pending`` (a parent is missing) or ``invalid`` (``message`` says
    why); ``groups`` are the (kind, key) of the groups it concerns."""

    kind: str
    message: str
    groups: tuple[tuple[str, str], ...]
    rule: str | None = None  # the beyond-upstream rule (a ``Rules`` field name) that found the problem, if any


def _parent(obj: object) -> str | None:
    spec = getattr(obj, "spec", None)
    return getattr(spec, "parent_composite_pod_group_name", None) if spec is not None else None


def _workload(obj: object) -> str | None:
    spec = getattr(obj, "spec", None)
    ref = getattr(spec, "workload_ref", None) if spec is not None else None
    return ref.workload_name if ref is not None and ref.workload_name else None


class CompositeGroups:
    """CompositePodGroups by key, their CompositePodGroupScheduled conditions, and tree resolution over them and
    the engine's PodGroups."""

    def __init__(self, groups: PodGroups, rules: Rules = RULES, enabled: bool = True) -> None:
        self.groups = groups
        self.rules = rules
        # off (Release.composite_trees, the CompositePodGroup gate): parents are ignored, every PodGroup is its own unit
        self.enabled = enabled
        self.composites: dict[str, CompositePodGroup] = {}
        self.conditions: dict[str, o.GroupCondition] = {}
        self._children: dict[str, list[tuple[str, str]]] | None = None  # parent key -> (kind, key), cached
        self._units: dict[str, str | None] = {}  # PodGroup key -> victim unit above it, cached

    def add(self, cpg: CompositePodGroup) -> str:
        key = pod_key(cpg.metadata.namespace, cpg.metadata.name)
        self.composites[key] = cpg
        for cond in cpg.status.conditions:
            if cond.type == o.CONDITION_COMPOSITE_SCHEDULED:
                condition = o.GroupCondition(cond.status, cond.reason, cond.message, cond.type)
                write_condition(self.conditions, key, condition)  # a late watch event does not regress True
        self.changed()
        return key

    def remove(self, key: str) -> CompositePodGroup | None:
        self.conditions.pop(key, None)
        self.changed()
        return self.composites.pop(key, None)

    def changed(self) -> None:
        """A PodGroup or CompositePodGroup came or went: the children index is rebuilt on next use."""
        self._children = None
        self._units = {}

    def in_tree(self, group: GroupInfo) -> bool:
        """Whether the PodGroup belongs to a tree (names a parent) and trees are on."""
        return self.enabled and self.groups.enabled and bool(_parent(group.pod_group))

    # --- resolution ----------------------------------------------------------------------------------------------

    def resolve(self, group: GroupInfo) -> TreeNode | TreeProblem:
        """The tree ``group`` belongs to, from its root, or why it cannot be scheduled."""
        ns = group.pod_group.metadata.namespace
        path: list[tuple[str, str]] = [(KIND_POD_GROUP, group.key)]
        seen: set[str] = set()
        parent = _parent(group.pod_group)
        while parent:
            key = pod_key(ns, parent)
            if key in seen:
                names = " -> ".join(k.partition("/")[2] for kind, k in path if kind == KIND_COMPOSITE)
                message = (
                    f"invalid group hierarchy: cycle of parentCompositePodGroupName references: {names} -> {parent}"
                )
                return TreeProblem(INVALID, message, tuple(path))
            cpg = self.composites.get(key)
            if cpg is None:
                message = f'waiting for pod\'s composite pod group "{parent}" to appear in scheduling queue'
                return TreeProblem(PENDING, message, tuple(path))
            seen.add(key)
            path.append((KIND_COMPOSITE, key))
            parent = _parent(cpg)
        root_kind, root_key = path[-1]
        root = self._build(root_kind, root_key, 1)
        problem = self._check(root)
        return problem if problem is not None else root

    def _index(self) -> dict[str, list[tuple[str, str]]]:
        if self._children is None:
            children: dict[str, list[tuple[tuple[str, str, str], tuple[str, str]]]] = {}
            objects: list[tuple[str, str, object]] = [(KIND_COMPOSITE, k, c) for k, c in self.composites.items()]
            objects += [(KIND_POD_GROUP, k, g.pod_group) for k, g in self.groups.groups.items()]
            for kind, key, obj in objects:
                parent = _parent(obj)
                if not parent:
                    continue
                meta = getattr(obj, "metadata")  # noqa: B009 - PodGroup and CompositePodGroup share the field
                created = meta.creation_timestamp.isoformat() if meta.creation_timestamp is not None else ""
                order = (created, meta.name, kind)
                children.setdefault(pod_key(meta.namespace, parent), []).append((order, (kind, key)))
            self._children = {k: [kv for _, kv in sorted(v)] for k, v in children.items()}
        return self._children

    def _build(self, kind: str, key: str, depth: int) -> TreeNode:
        if kind == KIND_POD_GROUP:
            group = self.groups.groups[key]
            return TreeNode(kind, key, group.min_count, group=group)
        cpg = self.composites[key]
        policy = cpg.spec.scheduling_policy if cpg.spec is not None else None
        gang = policy.gang if policy is not None else None
        node = TreeNode(kind, key, gang.min_group_count if gang is not None else None, composite=cpg)
        if depth <= MAX_TREE_DEPTH:  # deeper trees are reported invalid; stop building them
            node.children = [self._build(k, c, depth + 1) for k, c in self._index().get(key, [])]
        else:
            node.children = [TreeNode(KIND_COMPOSITE, "", None)]  # a marker: depth exceeded below this node
        return node

    def _check(self, root: TreeNode) -> TreeProblem | None:
        groups = tuple((n.kind, n.key) for n in root.walk() if n.key)
        depth = _depth(root)
        if depth > MAX_TREE_DEPTH:
            message = f"invalid group hierarchy: depth exceeds the maximum of {MAX_TREE_DEPTH}"
            return TreeProblem(INVALID, message, groups)
        if not self.rules.one_workload_per_tree:
            return None
        workloads = sorted({w for n in root.walk() if (w := _workload(n.group.pod_group if n.group else n.composite))})
        if len(workloads) > 1:
            message = f"invalid group hierarchy: groups reference more than one Workload: {', '.join(workloads)}"
            return TreeProblem(INVALID, message, groups, rule=ONE_WORKLOAD_RULE)
        return None

    # --- questions the queue and cycles ask -------------------------------------------------------------------------

    def admissible(self, node: TreeNode) -> bool:
        """GangScheduling's PreEnqueue over a tree: a leaf has at least minCount (basic: one) non-terminal pods, a
        CompositePodGroup at least minGroupCount (basic: one) admissible children."""
        if node.group is not None:
            return len(self.groups.members_of(node.key)) >= (node.min_count or 1)
        return sum(1 for c in node.children if self.admissible(c)) >= (node.min_count or 1)

    # --- victim units (groups.TreeUnits) ---------------------------------------------------------------------------

    def unit_above(self, key: str) -> str | None:
        """v1.37: a pod's victim unit is its highest ancestor with disruptionMode ``all``; the key is
        ``CompositePodGroup:<namespace>/<name>``."""
        if key not in self._units:
            self._units[key] = self._climb(key) if self.enabled else None
        return self._units[key]

    def _climb(self, key: str) -> str | None:
        group = self.groups.groups.get(key)
        if group is None:
            return None
        ns, parent, found, seen = group.pod_group.metadata.namespace, _parent(group.pod_group), None, set()
        while parent and pod_key(ns, parent) not in seen:
            cpg_key = pod_key(ns, parent)
            seen.add(cpg_key)
            if cpg_key not in self.composites:
                break
            if self.disrupts_together(cpg_key):
                found = f"{KIND_COMPOSITE}:{cpg_key}"
            parent = _parent(self.composites[cpg_key])
        return found

    def unit_members(self, unit: str) -> set[str]:
        """Every non-terminal pod of the PodGroups under the unit's CompositePodGroup."""
        key = unit.partition(":")[2]
        if key not in self.composites:
            return set()
        root = self._build(KIND_COMPOSITE, key, 1)
        return {m for leaf in root.leaves() if leaf.key for m in self.groups.members_of(leaf.key)}

    def unit_priority(self, unit: str) -> int:
        cpg = self.composites.get(unit.partition(":")[2])
        spec = cpg.spec if cpg is not None else None
        if spec is None:
            return self.groups.priorities.resolve(None, "")
        return self.groups.priorities.resolve(spec.priority, spec.priority_class_name)

    def disrupts_together(self, key: str) -> bool:
        cpg = self.composites.get(key)
        return cpg is not None and cpg.spec is not None and disrupts_together(cpg.spec.disruption_mode)

    def set_condition(self, key: str, condition: o.GroupCondition) -> bool:
        """Write CompositePodGroupScheduled; a True condition is never regressed. Whether it was written."""
        return write_condition(self.conditions, key, condition)


def _depth(node: TreeNode) -> int:
    return 1 + max((_depth(c) for c in node.children), default=0)
