"""v1.37 validation of the Workload API (``scheduling.k8s.io/v1beta1``, ``v1alpha3``), a Job's ``spec.scheduling`` and
DeviceTaintRule. The expected lines are what kube-apiserver v1.37.2 answered for the same objects (``kubectl create
--dry-run=server``, gates of tests/e2e on), in its order; tests/e2e/test_validation_real.py asks it again."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api import dra
from phalanx.api import models as m
from phalanx.api.scheduling_convert import decode
from phalanx.api.validation import validate_object

from api_cases import DELETE, DNS_LABEL, DNS_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME, Case, Replace, merged, params

BETA = "scheduling.k8s.io/v1beta1"
ALPHA = "scheduling.k8s.io/v1alpha3"
GANG = {"gang": {"minCount": 2}}
POD_GROUP: dict[str, Any] = {
    "apiVersion": BETA,
    "kind": "PodGroup",
    "metadata": {"name": "pg", "namespace": "ns"},
    "spec": {"schedulingPolicy": GANG},
}
WORKLOAD: dict[str, Any] = {
    "apiVersion": BETA,
    "kind": "Workload",
    "metadata": {"name": "w", "namespace": "ns"},
    "spec": {"podGroupTemplates": [{"name": "worker", "schedulingPolicy": GANG}]},
}
COMPOSITE: dict[str, Any] = {
    "apiVersion": ALPHA,
    "kind": "CompositePodGroup",
    "metadata": {"name": "cpg", "namespace": "ns"},
    "spec": {"workloadRef": {"workloadName": "w", "templateName": "t"}, "schedulingPolicy": {"basic": {}}},
}


def errors(base: dict[str, Any], patch: dict[str, Any]) -> list[str]:
    """Decoded as the loader and the watch decode it (converted and defaulted), then validated."""
    return [f"{e.path}: {e.message}" for e in validate_object(decode(merged(base, patch)))]


def tmpl(name: str, policy: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": policy or {"basic": {}}, **fields}


def composite(name: str, policy: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": policy or {"basic": {}}, **fields}


UNION_POLICY = "must specify one of: `basic`, `gang`"
UNION_MODE = "must specify one of: `single`, `all`"
UNION_CLAIM = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
BOTH_CLAIM = "must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`"

PG_CASES = [
    Case("gang pod group", {}),
    Case(
        "every v1.37 field",
        {
            "spec": {
                "parentCompositePodGroupName": "serving",
                "workloadRef": {"workloadName": "llm", "templateName": "decode"},
                "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
                "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight"}],
                "disruptionMode": {"all": {}},
                "preemptionPolicy": "Never",
                "priority": 1_000_000_000,
            }
        },
    ),
    Case(
        "parent needs a workloadRef; unions",
        {
            "spec": {
                "schedulingPolicy": {"basic": {}, "gang": {"minCount": 0}},
                "parentCompositePodGroupName": "parent",
                "disruptionMode": {},
            }
        },
        [
            "spec.workloadRef: Required value: must be set when parentCompositePodGroupName is set",
            'spec.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`',
            "spec.schedulingPolicy.gang.minCount: Required value",
            f'spec.disruptionMode: Invalid value: "": {UNION_MODE}',
        ],
    ),
    Case(
        "names, limits and unions in spec order",
        {
            "spec": {
                "schedulingPolicy": Replace({}),
                "disruptionMode": {"single": {}, "all": {}},
                "parentCompositePodGroupName": "Bad_Name",
                "workloadRef": {"workloadName": "", "templateName": "UPPER"},
                "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]},
                "resourceClaims": [
                    {"name": "a"},
                    {"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "yy"},
                ],
            }
        },
        [
            f'spec.parentCompositePodGroupName: Invalid value: "Bad_Name": {DNS_SUBDOMAIN}',
            "spec.workloadRef.workloadName: Required value",
            f'spec.workloadRef.templateName: Invalid value: "UPPER": {DNS_LABEL}',
            f'spec.schedulingPolicy: Invalid value: "": {UNION_POLICY}',
            "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 item",
            'spec.resourceClaims[1]: Duplicate value: {"name":"a","resourceClaimName":"x","resourceClaimTemplateName":"yy"}',
            f'spec.resourceClaims[0]: Invalid value: "": {UNION_CLAIM}',
            f'spec.resourceClaims[1]: Invalid value: "{{resourceClaimName, resourceClaimTemplateName}}": {BOTH_CLAIM}',
            'spec.disruptionMode: Invalid value: "{single, all}": must specify exactly one of: `single`, `all`',
        ],
    ),
    Case(
        "negative minCount, five claims",
        {
            "spec": {
                "schedulingPolicy": {"gang": {"minCount": -1}},
                "resourceClaims": [{"name": n, "resourceClaimName": "x"} for n in "abcde"],
            }
        },
        [
            "spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than or equal to 1",
            "spec.resourceClaims: Too many: 5: must have at most 4 items",
        ],
    ),
    # kube-apiserver's Priority admission refuses a preemptionPolicy other than its PriorityClass's before
    # validation runs; without admission this is the enum rule.
    Case(
        "preemptionPolicy enum",
        {"spec": {"preemptionPolicy": "Sometimes"}},
        ['spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"'],
    ),
    Case(
        "priority above the user maximum",
        {"spec": {"priority": 1_000_000_001}},
        ["spec.priority: Invalid value: 1000000001: must be less than or equal to 1000000000"],
    ),
]

WORKLOAD_CASES = [
    Case("one gang template", {}),
    Case(
        "a composite tree four deep",
        {
            "spec": {
                "podGroupTemplates": DELETE,
                "compositePodGroupTemplates": [
                    composite(
                        "root",
                        {"gang": {"minGroupCount": 2}},
                        disruptionMode={"all": {}},
                        compositePodGroupTemplates=[
                            composite(
                                "l2",
                                compositePodGroupTemplates=[
                                    composite("l3", podGroupTemplates=[tmpl("prefill", GANG), tmpl("decode", GANG)])
                                ],
                            )
                        ],
                    )
                ],
            }
        },
    ),
    Case(
        "hand-written rules first, then each list",
        {
            "spec": {
                "controllerRef": {"kind": "", "name": "a/b"},
                "podGroupTemplates": [
                    tmpl("a", GANG, disruptionMode={}, priority=5),
                    tmpl("a"),
                ],
                "compositePodGroupTemplates": [composite("c", {"gang": {"minGroupCount": 0}})],
            }
        },
        [
            "spec: Invalid value: null: detected multiple priority configurations",
            'spec.compositePodGroupTemplates[0]: Invalid value: "c": must have at least one child PodGroupTemplate or '
            "CompositePodGroupTemplate",
            'spec: Invalid value: "{podGroupTemplates, compositePodGroupTemplates}": must specify exactly one of: '
            "`podGroupTemplates`, `compositePodGroupTemplates`",
            "spec.controllerRef.kind: Required value",
            "spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/'",
            'spec.podGroupTemplates[1]: Duplicate value: {"name":"a","schedulingPolicy":{"basic":{}},'
            '"schedulingConstraints":null}',
            f'spec.podGroupTemplates[0].disruptionMode: Invalid value: "": {UNION_MODE}',
            "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount: Required value",
        ],
    ),
    Case(
        "names unique across the tree, depth at most 4, every composite with a child",
        {
            "spec": {
                "podGroupTemplates": DELETE,
                "compositePodGroupTemplates": [
                    composite(
                        "root",
                        compositePodGroupTemplates=[
                            composite(
                                "l2",
                                compositePodGroupTemplates=[
                                    composite(
                                        "l3",
                                        compositePodGroupTemplates=[
                                            composite("l4", podGroupTemplates=[tmpl("root")]),
                                        ],
                                    )
                                ],
                            ),
                            composite("empty"),
                        ],
                    )
                ],
            }
        },
        [
            "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].compositePodGroupTemplates[0]"
            '.compositePodGroupTemplates[0].podGroupTemplates[0].name: Duplicate value: "root"',
            'spec.compositePodGroupTemplates[0]: Invalid value: [{"Name":"l2","SchedulingPolicy":{"Basic":{},"Gang":null},'
            '"SchedulingConstraints":null,"DisruptionMode":null,"PriorityClassName":"","Priority":null,'
            '"PreemptionPolicy":null,"PodGroupTemplates":null,"CompositePodGroupTemplates":[{"Name":"l3",'
            '"SchedulingPolicy":{"Basic":{},"Gang":null},"SchedulingConstraints":null,"DisruptionMode":null,'
            '"PriorityClassName":"","Priority":null,"PreemptionPolicy":null,"PodGroupTemplates":null,'
            '"CompositePodGroupTemplates":[{"Name":"l4","SchedulingPolicy":{"Basic":{},"Gang":null},'
            '"SchedulingConstraints":null,"DisruptionMode":null,"PriorityClassName":"","Priority":null,'
            '"PreemptionPolicy":null,"PodGroupTemplates":[{"Name":"root","SchedulingPolicy":{"Basic":{},"Gang":null},'
            '"SchedulingConstraints":null,"ResourceClaims":null,"DisruptionMode":null,"PriorityClassName":"",'
            '"Priority":null,"PreemptionPolicy":null}],"CompositePodGroupTemplates":null}]}]},{"Name":"empty",'
            '"SchedulingPolicy":{"Basic":{},"Gang":null},"SchedulingConstraints":null,"DisruptionMode":null,'
            '"PriorityClassName":"","Priority":null,"PreemptionPolicy":null,"PodGroupTemplates":null,'
            '"CompositePodGroupTemplates":null}]: maximum template hierarchy depth is 4',
            'spec.compositePodGroupTemplates[0].compositePodGroupTemplates[1]: Invalid value: "empty": must have at '
            "least one child PodGroupTemplate or CompositePodGroupTemplate",
        ],
    ),
    Case(
        "no templates at all",
        {"spec": {"podGroupTemplates": DELETE}},
        ['spec: Invalid value: "": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`'],
    ),
    Case(
        "nine templates",
        {"spec": {"podGroupTemplates": [tmpl(f"t{i}") for i in range(9)]}},
        ["spec.podGroupTemplates: Too many: 9: must have at most 8 items"],
    ),
    Case(
        "one priority for the whole tree",
        {
            "spec": {
                "podGroupTemplates": DELETE,
                "compositePodGroupTemplates": [
                    composite("root", priorityClassName="high", podGroupTemplates=[tmpl("a", priorityClassName="low")])
                ],
            }
        },
        [
            "spec: Invalid value: null: all priority and priorityClassName values must be identical, detected multiple values"
        ],
    ),
]

CPG_CASES = [
    Case("root composite", {}),
    Case(
        "composite rules",
        {
            "spec": {
                "workloadRef": DELETE,
                "parentCompositePodGroupName": "X",
                "schedulingPolicy": Replace({"gang": {}}),
                "schedulingConstraints": {"topology": [{"key": "bad key"}]},
                "disruptionMode": {"single": {}, "all": {}},
            }
        },
        [
            f'spec.parentCompositePodGroupName: Invalid value: "X": {DNS_SUBDOMAIN}',
            "spec.workloadRef: Required value",
            "spec.schedulingPolicy.gang.minGroupCount: Required value",
            f'spec.schedulingConstraints.topology[0].key: Invalid value: "bad key": {QUALIFIED_NAME}',
            'spec.disruptionMode: Invalid value: "{single, all}": must specify exactly one of: `single`, `all`',
        ],
    ),
]


@pytest.mark.parametrize("case", params(PG_CASES))
def test_pod_group(case: Case) -> None:
    assert errors(POD_GROUP, case.patch) == case.want


@pytest.mark.parametrize("case", params(WORKLOAD_CASES))
def test_workload(case: Case) -> None:
    assert errors(WORKLOAD, case.patch) == case.want


@pytest.mark.parametrize("case", params(CPG_CASES))
def test_composite_pod_group(case: Case) -> None:
    assert errors(COMPOSITE, case.patch) == case.want


def test_v1alpha3_pod_group_is_the_same_type() -> None:
    assert errors({**POD_GROUP, "apiVersion": ALPHA}, {"spec": {"schedulingPolicy": Replace({})}}) == [
        f'spec.schedulingPolicy: Invalid value: "": {UNION_POLICY}'
    ]


# --- a Job's spec.scheduling ------------------------------------------------------------------------------------

JOB: dict[str, Any] = {
    "metadata": {"name": "j", "namespace": "ns"},
    "spec": {
        "parallelism": 3,
        "completions": 3,
        "completionMode": "Indexed",
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}},
    },
}


def job_errors(scheduling: dict[str, Any], **spec: Any) -> list[str]:
    job = msgspec.convert(merged(JOB, {"spec": {"scheduling": scheduling, **spec}}), m.Job)
    return [f"{e.path}: {e.message}" for e in validate_object(job)]


S = "spec.scheduling"
ALL_WITH_BASIC = (
    f'{S}.disruptionMode: Invalid value: "": the disruptionMode `all` is not supported with the Basic scheduling policy'
)


@pytest.mark.parametrize(
    ("scheduling", "spec", "want"),
    [
        pytest.param({}, {}, [], id="empty: basic"),
        pytest.param({"schedulingPolicy": {"gang": {}}}, {}, [], id="gang, minCount defaulted"),
        pytest.param({"schedulingPolicy": {"gang": {}}}, {"parallelism": 0}, [], id="suspended-size gang"),
        pytest.param(
            {"schedulingPolicy": {"gang": {"minCount": 4}}},
            {},
            [f"{S}.schedulingPolicy.gang.minCount: Invalid value: 4: must not be greater than parallelism (3)"],
            id="minCount above parallelism",
        ),
        pytest.param(
            {"schedulingPolicy": {"gang": {"minCount": 2}}},
            {"parallelism": None, "completions": 1},
            [f"{S}.schedulingPolicy.gang.minCount: Invalid value: 2: must not be greater than parallelism (1)"],
            id="parallelism defaults to 1",
        ),
        pytest.param(
            {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}, {}, [ALL_WITH_BASIC], id="basic+all"
        ),
        pytest.param({"disruptionMode": {"all": {}}}, {}, [ALL_WITH_BASIC], id="omitted policy is basic"),
        pytest.param({"schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}}, {}, [], id="gang+all"),
        pytest.param(
            {
                "schedulingPolicy": {"gang": {"minCount": 0}, "basic": {}},
                "disruptionMode": {},
                "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]},
                "resourceClaims": [{"name": "a"}, *({"name": n, "resourceClaimName": "x"} for n in "abcd")],
            },
            {},
            [
                f'{S}.schedulingPolicy: Invalid value: "{{basic, gang}}": must specify exactly one of: `basic`, `gang`',
                f"{S}.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1",
                f"{S}.schedulingConstraints.topology: Too many: 2: must have at most 1 item",
                f'{S}.disruptionMode: Invalid value: "": {UNION_MODE}',
                f"{S}.resourceClaims: Too many: 5: must have at most 4 items",
            ],
            id="building blocks",
        ),
        pytest.param(
            {
                "resourceClaims": [
                    {"name": "a"},
                    {"name": "a", "resourceClaimName": "x"},
                    {"name": "B", "resourceClaimName": "Y", "resourceClaimTemplateName": "z"},
                ],
                "schedulingConstraints": {"topology": [{"key": ""}]},
            },
            {},
            [
                f"{S}.schedulingConstraints.topology[0].key: Required value",
                f'{S}.resourceClaims[1]: Duplicate value: {{"name":"a","resourceClaimName":"x"}}',
                f'{S}.resourceClaims[0]: Invalid value: "": {UNION_CLAIM}',
                f'{S}.resourceClaims[2]: Invalid value: "{{resourceClaimName, resourceClaimTemplateName}}": {BOTH_CLAIM}',
                f'{S}.resourceClaims[2].name: Invalid value: "B": {DNS_LABEL}',
                f'{S}.resourceClaims[2].resourceClaimName: Invalid value: "Y": {DNS_SUBDOMAIN}',
            ],
            id="claims",
        ),
    ],
)
def test_job_scheduling(scheduling: dict[str, Any], spec: dict[str, Any], want: list[str]) -> None:
    assert job_errors(scheduling, **spec) == want


# --- DeviceTaintRule --------------------------------------------------------------------------------------------


def rule_errors(spec: dict[str, Any]) -> list[str]:
    rule = msgspec.convert({"metadata": {"name": "r"}, "spec": spec}, dra.DeviceTaintRule)
    return [f"{e.path}: {e.message}" for e in validate_object(rule)]


def test_device_taint_rule() -> None:
    assert (
        rule_errors(
            {
                "deviceSelector": {"driver": "gpu.example.com", "pool": "n1"},
                "taint": {"key": "k", "effect": "NoSchedule"},
            }
        )
        == []
    )
    assert rule_errors(
        {
            "deviceSelector": {"driver": "Bad_Driver", "pool": "", "device": "UPPER"},
            "taint": {"key": "", "value": "bad value!", "effect": "Maybe"},
        }
    ) == [
        f'spec.deviceSelector.driver: Invalid value: "Bad_Driver": {DNS_SUBDOMAIN}',
        "spec.deviceSelector.pool: Required value",
        f'spec.deviceSelector.device: Invalid value: "UPPER": {DNS_LABEL}',
        'spec.taint.key: Invalid value: "": name part must be non-empty',
        f'spec.taint.key: Invalid value: "": {QUALIFIED_NAME}',
        f'spec.taint.value: Invalid value: "bad value!": {LABEL_VALUE}',
        'spec.taint.effect: Unsupported value: "Maybe": supported values: "NoExecute", "NoSchedule", "None"',
    ]
    assert rule_errors({"taint": {"key": "k"}}) == ["spec.taint.effect: Required value"]


def test_device_taint_rule_cel_selectors_are_refused() -> None:
    """Removed in v1.35: kube-apiserver's strict decoding refuses the field; ignoring it would taint every device."""
    got = rule_errors(
        {"deviceSelector": {"selectors": [{"cel": {"expression": "true"}}]}, "taint": {"key": "k", "effect": "None"}}
    )
    assert got == [
        'spec.deviceSelector.selectors: Forbidden: unknown field "spec.deviceSelector.selectors" (removed in Kubernetes v1.35)'
    ]
