"""Scheduler configuration: a KubeSchedulerConfiguration-shaped YAML (``kubescheduler.config.k8s.io/v1``) turned
into profiles. Unknown plugin names and malformed arguments are input errors."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import yaml

from phalanx.api.errors import InputError
from phalanx.api.models import NodeAffinity as NodeAffinitySpec
from phalanx.scheduling.plugins import gpu_share, inter_pod_affinity, pod_topology_spread
from phalanx.scheduling.plugins.node_affinity import NodeAffinityArgs
from phalanx.scheduling.plugins.node_resources_balanced_allocation import BalancedAllocationArgs
from phalanx.scheduling.plugins.node_resources_fit import STRATEGIES, NodeResourcesFitArgs
from phalanx.scheduling.plugins.registry import (
    DEFAULT_PLACEMENT_SCORES,
    DEFAULT_PLUGINS,
    NOT_MODELLED,
    PLACEMENT_GENERATORS,
    PLACEMENT_SCORERS,
    POST_FILTER_PLUGINS,
    QUEUE_AND_GATE_PLUGINS,
    REGISTRY,
)
from phalanx.scheduling.plugins.resource_allocation import ResourceSpec, ShapePoint
from phalanx.scheduling.profile import Profile

__all__ = ["DEFAULT_SCHEDULER_NAME", "ProfileConfig", "SchedulerConfig", "TopologyArgs", "load_config"]

DEFAULT_SCHEDULER_NAME = "default-scheduler"
_POINTS = (
    "placementGenerate",
    "placementScore",
    "queueSort",
    "preEnqueue",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
)
_KNOWN = (
    set(REGISTRY)
    | NOT_MODELLED
    | QUEUE_AND_GATE_PLUGINS
    | POST_FILTER_PLUGINS
    | PLACEMENT_GENERATORS
    | PLACEMENT_SCORERS
)


@dataclass
class ProfileConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    filters: list[str] = field(default_factory=list)
    scores: list[tuple[str, int]] = field(default_factory=list)
    args: dict[str, Any] = field(default_factory=dict)
    gang: bool = True
    preemption: bool = True
    placement_generators: list[str] = field(default_factory=lambda: sorted(PLACEMENT_GENERATORS))
    placement_scores: list[tuple[str, int]] = field(default_factory=lambda: list(DEFAULT_PLACEMENT_SCORES))

    def build(self, seed: int = 0) -> Profile:
        instances: dict[str, Any] = {}

        def get(name: str) -> Any:
            if name not in instances:
                instances[name] = REGISTRY[name].factory(self.args.get(name))
            return instances[name]

        fit_args = self.args.get("NodeResourcesFit") or NodeResourcesFitArgs()
        topology = self.args.get("TopologyPlacementGenerator") or TopologyArgs()
        return Profile(
            self.scheduler_name,
            [get(n) for n in self.filters],
            [(get(n), w) for n, w in self.scores],
            seed,
            tas="TopologyPlacementGenerator" in self.placement_generators,
            placement_scores=list(self.placement_scores),
            topology_levels=list(topology.levels),
            fit_resources=list(fit_args.resources),
            preemption=self.preemption,
        )


@dataclass
class SchedulerConfig:
    profiles: list[ProfileConfig] = field(default_factory=lambda: [default_profile()])
    warnings: list[str] = field(default_factory=list)


def default_profile(name: str = DEFAULT_SCHEDULER_NAME) -> ProfileConfig:
    return ProfileConfig(
        scheduler_name=name,
        filters=[n for n, _ in DEFAULT_PLUGINS if n in REGISTRY and REGISTRY[n].filter],
        scores=[(n, w) for n, w in DEFAULT_PLUGINS if n in REGISTRY and REGISTRY[n].score],
    )


def load_config(path: str) -> SchedulerConfig:
    """Read a KubeSchedulerConfiguration file. Raises InputError naming the file and the field."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError([f"{path}: cannot read scheduler configuration: {exc}"]) from exc
    return parse_config(raw, path)


def parse_config(raw: Any, path: str = "<config>") -> SchedulerConfig:
    errors: list[str] = []
    cfg = SchedulerConfig(profiles=[])
    if not isinstance(raw, dict) or raw.get("kind") != "KubeSchedulerConfiguration":
        raise InputError([f"{path}: kind: must be KubeSchedulerConfiguration"])
    profiles = raw.get("profiles") or [{}]
    if not isinstance(profiles, list):
        raise InputError([f"{path}: profiles: must be a list"])
    seen: set[str] = set()
    for i, prof in enumerate(profiles):
        where = f"{path}: profiles[{i}]"
        if not isinstance(prof, dict):
            errors.append(f"{where}: must be an object")
            continue
        pc = _profile(prof, where, errors, cfg.warnings)
        if pc.scheduler_name in seen:
            errors.append(f'{where}.schedulerName: Duplicate value: "{pc.scheduler_name}"')
        seen.add(pc.scheduler_name)
        cfg.profiles.append(pc)
    if errors:
        raise InputError(errors)
    return cfg


def _profile(prof: dict[str, Any], where: str, errors: list[str], warnings: list[str]) -> ProfileConfig:
    pc = default_profile(str(prof.get("schedulerName") or DEFAULT_SCHEDULER_NAME))
    plugins = prof.get("plugins") or {}
    if not isinstance(plugins, dict):
        errors.append(f"{where}.plugins: must be an object")
        plugins = {}
    for point, sets in plugins.items():
        if point not in _POINTS:
            errors.append(f'{where}.plugins: unknown extension point "{point}"')
            continue
        _apply(pc, point, sets or {}, f"{where}.plugins.{point}", errors, warnings)
    for j, entry in enumerate(prof.get("pluginConfig") or []):
        _plugin_args(pc, entry, f"{where}.pluginConfig[{j}]", errors)
    return pc


def _apply(
    pc: ProfileConfig, point: str, sets: dict[str, Any], where: str, errors: list[str], warnings: list[str]
) -> None:
    for name in _names(sets.get("disabled"), f"{where}.disabled", errors, allow_star=True):
        if name == "*":
            if point in ("filter", "multiPoint"):
                pc.filters = []
            if point in ("score", "multiPoint"):
                pc.scores = []
            if point in ("permit", "multiPoint"):
                pc.gang = False
            if point in ("postFilter", "multiPoint"):
                pc.preemption = False
            if point in ("placementGenerate", "multiPoint"):
                pc.placement_generators = []
            if point in ("placementScore", "multiPoint"):
                pc.placement_scores = []
            continue
        if point in ("filter", "multiPoint"):
            pc.filters = [n for n in pc.filters if n != name]
        if point in ("score", "multiPoint"):
            pc.scores = [(n, w) for n, w in pc.scores if n != name]
        if point in ("placementGenerate", "multiPoint"):
            pc.placement_generators = [n for n in pc.placement_generators if n != name]
        if point in ("placementScore", "multiPoint"):
            pc.placement_scores = [(n, w) for n, w in pc.placement_scores if n != name]
        if name == "GangScheduling" and point in ("permit", "preEnqueue", "multiPoint"):
            pc.gang = False
        if name == "DefaultPreemption" and point in ("postFilter", "multiPoint"):
            pc.preemption = False
    for k, entry in enumerate(sets.get("enabled") or []):
        raw_name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(raw_name, str) or raw_name not in _KNOWN:
            errors.append(f'{where}.enabled[{k}].name: unknown plugin "{raw_name}"')
            continue
        name = raw_name
        weight = entry.get("weight") or 1
        if not isinstance(weight, int) or weight < 0 or weight > 100:
            errors.append(f"{where}.enabled[{k}].weight: Invalid value: {weight}: must be in the range 1-100")
            continue
        if name in NOT_MODELLED:
            warnings.append(f"plugin {name} is accepted but not modelled by phalanx; it has no effect")
            continue
        if name == "GangScheduling":
            pc.gang = True
            continue
        if name == "DefaultPreemption":
            pc.preemption = point in ("postFilter", "multiPoint") or pc.preemption
            continue
        if name in PLACEMENT_GENERATORS and point in ("placementGenerate", "multiPoint"):
            pc.placement_generators = sorted({*pc.placement_generators, name})
        if name in PLACEMENT_SCORERS and point in ("placementScore", "multiPoint"):
            pc.placement_scores = [(n, w) for n, w in pc.placement_scores if n != name] + [(name, weight)]
        entry_reg = REGISTRY.get(name)
        if entry_reg is None:
            continue
        if entry_reg.filter and point in ("filter", "multiPoint") and name not in pc.filters:
            pc.filters.append(name)
        if entry_reg.score and point in ("score", "multiPoint"):
            pc.scores = [(n, w) for n, w in pc.scores if n != name] + [(name, weight)]


def _names(entries: Any, where: str, errors: list[str], allow_star: bool) -> list[str]:
    out = []
    for k, entry in enumerate(entries or []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or (name not in _KNOWN and not (allow_star and name == "*")):
            errors.append(f'{where}[{k}].name: unknown plugin "{name}"')
            continue
        out.append(name)
    return out


def _plugin_args(pc: ProfileConfig, entry: Any, where: str, errors: list[str]) -> None:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        errors.append(f"{where}.name: Required value")
        return
    name, args = entry["name"], entry.get("args") or {}
    if name not in _KNOWN:
        errors.append(f'{where}.name: unknown plugin "{name}"')
        return
    try:
        if name == "NodeResourcesFit":
            pc.args[name] = _fit_args(args)
        elif name == "NodeResourcesBalancedAllocation":
            pc.args[name] = BalancedAllocationArgs(_resources(args.get("resources"), "resources"))
        elif name == "TopologyPlacementGenerator":
            pc.args[name] = _topology_args(args)
        elif name == pod_topology_spread.NAME:
            pc.args[name] = pod_topology_spread.parse_args(args)
        elif name == inter_pod_affinity.NAME:
            pc.args[name] = inter_pod_affinity.parse_args(args)
        elif name == gpu_share.NAME:
            pc.args[name] = gpu_share.parse_args(args)
        elif name == "NodeAffinity":
            added = args.get("addedAffinity")
            pc.args[name] = NodeAffinityArgs(msgspec.convert(added, NodeAffinitySpec) if added else None)
    except (ValueError, TypeError, KeyError, msgspec.ValidationError) as exc:
        errors.append(f"{where}.args: {exc}")


def _resources(raw: Any, field_name: str) -> list[ResourceSpec]:
    if raw is None:
        return [ResourceSpec("cpu"), ResourceSpec("memory")]
    out = []
    for r in raw:
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            raise ValueError(f"{field_name}: each resource needs a name")
        weight = r.get("weight", 1)
        if not isinstance(weight, int) or weight < 1 or weight > 100:
            raise ValueError(f"{field_name}[{r['name']}].weight: Invalid value: {weight}: must be in the range 1-100")
        out.append(ResourceSpec(r["name"], weight))
    return out


@dataclass
class TopologyArgs:
    """TopologyPlacementGenerator args (a phalanx extension): the cluster's topology levels, coarsest first, as
    node label keys (e.g. zone > block > rack > hostname), used by the phalanx topology annotations."""

    levels: list[str] = field(default_factory=list)


def _topology_args(args: dict[str, Any]) -> TopologyArgs:
    levels = args.get("levels") or []
    if not isinstance(levels, list) or not all(isinstance(x, str) and x for x in levels):
        raise ValueError("levels: must be a list of node label keys, coarsest first")
    if len(set(levels)) != len(levels):
        raise ValueError("levels: Duplicate value")
    return TopologyArgs(levels)


def _fit_args(args: dict[str, Any]) -> NodeResourcesFitArgs:
    strategy = args.get("scoringStrategy") or {}
    kind = strategy.get("type", "LeastAllocated")
    if kind not in STRATEGIES:
        raise ValueError(
            f'scoringStrategy.type: Unsupported value: "{kind}": supported values: {", ".join(STRATEGIES)}'
        )
    shape: list[ShapePoint] = []
    if kind == "RequestedToCapacityRatio":
        points = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or []
        if not points:
            raise ValueError("scoringStrategy.requestedToCapacityRatio.shape: Required value")
        for p in points:
            u, s = int(p["utilization"]), int(p["score"])
            if not 0 <= u <= 100 or not 0 <= s <= 10:
                raise ValueError("shape: utilization must be in 0-100 and score in 0-10")
            shape.append(ShapePoint(u, s))
        if any(b.utilization <= a.utilization for a, b in itertools.pairwise(shape)):
            raise ValueError("shape: utilization values must be sorted in increasing order")
    return NodeResourcesFitArgs(
        ignored_resources=list(args.get("ignoredResources") or []),
        ignored_resource_groups=list(args.get("ignoredResourceGroups") or []),
        strategy=kind,
        resources=_resources(strategy.get("resources"), "scoringStrategy.resources"),
        shape=shape,
    )
