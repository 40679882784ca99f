"""Seeded random cluster snapshots for the differential conformance run: small clusters (2-6 nodes) with enough
contention that the scheduler's rules decide the outcome, written as valid Kubernetes objects that kube-apiserver
v1.36 accepts.

Each snapshot is built from ``(seed, index)`` alone, so any one can be regenerated (``generate(seed, i)``). Every
snapshot has one *primary* feature, in turn, so each feature appears in every stretch of ``len(FEATURES)``
snapshots, and up to two more drawn at random:

  resources       cpu, memory and an extended resource (example.com/gpu) in requests, some nodes without it
  taints          NoSchedule / PreferNoSchedule / NoExecute taints and Equal / Exists tolerations
  nodeaffinity    nodeSelector, required (In, NotIn, Exists, Gt) and preferred node affinity
  spread          topologySpreadConstraints over zone and hostname, DoNotSchedule and ScheduleAnyway, minDomains
  podaffinity     required and preferred pod affinity and anti-affinity, hostname and zone
  preemption      PriorityClasses, lower-priority pods filling the nodes, PodDisruptionBudgets over them
  gang            gang PodGroups (minCount <= members)
  basic           basic-policy PodGroups
  topology        gangs with one topology constraint (a rack label)
  wap             workload-aware preemption: a high-priority gang against running lower-priority pods and gangs
                  (disruptionMode Pod and PodGroup)
  dra             DeviceClasses, ResourceSlices, claim templates and shared claims with CEL selectors over
                  attributes and capacities
  composite       (the v1.37 corpus only) CompositePodGroup trees: a root needing minGroupCount of its 2-3 gang
                  children, sometimes in one rack, with the v1alpha3 Workload whose templates they come from

The v1.37 corpus (``release="1.37"``) has the twelve features, its own random stream and names
``random-v137-<seed>-<index>-<features>``; the v1.36 corpus is unchanged by it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = ["FEATURES", "FEATURES_V137", "corpus", "generate"]

FEATURES = (
    "resources",
    "taints",
    "nodeaffinity",
    "spread",
    "podaffinity",
    "preemption",
    "gang",
    "basic",
    "topology",
    "wap",
    "dra",
)
FEATURES_V137 = (*FEATURES, "composite")
GPU = "example.com/gpu"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "topology.example.com/rack"
DRIVER = "gpu.example.com"
PRIORITIES = {"low": 10, "mid": 100, "high": 1000}


@dataclass
class _Node:
    name: str
    cpu: int  # millicores
    memory: int  # MiB
    gpus: int
    pods: int
    labels: dict[str, str]
    taints: list[dict[str, str]] = field(default_factory=list)
    used_cpu: int = 0
    used_memory: int = 0
    used_gpus: int = 0
    used_pods: int = 0
    devices: list[dict[str, Any]] = field(default_factory=list)

    def fits(self, cpu: int, memory: int, gpus: int) -> bool:
        return (
            self.used_cpu + cpu <= self.cpu
            and self.used_memory + memory <= self.memory
            and self.used_gpus + gpus <= self.gpus
            and self.used_pods < self.pods
        )

    def take(self, cpu: int, memory: int, gpus: int) -> None:
        self.used_cpu += cpu
        self.used_memory += memory
        self.used_gpus += gpus
        self.used_pods += 1


class _Builder:
    """One snapshot under construction: its random source, nodes, and the objects made so far."""

    def __init__(self, rng: random.Random, features: set[str]) -> None:
        self.rng = rng
        self.features = features
        self.objects: list[dict[str, Any]] = []
        self.nodes: list[_Node] = []
        self.apps = ["web", "db", "cache", "batch"]
        self.serial = 0

    def name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial}"

    # --- nodes -------------------------------------------------------------------------------------------------

    def make_nodes(self) -> None:
        count = self.rng.randint(2, 6)
        zones = self.rng.randint(1, 3)
        racks = self.rng.randint(2, 3)
        identical = self.rng.random() < 0.25  # identical nodes make ties: both schedulers must agree anyway
        shape = self._node_shape()
        for i in range(count):
            cpu, memory, gpus, pods = shape if identical else self._node_shape()
            labels = {HOST: f"n{i}", ZONE: f"zone-{i % zones}", RACK: f"rack-{i % racks}"}
            if self.rng.random() < 0.5:
                labels["disk"] = self.rng.choice(["ssd", "hdd"])
            labels["cores"] = str(cpu // 1000)
            if "nodeaffinity" not in self.features and self.rng.random() < 0.3:
                del labels[ZONE]  # a node missing the zone label: spread and affinity must say so
            self.nodes.append(_Node(f"n{i}", cpu, memory, gpus, pods, labels))
        if "taints" in self.features:
            for node in self.nodes:
                if self.rng.random() < 0.6:
                    effect = self.rng.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"])
                    node.taints.append({"key": self.rng.choice(["dedicated", "gpu"]), "value": "yes", "effect": effect})

    def _node_shape(self) -> tuple[int, int, int, int]:
        cpu = self.rng.choice([2000, 4000, 4000, 8000])
        memory = self.rng.choice([4096, 8192, 16384])
        gpus = self.rng.choice([0, 2, 4]) if "resources" in self.features or "wap" in self.features else 0
        pods = self.rng.choice([110, 110, 110, 4])
        return cpu, memory, gpus, pods

    def node_objects(self) -> None:
        for n in self.nodes:
            alloc = {"cpu": f"{n.cpu}m", "memory": f"{n.memory}Mi", "pods": str(n.pods)}
            if n.gpus:
                alloc[GPU] = str(n.gpus)
            spec: dict[str, Any] = {"taints": n.taints} if n.taints else {}
            if self.rng.random() < 0.05 and "taints" in self.features:
                spec["unschedulable"] = True
            self.objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": n.name, "labels": n.labels},
                    "spec": spec,
                    "status": {"capacity": alloc, "allocatable": alloc},
                }
            )

    # --- pods --------------------------------------------------------------------------------------------------

    def requests(self, big: bool = False) -> tuple[int, int, int]:
        cpu = self.rng.choice([100, 250, 500, 1000, 1000, 2000] + ([3000, 4000] if big else []))
        memory = self.rng.choice([128, 256, 512, 1024, 2048] + ([4096] if big else []))
        gpus = self.rng.choice([0, 0, 1, 2]) if any(n.gpus for n in self.nodes) else 0
        return cpu, memory, gpus

    def pod(
        self,
        name: str,
        req: tuple[int, int, int],
        node: str | None = None,
        priority: str | None = None,
        group: str | None = None,
        app: str | None = None,
    ) -> dict[str, Any]:
        cpu, memory, gpus = req
        res: dict[str, Any] = {"requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}}
        if gpus:
            res["requests"][GPU] = str(gpus)
            res["limits"] = {GPU: str(gpus)}
        spec: dict[str, Any] = {
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": res}]
        }
        if node:
            spec["nodeName"] = node
        if priority:
            spec["priorityClassName"] = priority
        if group:
            spec["schedulingGroup"] = {"podGroupName": group}
        app = app or self.rng.choice(self.apps)
        meta = {"name": name, "namespace": "default", "labels": {"app": app}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if not node:
            self._constraints(pod)
        self.objects.append(pod)
        return pod

    def _constraints(self, pod: dict[str, Any]) -> None:
        """Scheduling constraints of the snapshot's features, drawn per pending pod."""
        for feature, add in self._CONSTRAINTS.items():
            if feature in self.features and self.rng.random() < 0.7:
                add(self, pod)

    def _tolerations(self, pod: dict[str, Any]) -> None:
        tol = []
        for key in self.rng.sample(["dedicated", "gpu"], self.rng.randint(1, 2)):
            if self.rng.random() < 0.5:
                tol.append({"key": key, "operator": "Exists"})
            else:
                t = {"key": key, "operator": "Equal", "value": self.rng.choice(["yes", "no"])}
                if self.rng.random() < 0.5:
                    t["effect"] = self.rng.choice(["NoSchedule", "NoExecute"])
                tol.append(t)
        pod["spec"]["tolerations"] = tol

    def _node_affinity(self, pod: dict[str, Any]) -> None:
        spec = pod["spec"]
        choice = self.rng.random()
        if choice < 0.3:
            spec["nodeSelector"] = {"disk": self.rng.choice(["ssd", "hdd"])}
            return
        exprs = [
            {"key": "disk", "operator": "In", "values": [self.rng.choice(["ssd", "hdd"])]},
            {"key": ZONE, "operator": "NotIn", "values": ["zone-0"]},
            {"key": "disk", "operator": "Exists"},
            {"key": "cores", "operator": "Gt", "values": [self.rng.choice(["2", "4"])]},
        ]
        affinity: dict[str, Any] = {}
        if choice < 0.7:
            term = {"matchExpressions": self.rng.sample(exprs, self.rng.randint(1, 2))}
            affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
        if choice >= 0.5:
            prefs = [
                {"weight": self.rng.randint(1, 100), "preference": {"matchExpressions": [e]}}
                for e in self.rng.sample(exprs, self.rng.randint(1, 2))
            ]
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = prefs
        spec.setdefault("affinity", {})["nodeAffinity"] = affinity

    def _spread(self, pod: dict[str, Any]) -> None:
        app = pod["metadata"]["labels"]["app"]
        c: dict[str, Any] = {
            "maxSkew": self.rng.choice([1, 1, 2]),
            "topologyKey": self.rng.choice([ZONE, HOST]),
            "whenUnsatisfiable": self.rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": app}},
        }
        if c["whenUnsatisfiable"] == "DoNotSchedule" and self.rng.random() < 0.2:
            c["minDomains"] = self.rng.randint(2, 4)
        pod["spec"]["topologySpreadConstraints"] = [c]

    def _pod_affinity(self, pod: dict[str, Any]) -> None:
        target = self.rng.choice(self.apps)
        term = {"labelSelector": {"matchLabels": {"app": target}}, "topologyKey": self.rng.choice([HOST, ZONE])}
        kind = self.rng.choice(["podAffinity", "podAntiAffinity"])
        if self.rng.random() < 0.5:
            rule: dict[str, Any] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        else:
            rule = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": self.rng.randint(1, 100), "podAffinityTerm": term}
                ]
            }
        pod["spec"].setdefault("affinity", {})[kind] = rule

    _CONSTRAINTS: ClassVar[dict[str, Callable[[_Builder, dict[str, Any]], None]]] = {
        "taints": _tolerations,
        "nodeaffinity": _node_affinity,
        "spread": _spread,
        "podaffinity": _pod_affinity,
    }

    def place(self, req: tuple[int, int, int]) -> _Node | None:
        """A node a bound pod of this size fits on (as a scheduler would have left it), or None."""
        fitting = [n for n in self.nodes if n.fits(*req)]
        if not fitting:
            return None
        node = self.rng.choice(fitting)
        node.take(*req)
        return node

    # --- bound pods ----------------------------------------------------------------------------------------------

    def running(self, count: int, priority: str | None = None) -> list[dict[str, Any]]:
        pods = []
        for _ in range(count):
            req = self.requests(big=True)
            node = self.place(req)
            if node is None:
                continue
            pods.append(self.pod(self.name("run"), req, node.name, priority))
        return pods

    # --- priorities, PDBs --------------------------------------------------------------------------------------

    def priority_classes(self) -> None:
        for name, value in PRIORITIES.items():
            self.objects.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )
        self.objects.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high-never"},
                "value": PRIORITIES["high"],
                "preemptionPolicy": "Never",
            }
        )

    def pdb(self, app: str) -> None:
        spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}}
        if self.rng.random() < 0.7:
            spec["minAvailable"] = self.rng.randint(0, 2)
        else:
            spec["maxUnavailable"] = self.rng.randint(0, 1)
        meta = {"name": f"pdb-{app}", "namespace": "default"}
        self.objects.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec})

    # --- PodGroups ---------------------------------------------------------------------------------------------

    def pod_group(
        self,
        name: str,
        min_count: int | None,
        priority: str | None = None,
        topology: bool = False,
        disruption: str | None = None,
        claims: list[dict[str, str]] | None = None,
    ) -> None:
        policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
        spec: dict[str, Any] = {"schedulingPolicy": policy}
        if priority:
            spec["priorityClassName"] = priority
        if topology:
            spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
        if disruption:
            spec["disruptionMode"] = disruption
        if claims:
            spec["resourceClaims"] = claims
        meta = {"name": name, "namespace": "default"}
        self.objects.append(
            {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": meta, "spec": spec}
        )

    def group(self, gang: bool, priority: str | None = None, topology: bool = False) -> None:
        name = self.name("gang" if gang else "basic")
        members = self.rng.randint(2, 4)
        min_count = self.rng.randint(1, members) if gang else None
        self.pod_group(name, min_count, priority, topology)
        req = self.requests()
        for j in range(members):
            self.pod(f"{name}-{j}", req, priority=priority, group=name, app=name)

    def composite(self, priority: str | None = None) -> None:
        """A CompositePodGroup tree as v1.37 writes one: the root (minGroupCount of its children), 2-3 gang
        PodGroups naming it as their parent, and the v1alpha3 Workload holding the templates both refer to."""
        rng = self.rng
        root = self.name("tree")
        children = rng.randint(2, 3)
        need = rng.randint(1, children)
        rack = rng.random() < 0.3 and any(RACK in n.labels for n in self.nodes)
        templates = []
        for c in range(children):
            child, members = f"{root}-{c}", rng.randint(1, 3)
            policy = {"gang": {"minCount": rng.randint(1, members)}}
            child_template: dict[str, Any] = {"name": f"child-{c}", "schedulingPolicy": policy}
            if priority:  # a Workload's templates must all name the same priority (v1.37 validation)
                child_template["priorityClassName"] = priority
            templates.append(child_template)
            spec: dict[str, Any] = {
                "parentCompositePodGroupName": root,
                "workloadRef": {"workloadName": root, "templateName": f"child-{c}"},
                "schedulingPolicy": policy,
            }
            if priority:
                spec["priorityClassName"] = priority
            meta = {"name": child, "namespace": "default"}
            self.objects.append(
                {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec}
            )
            req = self.requests()
            for j in range(members):
                self.pod(f"{child}-{j}", req, priority=priority, group=child, app=root)
        root_policy = {"gang": {"minGroupCount": need}}
        template: dict[str, Any] = {"name": "root", "schedulingPolicy": root_policy, "podGroupTemplates": templates}
        root_spec: dict[str, Any] = {
            "workloadRef": {"workloadName": root, "templateName": "root"},
            "schedulingPolicy": root_policy,
        }
        if rack:
            template["schedulingConstraints"] = root_spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
        if priority:
            template["priorityClassName"] = root_spec["priorityClassName"] = priority
        meta = {"name": root, "namespace": "default"}
        workload = {"compositePodGroupTemplates": [template]}
        self.objects.append(
            {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload", "metadata": meta, "spec": workload}
        )
        self.objects.append(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha3",
                "kind": "CompositePodGroup",
                "metadata": meta,
                "spec": root_spec,
            }
        )

    # --- DRA ---------------------------------------------------------------------------------------------------

    def dra(self) -> None:
        self.objects.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
            }
        )
        for n in self.nodes:
            count = self.rng.choice([0, 1, 2, 4])
            if not count:
                continue
            model = self.rng.choice(["a100", "h100"])
            devices = [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"model": {"string": model}, "index": {"int": i}},
                    "capacity": {"memory": {"value": "80Gi" if model == "h100" else self.rng.choice(["40Gi", "80Gi"])}},
                }
                for i in range(count)
            ]
            spec = {
                "driver": DRIVER,
                "nodeName": n.name,
                "pool": {"name": n.name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            }
            self.objects.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{n.name}-gpus"},
                    "spec": spec,
                }
            )
        for name, selectors, count in (
            ("any-gpu", [], 1),
            ("h100", [f"device.attributes['{DRIVER}'].model == 'h100'"], 1),
            ("big-gpu", [f"device.capacity['{DRIVER}'].memory.compareTo(quantity('80Gi')) >= 0"], 1),
            ("two-gpus", [f"device.attributes['{DRIVER}'].index < 3"], 2),
        ):
            exactly: dict[str, Any] = {"deviceClassName": DRIVER, "count": count}
            if selectors:
                exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
            spec = {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}
            meta = {"name": name, "namespace": "default"}
            self.objects.append(
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": meta, "spec": spec}
            )

    def claim_pod(self, pod: dict[str, Any]) -> None:
        """Give a pending pod a claim: from a template (usually) or a shared claim."""
        if self.rng.random() < 0.8:
            template = self.rng.choice(["any-gpu", "h100", "big-gpu", "two-gpus"])
            entry = {"name": "gpu", "resourceClaimTemplateName": template}
        else:
            entry = {"name": "gpu", "resourceClaimName": "shared-gpu"}
            if not any(o["kind"] == "ResourceClaim" for o in self.objects):
                exactly = {
                    "deviceClassName": DRIVER,
                    "selectors": [{"cel": {"expression": f"device.attributes['{DRIVER}'].model == 'a100'"}}],
                }
                spec = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
                meta = {"name": "shared-gpu", "namespace": "default"}
                self.objects.append(
                    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "spec": spec}
                )
        pod["spec"]["resourceClaims"] = [entry]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]


def _build(b: _Builder) -> None:
    rng, f = b.rng, b.features
    b.make_nodes()
    b.node_objects()
    prioritised = bool(f & {"preemption", "wap"})
    if prioritised:
        b.priority_classes()
    if "dra" in f:
        b.dra()
    # The running workload: plain pods (lower priority when something may preempt them) and running gangs.
    low = "low" if prioritised else None
    running = b.running(rng.randint(0, 6), low)
    if "wap" in f:
        for mode in rng.sample(["Pod", "PodGroup"], rng.randint(1, 2)):
            name = b.name("victims")
            members = rng.randint(1, 3)
            b.pod_group(name, rng.randint(1, members), "low", disruption=mode)
            for j in range(members):
                req = b.requests(big=True)
                node = b.place(req)
                if node:
                    b.pod(f"{name}-{j}", req, node.name, "low", group=name, app=name)
    if "preemption" in f:
        apps = sorted({p["metadata"]["labels"]["app"] for p in running})
        for app in rng.sample(apps, min(len(apps), rng.randint(1, 2))):
            b.pdb(app)
    # The pending workload.
    for _ in range(rng.randint(2, 8)):
        prio = rng.choice(["mid", "high", "high-never", "low"]) if prioritised else None
        pod = b.pod(b.name("pod"), b.requests(big=True), priority=prio)
        if "dra" in f and rng.random() < 0.6:
            b.claim_pod(pod)
    for feature, gang in (("gang", True), ("basic", False)):
        if feature in f:
            for _ in range(rng.randint(1, 3)):
                b.group(gang, rng.choice(["mid", "high"]) if prioritised else None)
    if "topology" in f:
        for _ in range(rng.randint(1, 2)):
            b.group(True, topology=True)
    if "wap" in f:
        b.group(True, "high")
    if "composite" in f:
        for _ in range(rng.randint(1, 2)):
            b.composite(rng.choice(["mid", "high"]) if prioritised else None)


def generate(seed: int, index: int, release: str = "1.36") -> tuple[str, list[dict[str, Any]]]:
    """Snapshot ``index`` of the corpus of ``seed``: its name (``random-<seed>-<index>-<features>``, or
    ``random-v137-...`` in the v1.37 corpus) and objects."""
    v137 = release == "1.37"
    features_of = FEATURES_V137 if v137 else FEATURES
    rng = random.Random(f"phalanx-diffconf{'-v137' if v137 else ''}:{seed}:{index}")
    primary = features_of[index % len(features_of)]
    features = {primary, *rng.sample(features_of, rng.randint(0, 2))}
    b = _Builder(rng, features)
    _build(b)
    prefix = "random-v137" if v137 else "random"
    name = f"{prefix}-{seed}-{index:04d}-" + "+".join(f for f in features_of if f in features)
    return name, b.objects


def corpus(seed: int, count: int, start: int = 0, release: str = "1.36") -> list[tuple[str, list[dict[str, Any]]]]:
    return [generate(seed, i, release) for i in range(start, start + count)]
