"""Scheduler configuration: a KubeSchedulerConfiguration-shaped YAML (``kubescheduler.config.k8s.io/v1``) turned
into profiles, plus the engine's mode: its feature gates (``featureGates``, a phalanx extension of the file, and
``--feature-gates``) and its rules (phalanx's own, or a compatibility mode's: ``--compat v1.36``).

Every problem is an input error ``FILE[:LINE]: KubeSchedulerConfiguration: FIELD.PATH: message``, in
kube-scheduler's words where it has them: a file that cannot be read or parsed, a field of the wrong type, an
unknown extension point or plugin, and plugin arguments, which each plugin parses and validates itself (its
``PLUGIN.parse_args``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from phalanx.api.errors import FieldError, InputError, Source
from phalanx.api.loader import locate
from phalanx.scheduling.feature_gates import (
    DEFAULT_GATES,
    FeatureGateError,
    FeatureGates,
    gates_version,
    parse_bool,
    resolve_gates,
)
from phalanx.scheduling.handle import Handle
from phalanx.scheduling.plugin import POINTS, ArgsError, type_error
from phalanx.scheduling.plugins import default_preemption, gang_scheduling, topology_placement_generator
from phalanx.scheduling.plugins.node_resources_fit import NodeResourcesFitArgs
from phalanx.scheduling.plugins.registry import DEFAULT_PLACEMENT_SCORES, REGISTRY, default_plugins
from phalanx.scheduling.plugins.topology_placement_generator import TopologyArgs
from phalanx.scheduling.profile import Profile
from phalanx.scheduling.rules import COMPAT_VERSIONS, RULES, Rules, rules_for

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "ProfileConfig",
    "SchedulerConfig",
    "TopologyArgs",
    "default_profile",
    "load_config",
    "parse_config",
    "with_mode",
]

DEFAULT_SCHEDULER_NAME = "default-scheduler"
KIND = "KubeSchedulerConfiguration"
_GANG = gang_scheduling.NAME
_PREEMPTION = default_preemption.NAME
_TOPOLOGY = topology_placement_generator.NAME
_PLACEMENT_GENERATORS = frozenset(n for n, s in REGISTRY.items() if "placementGenerate" in s.points)
_PLACEMENT_SCORERS = frozenset(n for n, s in REGISTRY.items() if "placementScore" in s.points) | {"NodeResourcesFit"}
_GPU_SHARE = "GpuShare"  # phalanx's own score plugin: not in v1.36's default profile (Rules.gpu_share_scoring)


@dataclass
class ProfileConfig:
    """One profile as configured: plugin names in order, score weights, parsed plugin args, and the plugins the
    engine implements itself as switches."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    filters: list[str] = field(default_factory=list)
    scores: list[tuple[str, int]] = field(default_factory=list)
    args: dict[str, Any] = field(default_factory=dict)
    gang: bool = True
    preemption: bool = True
    placement_generators: list[str] = field(default_factory=lambda: sorted(_PLACEMENT_GENERATORS))
    placement_scores: list[tuple[str, int]] = field(default_factory=lambda: list(DEFAULT_PLACEMENT_SCORES))
    # Ties between equally scored nodes go to the first node in name order (the FGD experiment's static node
    # priority) instead of a seeded order drawn per pod.
    static_ties: bool = False
    percentage_of_nodes_to_score: int | None = None  # the profile's own; None: the configuration's
    # Plugins enabled explicitly by the configuration (a default plugin the compatibility mode drops stays when a
    # configuration asks for it).
    enabled: set[str] = field(default_factory=set)

    def build(self, handle: Handle, seed: int = 0, rules: Rules = RULES, percentage: int = 0) -> Profile:
        instances: dict[str, Any] = {}

        def get(name: str) -> Any:
            if name not in instances:
                factory = REGISTRY[name].factory
                assert factory is not None, f"{name} is implemented by the engine, not instantiated"
                instances[name] = factory(self.args.get(name), handle)
            return instances[name]

        fit_args = self.args.get("NodeResourcesFit") or NodeResourcesFitArgs()
        topology = self.args.get(_TOPOLOGY) or TopologyArgs()
        scores = [(n, w) for n, w in self.scores if rules.gpu_share_scoring or n != _GPU_SHARE or n in self.enabled]
        pct = self.percentage_of_nodes_to_score
        return Profile(
            self.scheduler_name,
            [get(n) for n in self.filters],
            [(get(n), w) for n, w in scores],
            seed,
            tas=_TOPOLOGY in self.placement_generators,
            placement_scores=list(self.placement_scores),
            topology_levels=list(topology.levels),
            fit_resources=list(fit_args.resources),
            preemption=self.preemption,
            static_ties=self.static_ties,
            report_ties=not rules.seeded_tie_break,
            percentage_of_nodes_to_score=None if rules.all_nodes_scored else (percentage if pct is None else pct),
        )


@dataclass
class SchedulerConfig:
    profiles: list[ProfileConfig] = field(default_factory=lambda: [default_profile()])
    warnings: list[str] = field(default_factory=list)
    # The engine's mode: feature gates (``featureGates`` / ``--feature-gates``, phalanx's profile by default) and
    # rules (phalanx's own, or a compatibility mode's).
    feature_gates: FeatureGates = DEFAULT_GATES
    rules: Rules = RULES
    compat: str | None = None  # the compatibility mode the rules come from ("v1.36"), for reports
    percentage_of_nodes_to_score: int = (
        0  # 0: kube-scheduler's adaptive default; used only when all_nodes_scored is off
    )
    gate_overrides: dict[str, bool] = field(default_factory=dict)  # what the file's featureGates named


def with_mode(
    config: SchedulerConfig | None, compat: str | None = None, gates: dict[str, bool] | None = None
) -> SchedulerConfig:
    """``config`` (or the default configuration) with a compatibility mode and ``--feature-gates`` applied: the
    flag's gates override the file's. Raises InputError for an unknown compatibility version or bad gates."""
    cfg = config or SchedulerConfig()
    try:
        rules = rules_for(compat)
    except KeyError:
        supported = ", ".join(f'"{v}"' for v in COMPAT_VERSIONS)
        raise InputError([f'--compat: Unsupported value: "{compat}": supported values: {supported}']) from None
    try:
        resolved = resolve_gates({**cfg.gate_overrides, **(gates or {})}, version=gates_version(compat))
    except FeatureGateError as exc:
        raise InputError([f"--feature-gates: {m}" for m in exc.messages]) from exc
    cfg.rules, cfg.compat, cfg.feature_gates = rules, (None if compat is None else rules_version(compat)), resolved
    return cfg


def rules_version(compat: str) -> str:
    return compat if compat.startswith("v") else f"v{compat}"


def default_profile(name: str = DEFAULT_SCHEDULER_NAME) -> ProfileConfig:
    plugins = default_plugins()
    return ProfileConfig(
        scheduler_name=name,
        filters=[s.name for s, _ in plugins if s.filter],
        scores=[(s.name, w) for s, w in plugins if s.score],
    )


def load_config(path: str, gates: str = "v1.36") -> SchedulerConfig:
    """Read a KubeSchedulerConfiguration file, its featureGates those of release ``gates`` (``gates_version``).
    Raises InputError naming the file, line and field."""
    where = f"{path}: {KIND}"
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as exc:
        raise InputError([f"{where}: cannot read: {exc.strerror or exc}"]) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            [f"{where}: cannot read: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"]
        ) from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError([f"{path}{line}: {KIND}: cannot parse: {problem}"]) from exc
    return parse_config(raw, path, located=True, gates=gates)


def parse_config(raw: Any, path: str = "<config>", located: bool = False, gates: str = "v1.36") -> SchedulerConfig:
    """The configuration in ``raw`` (decoded YAML). ``located``: ``path`` is a file whose lines errors name;
    ``gates``: the release whose feature gates ``featureGates`` names."""
    errors: list[FieldError] = []
    cfg = SchedulerConfig(profiles=[])
    if not isinstance(raw, Mapping):
        errors.append(type_error("", raw, f"a {KIND} object"))
    elif raw.get("kind") != KIND:
        errors.append(FieldError.unsupported("kind", raw.get("kind"), [KIND]))
    else:
        _profiles(raw, cfg, errors)
        _feature_gates(raw, cfg, errors, gates)
        pct = _percentage(raw.get("percentageOfNodesToScore"), "percentageOfNodesToScore", errors)
        cfg.percentage_of_nodes_to_score = pct or 0
    if errors:
        raise InputError([_render(path, e, located) for e in errors])
    return cfg


def _feature_gates(raw: Mapping[str, Any], cfg: SchedulerConfig, errors: list[FieldError], version: str) -> None:
    """``featureGates``: a map of gate name to bool, as kube-scheduler's ``--feature-gates`` takes them (a phalanx
    extension: kube-scheduler itself reads gates from its flag only). Validated with the flag's rules."""
    gates = _default(raw.get("featureGates"), {})
    if not _expect(gates, Mapping, "featureGates", "an object", errors):
        return
    out: dict[str, bool] = {}
    for name, value in gates.items():
        at = f"featureGates.{name}"
        if isinstance(value, str) and parse_bool(value) is not None:
            value = parse_bool(value)
        if not isinstance(value, bool):
            errors.append(type_error(at, value, "a bool"))
            continue
        out[str(name)] = value
    try:
        cfg.feature_gates = resolve_gates(out, version=version)
    except FeatureGateError as exc:
        errors.extend(FieldError(_gate_path(m, out), m) for m in exc.messages)
        return
    cfg.gate_overrides = out


def _gate_path(message: str, named: Mapping[str, bool]) -> str:
    """The featureGates entry a message is about (the first named gate it mentions), for the line number."""
    for word in message.replace(":", " ").replace("[", " ").replace("]", " ").replace("=", " ").split():
        if word in named:
            return f"featureGates.{word}"
    return "featureGates"


def _percentage(value: Any, path: str, errors: list[FieldError]) -> int | None:
    """``percentageOfNodesToScore``: 0-100 (0: the adaptive default), as kube-scheduler validates it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(type_error(path, value, "an integer"))
        return None
    if not 0 <= value <= 100:
        errors.append(FieldError.invalid(path, value, "not in valid range [0-100]"))
        return None
    return value


def _render(path: str, err: FieldError, located: bool) -> str:
    line = locate(Source(path), err.path) if located and err.path else 0
    where = f"{path}:{line}" if line else path
    field_path = f"{err.path}: " if err.path else ""
    return f"{where}: {KIND}: {field_path}{err.message}"


def _default(value: Any, empty: Any) -> Any:
    """A field left out (or null) is its empty value; any other value must have the field's type."""
    return empty if value is None else value


def _expect(value: Any, kind: type, path: str, what: str, errors: list[FieldError]) -> bool:
    if isinstance(value, kind):
        return True
    errors.append(type_error(path, value, what))
    return False


def _profiles(raw: Mapping[str, Any], cfg: SchedulerConfig, errors: list[FieldError]) -> None:
    profiles = _default(raw.get("profiles"), [])
    if not _expect(profiles, list, "profiles", "a list", errors):
        return
    profiles = profiles or [{}]  # no profiles: one default profile, as kube-scheduler defaults it
    seen: set[str] = set()
    for i, prof in enumerate(profiles):
        where = f"profiles[{i}]"
        if not _expect(prof, Mapping, where, "an object", errors):
            continue
        name = prof.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if not _expect(name, str, f"{where}.schedulerName", "a string", errors):
            continue
        pc = _profile(prof, name, where, errors, cfg.warnings)
        pc.percentage_of_nodes_to_score = _percentage(
            prof.get("percentageOfNodesToScore"), f"{where}.percentageOfNodesToScore", errors
        )
        if pc.scheduler_name in seen:
            errors.append(FieldError.duplicate(f"{where}.schedulerName", pc.scheduler_name))
        seen.add(pc.scheduler_name)
        cfg.profiles.append(pc)


def _profile(
    prof: Mapping[str, Any], name: str, where: str, errors: list[FieldError], warnings: list[str]
) -> ProfileConfig:
    pc = default_profile(name)
    plugins = _default(prof.get("plugins"), {})
    if _expect(plugins, Mapping, f"{where}.plugins", "an object", errors):
        for point, sets in plugins.items():
            at = f"{where}.plugins.{point}"
            if point not in POINTS:
                errors.append(FieldError(f"{where}.plugins", f'unknown extension point "{point}"'))
            elif _expect(_default(sets, {}), Mapping, at, "an object", errors):
                _apply(pc, point, _default(sets, {}), at, errors, warnings)
    entries = _default(prof.get("pluginConfig"), [])
    if _expect(entries, list, f"{where}.pluginConfig", "a list", errors):
        configured: set[str] = set()
        for j, entry in enumerate(entries):
            _plugin_args(pc, entry, f"{where}.pluginConfig[{j}]", configured, errors)
    return pc


def _apply(
    pc: ProfileConfig, point: str, sets: Mapping[str, Any], where: str, errors: list[FieldError], warnings: list[str]
) -> None:
    for name in _names(sets.get("disabled"), f"{where}.disabled", errors, allow_star=True):
        _disable(pc, point, name)
    enabled = _default(sets.get("enabled"), [])
    if not _expect(enabled, list, f"{where}.enabled", "a list", errors):
        return
    for k, entry in enumerate(enabled):
        at = f"{where}.enabled[{k}]"
        raw_name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(raw_name, str) or raw_name not in REGISTRY:
            errors.append(FieldError(f"{at}.name", f'unknown plugin "{raw_name}"'))
            continue
        weight = entry.get("weight") or 1
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
            errors.append(FieldError.invalid(f"{at}.weight", weight, "must be in the range 1-100"))
            continue
        _enable(pc, point, raw_name, weight, warnings)


def _disable(pc: ProfileConfig, point: str, name: str) -> None:
    every = name == "*"
    if point in ("filter", "multiPoint"):
        pc.filters = [] if every else [n for n in pc.filters if n != name]
    if point in ("score", "multiPoint"):
        pc.scores = [] if every else [(n, w) for n, w in pc.scores if n != name]
    if point in ("placementGenerate", "multiPoint"):
        pc.placement_generators = [] if every else [n for n in pc.placement_generators if n != name]
    if point in ("placementScore", "multiPoint"):
        pc.placement_scores = [] if every else [(n, w) for n, w in pc.placement_scores if n != name]
    if ((every or name == _GANG) and point in ("permit", "multiPoint")) or (name == _GANG and point == "preEnqueue"):
        pc.gang = False
    if (every or name == _PREEMPTION) and point in ("postFilter", "multiPoint"):
        pc.preemption = False


def _enable(pc: ProfileConfig, point: str, name: str, weight: int, warnings: list[str]) -> None:
    spec = REGISTRY[name]
    pc.enabled.add(name)
    if not spec.modelled:
        warnings.append(f"plugin {name} is accepted but not modelled by phalanx; it has no effect")
        return
    if name == _GANG:
        pc.gang = True
        return
    if name == _PREEMPTION:
        pc.preemption = point in ("postFilter", "multiPoint") or pc.preemption
        return
    if name in _PLACEMENT_GENERATORS and point in ("placementGenerate", "multiPoint"):
        pc.placement_generators = sorted({*pc.placement_generators, name})
    if name in _PLACEMENT_SCORERS and point in ("placementScore", "multiPoint"):
        pc.placement_scores = [(n, w) for n, w in pc.placement_scores if n != name] + [(name, weight)]
    if spec.factory is None:
        return
    if spec.filter and point in ("filter", "multiPoint") and name not in pc.filters:
        pc.filters.append(name)
    if spec.score and point in ("score", "multiPoint"):
        pc.scores = [(n, w) for n, w in pc.scores if n != name] + [(name, weight)]


def _names(entries: Any, where: str, errors: list[FieldError], allow_star: bool) -> list[str]:
    out: list[str] = []
    entries = _default(entries, [])
    if not _expect(entries, list, where, "a list", errors):
        return out
    for k, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or (name not in REGISTRY and not (allow_star and name == "*")):
            errors.append(FieldError(f"{where}[{k}].name", f'unknown plugin "{name}"'))
            continue
        out.append(name)
    return out


def _plugin_args(pc: ProfileConfig, entry: Any, where: str, configured: set[str], errors: list[FieldError]) -> None:
    if not _expect(entry, Mapping, where, "an object", errors):
        return
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        errors.append(FieldError.required(f"{where}.name"))
        return
    if name not in REGISTRY:
        errors.append(FieldError(f"{where}.name", f'unknown plugin "{name}"'))
        return
    if name in configured:
        errors.append(FieldError.duplicate(f"{where}.name", name))
        return
    configured.add(name)
    parse = REGISTRY[name].parse_args
    if parse is None:
        return  # a plugin without arguments: whatever args say has no effect, as kube-scheduler ignores them
    try:
        pc.args[name] = parse(entry.get("args"))
    except ArgsError as exc:
        errors.extend(FieldError(f"{where}.args" + ("." + e.path if e.path else ""), e.message) for e in exc.errors)
