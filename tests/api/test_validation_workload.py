"""v1.36 Workload and PodGroup validation (``scheduling.k8s.io/v1alpha2``, spec workload-api.md §1.10): one case per
rule and limit, exact messages. The objects are validated as written, in their own version (v1.37: the _v137 file)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import scheduling_v1alpha2 as m

from api_cases import DELETE, DNS_LABEL, DNS_SUBDOMAIN, QUALIFIED_NAME, Case, Replace, errors_of, params

GANG = {"gang": {"minCount": 4}}
POD_GROUP: dict[str, Any] = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"schedulingPolicy": GANG}}
WORKLOAD: dict[str, Any] = {
    "metadata": {"name": "w", "namespace": "ns"},
    "spec": {"podGroupTemplates": [{"name": "worker", "schedulingPolicy": GANG}]},
}


def templates(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"podGroupTemplates": list(items)}}


def template(name: str = "worker", **fields: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": GANG, **fields}


def claim(name: str, **source: str) -> dict[str, Any]:
    return {"name": name, **source}


P = "spec.podGroupTemplates"

WORKLOAD_CASES = [
    Case("valid workload", {}),
    Case(
        "valid workload with every gated field",
        {
            "spec": {
                "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
                "podGroupTemplates": [
                    template(
                        schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]},
                        resourceClaims=[claim("gpus", resourceClaimTemplateName="eight-gpus")],
                        disruptionMode="PodGroup",
                        priorityClassName="high",
                        priority=1000,
                    ),
                    {"name": "driver", "schedulingPolicy": {"basic": {}}},
                ],
            }
        },
    ),
    Case("spec missing is an empty spec", {"spec": DELETE}, [f"{P}: Required value"]),
    Case("no templates", templates(), [f"{P}: Required value"]),
    Case(
        "nine templates",
        templates(*(template(f"t{i}") for i in range(9))),
        [f"{P}: Too many: 9: must have at most 8 items"],
    ),
    Case("eight templates", templates(*(template(f"t{i}") for i in range(8)))),
    Case(
        "template names: missing, not a DNS label, duplicate",
        templates(template(""), template("Worker.0"), template("a"), template("a")),
        [
            f'{P}[3]: Duplicate value: {{"name":"a","schedulingPolicy":{{"gang":{{"minCount":4}}}}}}',
            f"{P}[0].name: Required value",
            f'{P}[1].name: Invalid value: "Worker.0": {DNS_LABEL}',
        ],
    ),
    Case(
        "controllerRef kind and name required, bad apiGroup",
        {"spec": {"controllerRef": {"apiGroup": "Batch"}}},
        [
            f'spec.controllerRef.apiGroup: Invalid value: "Batch": {DNS_SUBDOMAIN}',
            "spec.controllerRef.kind: Required value",
            "spec.controllerRef.name: Required value",
        ],
    ),
    Case(
        "controllerRef name with a slash",
        {"spec": {"controllerRef": {"kind": "Job", "name": "a/b"}}},
        ["spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/'"],
    ),
    Case(
        "template without policy",
        templates({"name": "worker"}),
        [f'{P}[0].schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'],
    ),
    Case(
        "template with both policies",
        templates(template(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}})),
        [f'{P}[0].schedulingPolicy: Invalid value: "{{basic, gang}}": must specify exactly one of: `basic`, `gang`'],
    ),
    Case(
        "template priority above the user maximum",
        templates(template(priority=1_000_000_001)),
        [f"{P}[0].priority: Invalid value: 1000000001: must be less than or equal to 1000000000"],
    ),
    Case(
        "template disruptionMode enum",
        templates(template(disruptionMode="All")),
        [f'{P}[0].disruptionMode: Unsupported value: "All": supported values: "Pod", "PodGroup"'],
    ),
]

PG_CASES = [
    Case("valid gang pod group", {}),
    Case("valid basic pod group", {"spec": {"schedulingPolicy": Replace({"basic": {}})}}),
    Case(
        "valid pod group with template ref and status",
        {
            "spec": {
                "podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "worker"}},
                "resourceClaims": [claim("gpus", resourceClaimTemplateName="gpus"), claim("b", resourceClaimName="b")],
            },
            "status": {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "pg-gpus-x7k2"}, {"name": "b"}]},
        },
    ),
    Case(
        "spec missing is an empty spec",
        {"spec": DELETE},
        ['spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'],
    ),
    Case(
        "name not a DNS subdomain",
        {"metadata": {"name": "PG-0"}},
        [f'metadata.name: Invalid value: "PG-0": {DNS_SUBDOMAIN}'],
    ),
    Case(
        "no policy",
        {"spec": {"schedulingPolicy": Replace({})}},
        ['spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'],
    ),
    Case(
        "minCount missing",
        {"spec": {"schedulingPolicy": {"gang": Replace({})}}},
        ["spec.schedulingPolicy.gang.minCount: Required value"],
    ),
    Case(
        "minCount zero",
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}},
        ["spec.schedulingPolicy.gang.minCount: Required value"],
    ),
    Case(
        "minCount negative",
        {"spec": {"schedulingPolicy": {"gang": {"minCount": -2}}}},
        ["spec.schedulingPolicy.gang.minCount: Invalid value: -2: must be greater than or equal to 1"],
    ),
    Case(
        "template ref without workload",
        {"spec": {"podGroupTemplateRef": {}}},
        ['spec.podGroupTemplateRef: Invalid value: "": must specify one of: `workload`'],
    ),
    Case(
        "template ref names",
        {"spec": {"podGroupTemplateRef": {"workload": {"workloadName": "Train", "podGroupTemplateName": ""}}}},
        [
            f'spec.podGroupTemplateRef.workload.workloadName: Invalid value: "Train": {DNS_SUBDOMAIN}',
            "spec.podGroupTemplateRef.workload.podGroupTemplateName: Required value",
        ],
    ),
    Case(
        "two topology constraints",
        {"spec": {"schedulingConstraints": {"topology": [{"key": "rack"}, {"key": "zone"}]}}},
        ["spec.schedulingConstraints.topology: Too many: 2: must have at most 1 item"],
    ),
    Case(
        "topology key missing",
        {"spec": {"schedulingConstraints": {"topology": [{}]}}},
        ["spec.schedulingConstraints.topology[0].key: Required value"],
    ),
    Case(
        "topology key not a label key",
        {"spec": {"schedulingConstraints": {"topology": [{"key": "rack id"}]}}},
        [f'spec.schedulingConstraints.topology[0].key: Invalid value: "rack id": {QUALIFIED_NAME}'],
    ),
    Case(
        "five resource claims",
        {"spec": {"resourceClaims": [claim(f"c{i}", resourceClaimName="x") for i in range(5)]}},
        ["spec.resourceClaims: Too many: 5: must have at most 4 items"],
    ),
    Case(
        "resource claim rules",
        {
            "spec": {
                "resourceClaims": [
                    claim("gpus"),
                    claim("gpus", resourceClaimName="a", resourceClaimTemplateName="b"),
                    claim("", resourceClaimName="Bad_Name"),
                ]
            }
        },
        [
            'spec.resourceClaims[1]: Duplicate value: {"name":"gpus","resourceClaimName":"a",'
            '"resourceClaimTemplateName":"b"}',
            'spec.resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, '
            "`resourceClaimTemplateName`",
            'spec.resourceClaims[1]: Invalid value: "{resourceClaimName, resourceClaimTemplateName}": must specify '
            "exactly one of: `resourceClaimName`, `resourceClaimTemplateName`",
            "spec.resourceClaims[2].name: Required value",
            f'spec.resourceClaims[2].resourceClaimName: Invalid value: "Bad_Name": {DNS_SUBDOMAIN}',
        ],
    ),
    Case(
        "priority bounds",
        {"spec": {"priority": -2_147_483_649, "priorityClassName": "Gold"}},
        [
            f'spec.priorityClassName: Invalid value: "Gold": {DNS_SUBDOMAIN}',
            "spec.priority: Invalid value: -2147483649: must be greater than or equal to -2147483648",
        ],
    ),
    Case("priority at the user maximum", {"spec": {"priority": 1_000_000_000}}),
    Case(
        "status claim statuses",
        {
            "spec": {"resourceClaims": [claim("a", resourceClaimName="a"), claim("b", resourceClaimName="b")]},
            "status": {
                "resourceClaimStatuses": [
                    {"name": "a"},
                    {"name": "a", "resourceClaimName": "pg-a"},
                    {"name": "b", "resourceClaimName": "PG-B"},
                    {"name": "c"},
                ]
            },
        },
        [
            'status.resourceClaimStatuses[1]: Duplicate value: {"name":"a","resourceClaimName":"pg-a"}',
            f'status.resourceClaimStatuses[2].resourceClaimName: Invalid value: "PG-B": {DNS_SUBDOMAIN}',
            'status.resourceClaimStatuses[3].name: Invalid value: "c": '
            "must match the name of an entry in `spec.resourceClaims`",
        ],
    ),
    Case(
        "five status claim statuses",
        {"status": {"resourceClaimStatuses": [{"name": f"c{i}"} for i in range(5)]}},
        ["status.resourceClaimStatuses: Too many: 5: must have at most 4 items"],
    ),
]


@pytest.mark.parametrize("case", params(WORKLOAD_CASES))
def test_workload(case: Case) -> None:
    assert errors_of(m.Workload, WORKLOAD, case.patch) == case.want


@pytest.mark.parametrize("case", params(PG_CASES))
def test_pod_group(case: Case) -> None:
    assert errors_of(m.PodGroup, POD_GROUP, case.patch) == case.want
