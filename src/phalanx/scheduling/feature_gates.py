"""Feature gates as kube-scheduler takes them (``--feature-gates``; phalanx also reads ``featureGates`` from the
KubeSchedulerConfiguration), validated as component-base's featuregate does, and what the engine does with them.

- The gates are those of one release (:data:`TABLES`): v1.36.3's (``feature_gates_v1_36.py``) unless the mode is
  ``--compat v1.37``, then v1.37.2's (``feature_gates_v1_37.py``); both generated from the Kubernetes sources. An
  unknown name, a value that is not a Go bool, a locked gate set against its lock and a gate on while a gate it
  depends on is off are errors, in kube-scheduler's words.
- phalanx's own profile turns the workload gates on (:attr:`GateTable.profile`) where the user has not named them
  and their dependencies are on; every other gate takes the release's default.
- The gates that change scheduling switch the engine (:class:`SchedulingGates`, DRA's ``Features``). v1.37 folded
  ``GangScheduling`` and ``WorkloadAwarePreemption`` into ``GenericWorkload``. A few gates that change
  kube-scheduler's decisions are modelled only at their default (:attr:`GateTable.unsupported`): setting one the
  other way is an error rather than a silent difference. docs/feature-gates.md lists them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from phalanx.dra.features import Features
from phalanx.scheduling import feature_gates_v1_36 as v1_36
from phalanx.scheduling import feature_gates_v1_37 as v1_37

__all__ = [
    "DEFAULT_GATES",
    "GATES_VERSIONS",
    "HONOURED",
    "NO_EFFECT",
    "PHALANX_PROFILE",
    "PHALANX_PROFILE_V1_37",
    "TABLES",
    "UNSUPPORTED",
    "UNSUPPORTED_V1_37",
    "FeatureGateError",
    "FeatureGates",
    "GateTable",
    "SchedulingGates",
    "gates_version",
    "parse_bool",
    "parse_flag",
    "resolve_gates",
]

# The workload gates phalanx's profile turns on, in dependency order (a gate is turned on only where what it needs
# is on, so GenericWorkload=false alone turns the workload features off).
PHALANX_PROFILE: tuple[str, ...] = (
    "GenericWorkload",
    "GangScheduling",
    "TopologyAwareWorkloadScheduling",
    "WorkloadAwarePreemption",
    "DRAWorkloadResourceClaims",
    "WorkloadWithJob",
    "DRADeviceTaintRules",
)
PHALANX_PROFILE_V1_37: tuple[str, ...] = (
    "GenericWorkload",
    "TopologyAwareWorkloadScheduling",
    "CompositePodGroup",
    "PodGroupPreemptionPolicy",
    "DRAWorkloadResourceClaims",
    "WorkloadWithJob",
)

# What each honoured gate switches (docs/feature-gates.md renders this table).
HONOURED: Mapping[str, str] = {
    "GenericWorkload": "PodGroups: the PodGroup cycle, PreEnqueue waiting for the group; off, members are scheduled "
    "pod by pod and PodGroups are ignored",
    "GangScheduling": "the GangScheduling plugin: minCount gate and quorum",
    "TopologyAwareWorkloadScheduling": "the placement algorithm (TopologyPlacementGenerator, placement scores)",
    "WorkloadAwarePreemption": "PodGroups preempt as a whole; off, each member runs per-pod preemption inside the "
    "PodGroup cycle and its victims go at once (v1.36 without WAP)",
    "DRAWorkloadResourceClaims": "PodGroup ResourceClaims (generated and shared per PodGroup)",
    "WorkloadWithJob": "Job expansion in `schedule` creates a Workload and PodGroup for gang Jobs",
    "DRAPartitionableDevices": "counters and per-device node selection",
    "DRAConsumableCapacity": "multi-allocatable devices and capacity requests",
    "DRADeviceTaints": "device taints and request tolerations",
    "DRADeviceBindingConditions": "devices with binding conditions",
    "DRAExtendedResource": "extended resources served by DeviceClasses",
    "DRAListTypeAttributes": "list-typed attributes in constraints",
    "DRAPrioritizedList": "firstAvailable subrequests",
    "CompositePodGroup": "(v1.37) CompositePodGroups: a tree of PodGroups is scheduled from its root",
    "PodGroupPreemptionPolicy": "(v1.37) a PodGroup's preemptionPolicy, which its members must share",
    "DRADeviceTaintRules": "DeviceTaintRules taint the devices they select (GA and on in v1.37; beta and off in "
    "v1.36, on in phalanx's profile)",
}
# Gates that change kube-scheduler but not the outcome phalanx computes (a fixpoint), and why.
NO_EFFECT: Mapping[str, str] = {
    "SchedulerAsyncPreemption": "victims are deleted asynchronously and the preemptor waits in PreEnqueue; at the "
    "fixpoint the same victims are gone and the preemptor is placed",
    "SchedulerAsyncAPICalls": "API calls made asynchronously; the decisions are the same",
    "SchedulerPopFromBackoffQ": "queue timing only",
    "OpportunisticBatching": "the next pod of the same signature tries the previous pod's next-best node first; that "
    "is the node a full evaluation chooses unless score normalisation over the changed feasible set reorders nodes",
    "NominatedNodeNameForExpectation": "nominatedNodeName written as an expectation; placement unchanged",
    "ClearingNominatedNodeNameAfterBinding": "nominatedNodeName cleared after binding; placement unchanged",
    "DRASchedulerFilterTimeout": "a DynamicResources Filter timeout; phalanx's allocator search is bounded",
    "DRAResourceClaimDeviceStatus": "claim status written by drivers",
    "DRAResourceClaimGranularStatusAuthorization": "authorization of claim status writes",
    "DRAResourcePoolStatus": "resource pool status reporting",
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": "matchLabelKeys merged by the API server instead of the "
    "scheduler; merging twice gives the same selector",
    "DRAFractionalCapacityRange": "(v1.37) fractional values in a capacity request policy range are the API "
    "server's to admit; phalanx computes with exact quantities either way",
}
# Gates that change kube-scheduler's decisions but that phalanx models only at the release's default.
UNSUPPORTED: Mapping[str, str] = {
    "DRANodeAllocatableResources": "node allocatable resources from DRA are not modelled",
    "MatchLabelKeysInPodTopologySpread": "matchLabelKeys are always merged into spread selectors",
    "PodLevelResources": "pod-level resources are always part of a pod's requests",
    "TaintTolerationComparisonOperators": "tolerations with Gt/Lt operators are not modelled",
}
UNSUPPORTED_V1_37: Mapping[str, str] = {
    **UNSUPPORTED,
    "DRADerivedAttributes": "derived device attributes are not modelled",
    "DRADeviceCompatibilityGroups": "device compatibility groups are not modelled",
    "DRAPartitionableDevicesType": "the typed partition summary is not modelled",
    "DRAOptionalNodeOperations": "optional node operations are not modelled",
}


@dataclass(frozen=True)
class GateTable:
    """One release's gates: every gate kube-scheduler accepts as (stage, default, locked), their dependencies,
    phalanx's profile and the gates modelled only at their default."""

    version: str  # "v1.36"
    gates: Mapping[str, tuple[str, bool, bool]]
    dependencies: Mapping[str, tuple[str, ...]]
    profile: tuple[str, ...]
    unsupported: Mapping[str, str]


TABLES: Mapping[str, GateTable] = {
    "v1.36": GateTable("v1.36", v1_36.GATES, v1_36.DEPENDENCIES, PHALANX_PROFILE, UNSUPPORTED),
    "v1.37": GateTable("v1.37", v1_37.GATES, v1_37.DEPENDENCIES, PHALANX_PROFILE_V1_37, UNSUPPORTED_V1_37),
}
GATES_VERSIONS = tuple(TABLES)


def gates_version(compat: str | None) -> str:
    """The release whose gates a mode takes: ``--compat v1.37``'s are v1.37's; phalanx's own mode and
    ``--compat v1.36`` take v1.36's."""
    if compat is None:
        return "v1.36"
    version = compat if compat.startswith("v") else f"v{compat}"
    return version if version in TABLES else "v1.36"


_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class FeatureGateError(Exception):
    """Bad feature gates: one message per problem, in kube-scheduler's words."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages


def parse_bool(text: str) -> bool | None:
    """Go's strconv.ParseBool, which kube-scheduler's flag uses: None when ``text`` is not a bool."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None


def parse_flag(values: Iterable[str]) -> dict[str, bool]:
    """``--feature-gates`` values (the flag repeats): ``A=true,B=false`` or ``kube:A=true`` (kube is the only
    component). Later values win. Raises FeatureGateError naming the bad entry."""
    out: dict[str, bool] = {}
    problems: list[str] = []
    for value in values:
        for item in value.split(","):
            if not item.strip():
                continue
            component, sep, rest = item.partition(":")
            if sep and "=" not in component:
                if component.strip() != "kube":
                    problems.append(f"component not registered: {component.strip()}")
                    continue
                item = rest
            key, eq, raw = item.partition("=")
            key = key.strip()
            if not eq:
                problems.append(f"missing bool value for {key}")
                continue
            parsed = parse_bool(raw.strip())
            if parsed is None:
                problems.append(
                    f'invalid value of {key}={raw.strip()}, err: strconv.ParseBool: parsing "{raw.strip()}": '
                    "invalid syntax"
                )
                continue
            out[key] = parsed
    if problems:
        raise FeatureGateError(problems)
    return out


@dataclass(frozen=True, slots=True)
class SchedulingGates:
    """What the engine switches on the gates: the workload features and DRA's allocator features."""

    generic_workload: bool = True
    gang_scheduling: bool = True  # v1.37: GenericWorkload
    topology_aware_scheduling: bool = True
    workload_aware_preemption: bool = True
    workload_resource_claims: bool = True
    workload_with_job: bool = True
    # CompositePodGroup trees (v1.37's gate; phalanx schedules them whenever GenericWorkload is on otherwise)
    composite_pod_group: bool = True
    # v1.37's PodGroupPreemptionPolicy: members must share their root group's preemptionPolicy
    pod_group_preemption_policy: bool = True
    device_taint_rules: bool = True  # DRADeviceTaintRules: DeviceTaintRule objects are applied to the slices
    dra: Features = field(default_factory=Features)


@dataclass(frozen=True)
class FeatureGates:
    """The effective gates: ``explicit`` is what the user named (config then flag), ``values`` every gate's value,
    ``version`` the release whose gates they are."""

    explicit: Mapping[str, bool]
    values: Mapping[str, bool]
    version: str = "v1.36"

    def enabled(self, name: str) -> bool:
        return self.values[name]

    def changed(self) -> dict[str, bool]:
        """The gates whose value differs from the release's default (what a report shows)."""
        gates = TABLES[self.version].gates
        return {n: v for n, v in sorted(self.values.items()) if v != gates[n][1]}

    def scheduling(self) -> SchedulingGates:
        on = self.values.__getitem__
        dra = Features(
            prioritized_list=on("DRAPrioritizedList"),
            admin_access=on("DRAAdminAccess"),
            partitionable=on("DRAPartitionableDevices"),
            device_taints=on("DRADeviceTaints"),
            consumable_capacity=on("DRAConsumableCapacity"),
            binding_conditions=on("DRADeviceBindingConditions"),
            list_type_attributes=on("DRAListTypeAttributes"),
            extended_resource=on("DRAExtendedResource"),
        )
        generic = on("GenericWorkload")
        if self.version == "v1.36":
            gang, wap, composite, policy = on("GangScheduling"), on("WorkloadAwarePreemption"), generic, False
        else:
            gang, wap, composite, policy = generic, generic, on("CompositePodGroup"), on("PodGroupPreemptionPolicy")
        return SchedulingGates(
            generic_workload=generic,
            gang_scheduling=gang,
            topology_aware_scheduling=on("TopologyAwareWorkloadScheduling"),
            workload_aware_preemption=wap,
            workload_resource_claims=on("DRAWorkloadResourceClaims"),
            workload_with_job=on("WorkloadWithJob"),
            composite_pod_group=composite,
            pod_group_preemption_policy=policy,
            device_taint_rules=on("DRADeviceTaintRules"),
            dra=dra,
        )


def resolve_gates(
    explicit: Mapping[str, bool] | None = None, profile: Iterable[str] | None = None, version: str = "v1.36"
) -> FeatureGates:
    """The effective gates for what the user named: the release's defaults, then ``profile``'s gates on (each
    only where the user did not name it and its dependencies are on; by default phalanx's profile), then the
    user's values; validated as component-base's featuregate validates them. Raises FeatureGateError with every
    problem."""
    table = TABLES[version]
    gates, deps, unsupported = table.gates, table.dependencies, table.unsupported
    profile = table.profile if profile is None else profile
    explicit = dict(explicit or {})
    problems: list[str] = []
    for name in sorted(explicit):
        if name not in gates:
            problems.append(f"unrecognized feature gate: {name}")
            continue
        _, default, locked = gates[name]
        if locked and explicit[name] != default:
            problems.append(
                f"cannot set feature gate {name} to {_go(explicit[name])}, feature is locked to {_go(default)}"
            )
    if problems:
        raise FeatureGateError(problems)
    values = {name: spec[1] for name, spec in gates.items()}
    _all_of_stage(explicit, values, gates)
    for name in profile:
        if name not in explicit and all(_value(d, explicit, values) for d in deps.get(name, ())):
            values[name] = True
    values.update(explicit)
    for name in sorted(deps):
        if values[name]:
            off = [d for d in deps[name] if not values[d]]
            if off:
                problems.append(f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]")
    for name in sorted(unsupported):
        if values[name] != gates[name][1]:
            problems.append(
                f"feature gate {name}={_go(values[name])} is not supported by phalanx: {unsupported[name]} "
                f"(only {version}'s default, {name}={_go(gates[name][1])}, is modelled)"
            )
    if problems:
        raise FeatureGateError(problems)
    return FeatureGates(explicit, values, version)


def _all_of_stage(
    explicit: Mapping[str, bool],
    values: dict[str, bool],
    gates: Mapping[str, tuple[str, bool, bool]],
) -> None:
    """AllAlpha / AllBeta set every gate of their stage that is not named explicitly (and not locked)."""
    for special, stage in (("AllAlpha", "ALPHA"), ("AllBeta", "BETA")):
        if special not in explicit:
            continue
        for name, (st, _, locked) in gates.items():
            if st == stage and name not in ("AllAlpha", "AllBeta") and name not in explicit and not locked:
                values[name] = explicit[special]


def _value(name: str, explicit: Mapping[str, bool], values: Mapping[str, bool]) -> bool:
    return explicit.get(name, values[name])


def _go(value: bool) -> str:
    return "true" if value else "false"


DEFAULT_GATES = resolve_gates()  # phalanx's profile: the workload gates on, everything else as in v1.36
