"""Pod topology spread constraints and inter-pod (anti-)affinity: decoded from the raw YAML, then validated."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import models as m

from api_cases import DNS_LABEL, QUALIFIED_NAME, Case, errors_of, params

POD: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
S = "spec.topologySpreadConstraints"
A = "spec.affinity.podAffinity"
AA = "spec.affinity.podAntiAffinity"
ZONE = "topology.kubernetes.io/zone"


def spread(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"topologySpreadConstraints": list(constraints)}}


def pod_affinity(kind: str = "podAffinity", **terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"spec": {"affinity": {kind: terms}}}


SPREAD_CASES = [
    Case(
        "valid constraint",
        spread(
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "minDomains": 2,
                "labelSelector": {"matchLabels": {"app": "x"}},
                "matchLabelKeys": ["pod-template-hash"],
                "nodeTaintsPolicy": "Honor",
            }
        ),
    ),
    Case(
        "maxSkew, topologyKey and whenUnsatisfiable",
        spread({"maxSkew": 0}),
        [
            f"{S}[0].maxSkew: Invalid value: 0: must be greater than zero",
            f"{S}[0].topologyKey: Required value: can not be empty",
            f'{S}[0].whenUnsatisfiable: Unsupported value: "": supported values: "DoNotSchedule", "ScheduleAnyway"',
        ],
    ),
    Case(
        "repeated topologyKey and whenUnsatisfiable",
        spread(
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
            {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
        ),
        [f'{S}[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{{ZONE}, ScheduleAnyway}}"'],
    ),
    Case(
        "minDomains needs DoNotSchedule and a positive value",
        spread({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 0}),
        [
            f"{S}[0].minDomains: Invalid value: 0: must be greater than zero",
            f"{S}[0].minDomains: Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
            "not ScheduleAnyway",
        ],
    ),
    Case(
        "node policies, match label keys, selector",
        spread(
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "nodeAffinityPolicy": "Always",
                "matchLabelKeys": ["a b"],
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
            }
        ),
        [
            f'{S}[0].nodeAffinityPolicy: Unsupported value: "Always": supported values: "Honor", "Ignore"',
            f'{S}[0].matchLabelKeys[0]: Invalid value: "a b": {QUALIFIED_NAME}',
            f"{S}[0].labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is "
            "'In' or 'NotIn'",
        ],
    ),
    Case(
        "wrong type is a field error, not a traceback",
        spread({"maxSkew": "one", "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}),
        [f'{S}[0].maxSkew: Invalid value: "one": must be of type integer'],
    ),
]

AFFINITY_CASES = [
    Case(
        "valid pod affinity and anti-affinity",
        {
            "spec": {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE}
                        ]
                    },
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
                        ]
                    },
                }
            }
        },
    ),
    Case(
        "required term without topologyKey, bad namespace",
        pod_affinity(requiredDuringSchedulingIgnoredDuringExecution=[{"namespaces": ["Team_A"]}]),
        [
            f'{A}.requiredDuringSchedulingIgnoredDuringExecution[0].namespace: Invalid value: "Team_A": {DNS_LABEL}',
            f"{A}.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        ],
    ),
    Case(
        "preferred term weight and selector",
        pod_affinity(
            "podAntiAffinity",
            preferredDuringSchedulingIgnoredDuringExecution=[
                {
                    "weight": 101,
                    "podAffinityTerm": {
                        "topologyKey": ZONE,
                        "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Has"}]},
                    },
                }
            ],
        ),
        [
            f"{AA}.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: "
            "must be in the range 1-100",
            f"{AA}.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector"
            '.matchExpressions[0].operator: Invalid value: "Has": not a valid selector operator',
        ],
    ),
    Case(
        "terms not a list",
        pod_affinity(requiredDuringSchedulingIgnoredDuringExecution={"topologyKey": ZONE}),  # type: ignore[arg-type]
        [
            f"{A}.requiredDuringSchedulingIgnoredDuringExecution: "
            f'Invalid value: {{"topologyKey":"{ZONE}"}}: must be of type array'
        ],
    ),
]


@pytest.mark.parametrize("case", params(SPREAD_CASES))
def test_topology_spread_constraints(case: Case) -> None:
    assert errors_of(m.Pod, POD, case.patch) == case.want


@pytest.mark.parametrize("case", params(AFFINITY_CASES))
def test_pod_affinity(case: Case) -> None:
    assert errors_of(m.Pod, POD, case.patch) == case.want
