"""Tree jobs of a simulate trace: one job that is a CompositePodGroup (v1.37, ``scheduling.k8s.io/v1alpha3``) with
child PodGroups, as disaggregated inference is (prefill and decode groups, each in one rack, the whole in one
block). docs/simulate.md ("Tree jobs") has the YAML fields.

A tree job's objects are made as a v1.37 workload controller leaves them for the scheduler: the root
CompositePodGroup (``minGroupCount``, ``disruptionMode: all``, the job's topology as
``schedulingConstraints.topology``), one gang PodGroup per child (``minCount``, its own topology) naming the root as
``parentCompositePodGroupName``, all referring to one Workload, and each child's pods. The simulator runs the job as
one unit: it starts once the root is satisfied, and an eviction or failure of any pod restarts all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import msgspec

from phalanx.api.errors import FieldError
from phalanx.api.models import CompositePodGroup, Pod, PodGroup, Toleration
from phalanx.api.validation import fields as f
from phalanx.api.validation import validate_composite_pod_group, validate_pod, validate_pod_group
from phalanx.sim.cluster_spec import GPU
from phalanx.sim.inputs import REQUIRED, Fields

__all__ = [
    "GROUP_FIELDS",
    "TREE_FIELDS",
    "TreeGroup",
    "TreeRecord",
    "check_tree",
    "parse_tree",
    "tree_objects",
    "tree_satisfied",
]

NAMESPACE = "sim"
_T = TypeVar("_T")
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
TREE_FIELDS = ("groups", "minGroupCount")  # YAML job fields beyond the CSV columns
GROUP_FIELDS = ("name", "pods", "cpu", "memory", "gpus", "minCount", "topology")
# Job columns a tree job cannot have: its pods are its groups', and DRA claims are not expressible for trees yet.
_NOT_WITH_GROUPS = ("pods", "minCount", "dra", "deviceClass", "gpuProduct", "gpuSelector", "matchAttribute")
MAX_GROUPS = 8  # v1.37: at most 8 children per list


@dataclass(frozen=True)
class TreeGroup:
    """One child PodGroup: ``pods`` identical pods, satisfied by ``min_count`` of them bound (0: all)."""

    name: str
    pods: int
    cpu: str = "1"
    memory: str = "4Gi"
    gpus: int = 0
    min_count: int = 0
    topology: str = ""  # a label key: the group's pods share one domain of it ("" none)

    @property
    def gang(self) -> int:
        return self.min_count or self.pods


@dataclass(frozen=True)
class TreeRecord:
    """The root CompositePodGroup: satisfied by ``min_group_count`` satisfied groups (0: all)."""

    groups: tuple[TreeGroup, ...]
    min_group_count: int = 0
    topology: str = ""  # a label key: the whole tree in one domain of it

    @property
    def needed(self) -> int:
        return self.min_group_count or len(self.groups)


# --- reading -------------------------------------------------------------------------------------------------------


def parse_tree(
    values: Mapping[str, Any], prefix: str, fields: Fields, defaults: tuple[str, str, int], topology: str
) -> TreeRecord:
    """The ``groups`` and ``minGroupCount`` of a YAML job at ``prefix`` (``jobs[3].``). ``defaults`` are the job's
    (cpu, memory, gpus), which a group inherits; ``topology`` is the job's already-read column. Problems go to
    ``fields``."""
    for column in _NOT_WITH_GROUPS:
        if column in values:
            fields.add(FieldError(prefix + column, "Forbidden: not allowed in a job with `groups`"))
    raw = fields.items(values.get("groups"), prefix + "groups")
    if not raw:
        fields.add(FieldError.required(prefix + "groups", "a tree job has at least one group"))
    elif len(raw) > MAX_GROUPS:
        fields.add(FieldError(prefix + "groups", f"Too many: {len(raw)}: must have at most {MAX_GROUPS} items"))
    groups = tuple(_group(item, f"{prefix}groups[{k}]", fields, defaults) for k, item in enumerate(raw))
    seen: set[str] = set()
    for k, group in enumerate(groups):
        if group.name in seen:
            fields.add(FieldError.duplicate(f"{prefix}groups[{k}].name", group.name))
        seen.add(group.name)
    high = max(len(groups), 1)
    needed = fields.integer(values.get("minGroupCount"), prefix + "minGroupCount", 0, high=high)
    return TreeRecord(groups, needed, _key(topology, prefix + "topology", fields))


def _group(raw: Any, path: str, fields: Fields, defaults: tuple[str, str, int]) -> TreeGroup:
    v = fields.mapping(raw, path, GROUP_FIELDS)
    cpu, memory, gpus = defaults
    pods = fields.integer(v.get("pods"), path + ".pods", REQUIRED, low=1, high=10_000)
    name = fields.text(v.get("name"), path + ".name", REQUIRED)
    for err in f.dns_label(path + ".name", name) if name else []:
        fields.add(err)
    return TreeGroup(
        name=name,
        pods=pods,
        cpu=fields.text(v.get("cpu"), path + ".cpu", cpu),
        memory=fields.text(v.get("memory"), path + ".memory", memory),
        gpus=fields.integer(v.get("gpus"), path + ".gpus", gpus),
        min_count=fields.integer(v.get("minCount"), path + ".minCount", 0, high=pods),
        topology=_key(fields.text(v.get("topology"), path + ".topology", ""), path + ".topology", fields),
    )


def _key(topology: str, path: str, fields: Fields) -> str:
    """``required:<label key>`` -> the key. A tree's groups take v1.37's ``schedulingConstraints.topology``, a
    hard constraint: ``preferred`` has no meaning there."""
    if not topology:
        return ""
    mode, sep, key = topology.partition(":")
    if not sep or mode != "required" or not key:
        detail = "must be required:<label key> in a job with `groups` (v1.37 schedulingConstraints.topology)"
        fields.invalid(path, topology, detail)
        return ""
    return key


def check_tree(name: str, tree: TreeRecord, priority: int, prefix: str, fields: Fields) -> None:
    """The problems of the objects a valid tree becomes (names too long, bad quantities...), each at the trace
    field it comes from; and the tree's groups must ask the same GPUs per pod (the metrics count a job's GPUs as
    pods x gpus)."""
    if len({g.gpus for g in tree.groups}) > 1:
        detail = "every group of a tree asks the same gpus per pod"
        for k, g in enumerate(tree.groups):
            if g.gpus != tree.groups[0].gpus:
                fields.invalid(f"{prefix}groups[{k}].gpus", g.gpus, detail)
    root, groups, pods = tree_objects(name, tree, priority, gang=True, topology=True)
    assert root is not None
    for err in validate_composite_pod_group(root):
        column = "topology" if "schedulingConstraints" in err.path else "name"
        fields.add(FieldError(prefix + column, err.message))
    for k, group in enumerate(groups):
        at = f"{prefix}groups[{k}]."
        for err in validate_pod_group(group):
            column = "topology" if "schedulingConstraints" in err.path else "name"
            fields.add(FieldError(at + column, err.message))
    first = 0
    for k, tg in enumerate(tree.groups):  # one pod per group: the others differ only in name
        for err in validate_pod(pods[first]):
            fields.add(FieldError(f"{prefix}groups[{k}].{_pod_column(err.path)}", err.message))
        first += tg.pods


def _pod_column(path: str) -> str:
    for resource, column in (("[cpu]", "cpu"), ("[memory]", "memory"), (f"[{GPU}]", "gpus")):
        if resource in path:
            return column
    return "name"


# --- objects -------------------------------------------------------------------------------------------------------


def tree_objects(
    job: str,
    tree: TreeRecord,
    priority: int,
    gang: bool,
    topology: bool,
    tolerations: Sequence[Toleration] = (),
    submit: float = 0.0,
) -> tuple[CompositePodGroup | None, list[PodGroup], list[Pod]]:
    """The CompositePodGroup, PodGroups and pods of one attempt named ``job``. Without ``gang`` (pod-by-pod) there
    are no groups and the pods are scheduled one by one; without ``topology`` the constraints are left out, as a
    flat job's topology column is outside ``gang-tas``."""
    ref = {"workloadName": job, "templateName": job}
    created = _EPOCH + timedelta(seconds=submit)
    root_spec: dict[str, Any] = {
        "workloadRef": ref,
        "schedulingPolicy": {"gang": {"minGroupCount": tree.needed}},
        "disruptionMode": {"all": {}},  # the job restarts as a whole: evict it as one unit
        "priority": priority,
    }
    if topology and tree.topology:
        root_spec["schedulingConstraints"] = {"topology": [{"key": tree.topology}]}
    root = _convert({"metadata": _meta(job, created), "spec": root_spec}, CompositePodGroup)
    groups: list[PodGroup] = []
    pods: list[Pod] = []
    for k, tg in enumerate(tree.groups):
        name = f"{job}-{tg.name}"
        spec: dict[str, Any] = {
            "parentCompositePodGroupName": job,
            "workloadRef": ref,
            "schedulingPolicy": {"gang": {"minCount": tg.gang}},
            "priority": priority,
        }
        if topology and tg.topology:
            spec["schedulingConstraints"] = {"topology": [{"key": tg.topology}]}
        # Children are evaluated in creation order: the trace's order, a millisecond apart.
        groups.append(_convert({"metadata": _meta(name, created + timedelta(milliseconds=k)), "spec": spec}, PodGroup))
        for p in range(tg.pods):
            pods.append(_pod(f"{name}-{p}", name if gang else None, tg, priority, tolerations, created, len(pods)))
    return (root if gang else None), (groups if gang else []), pods


def _meta(name: str, created: datetime) -> dict[str, Any]:
    return {"name": name, "namespace": NAMESPACE, "creationTimestamp": created.isoformat().replace("+00:00", "Z")}


def _pod(
    name: str,
    group: str | None,
    tg: TreeGroup,
    priority: int,
    tolerations: Sequence[Toleration],
    created: datetime,
    index: int,
) -> Pod:
    requests: dict[str, Any] = {"cpu": tg.cpu, "memory": tg.memory}
    limits: dict[str, Any] = {}
    if tg.gpus:
        requests[GPU] = limits[GPU] = str(tg.gpus)
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": requests, "limits": limits}}],
        "priority": priority,
        "tolerations": [msgspec.to_builtins(t) for t in tolerations],
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    meta = _meta(name, created + timedelta(milliseconds=index))
    return _convert({"metadata": meta, "spec": spec}, Pod)


def _convert(body: dict[str, Any], kind: type[_T]) -> _T:
    return msgspec.convert(body, kind)


# --- running -------------------------------------------------------------------------------------------------------


def tree_satisfied(tree: TreeRecord, pods: Sequence[str], node_of: Callable[[str], str | None]) -> bool:
    """Whether the root is satisfied by the bound pods (``pods``: the attempt's pod keys, in group order): at least
    ``min_group_count`` groups with at least ``min_count`` pods bound."""
    satisfied, first = 0, 0
    for tg in tree.groups:
        bound = sum(1 for key in pods[first : first + tg.pods] if node_of(key) is not None)
        satisfied += bound >= tg.gang
        first += tg.pods
    return satisfied >= tree.needed
