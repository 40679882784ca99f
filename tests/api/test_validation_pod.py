"""Pod validation: each case patches a minimal valid Pod and lists kube-apiserver's exact ``path: message`` lines."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import models as m

from api_cases import DELETE, DNS_LABEL, DNS_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME, QUANTITY, Case, errors_of, params

POD: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}


def containers(*ctrs: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(ctrs)}
    if init is not None:
        spec["initContainers"] = init
    return {"spec": spec}


def resources(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    return containers({"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}}})


R = "spec.containers[0].resources"

CONTAINER_CASES = [
    Case("valid minimal pod", {}),
    Case("no containers", {"spec": {"containers": []}}, ["spec.containers: Required value"]),
    Case("container name missing", containers({}), ["spec.containers[0].name: Required value"]),
    Case(
        "container name not a DNS label",
        containers({"name": "Web_1"}),
        [f'spec.containers[0].name: Invalid value: "Web_1": {DNS_LABEL}'],
    ),
    Case(
        "duplicate container name",
        containers({"name": "c"}, {"name": "c"}),
        ['spec.containers[1].name: Duplicate value: "c"'],
    ),
    Case(
        "init container name clashes with a container",
        containers({"name": "c"}, init=[{"name": "c"}]),
        ['spec.initContainers[0].name: Duplicate value: "c"'],
    ),
    Case(
        "init sidecar restartPolicy Always", containers({"name": "c"}, init=[{"name": "i", "restartPolicy": "Always"}])
    ),
    Case(
        "init container restartPolicy Never",
        containers({"name": "c"}, init=[{"name": "i", "restartPolicy": "Never"}]),
        ['spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"'],
    ),
    Case(
        "port out of range, bad protocol, bad name",
        containers(
            {"name": "c", "ports": [{"name": "HTTP", "containerPort": 70000, "hostPort": -1, "protocol": "ICMP"}]}
        ),
        [
            'spec.containers[0].ports[0].name: Invalid value: "HTTP": '
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            'spec.containers[0].ports[0].name: Invalid value: "HTTP": must contain at least one letter (a-z)',
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
            'spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        ],
    ),
    Case(
        "containerPort missing and duplicate port name",
        containers({"name": "c", "ports": [{"name": "web", "containerPort": 80}, {"name": "web"}]}),
        [
            'spec.containers[0].ports[1].name: Duplicate value: "web"',
            "spec.containers[0].ports[1].containerPort: Required value",
        ],
    ),
    Case(
        "same hostPort twice",
        containers(
            {"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}]},
            {"name": "b", "ports": [{"containerPort": 81, "hostPort": 8080}]},
        ),
        ['spec.containers[1].ports[0].hostPort: Duplicate value: "/TCP/8080"'],
    ),
    Case(
        "hostNetwork needs hostPort == containerPort",
        {
            "spec": {
                "hostNetwork": True,
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 81}]}],
            }
        },
        [
            "spec.containers[0].ports[0].containerPort: Invalid value: 80: "
            "must match `hostPort` when `hostNetwork` is true"
        ],
    ),
]

RESOURCE_CASES = [
    Case("valid requests and limits", resources({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})),
    Case(
        "request above limit",
        resources({"cpu": "2"}, {"cpu": "1500m"}),
        [f'{R}.requests: Invalid value: "2": must be less than or equal to cpu limit of 1500m'],
    ),
    Case(
        "request equal to limit after parsing",
        resources({"memory": "1024Mi"}, {"memory": "1Gi"}),
    ),
    Case(
        "unparseable quantity",
        resources({"cpu": "one"}),
        [f'{R}.requests[cpu]: Invalid value: "one": {QUANTITY}'],
    ),
    Case(
        "negative quantity",
        resources(limits={"memory": "-1Mi"}),
        [f'{R}.limits[memory]: Invalid value: "-1Mi": must be greater than or equal to 0'],
    ),
    Case(
        "resource name without domain",
        resources({"gpu": "1"}),
        [
            f'{R}.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
            f'{R}.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers',
        ],
    ),
    Case(
        "standard but not a container resource",
        resources({"pods": "1"}),
        [f'{R}.requests[pods]: Invalid value: "pods": must be a standard resource for containers'],
    ),
    Case("extended resource requests equal limits", resources({"nvidia.com/gpu": 2}, {"nvidia.com/gpu": "2"})),
    Case("extended resource limit only", resources(limits={"nvidia.com/gpu": 8})),
    Case(
        "extended resource request without limit",
        resources({"nvidia.com/gpu": "1"}),
        [f"{R}.limits: Required value: Limit must be set for non overcommitable resources"],
    ),
    Case(
        "extended resource request below limit",
        resources({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"}),
        [f'{R}.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'],
    ),
    Case(
        "extended resource fraction",
        resources(limits={"example.com/foo": "500m"}),
        [f'{R}.limits[example.com/foo]: Invalid value: "500m": must be an integer'],
    ),
    Case(
        "hugepages without cpu or memory",
        resources({"hugepages-2Mi": "4Mi"}, {"hugepages-2Mi": "4Mi"}),
        [f"{R}: Forbidden: HugePages require cpu or memory"],
    ),
    Case(
        "overhead",
        {"spec": {"overhead": {"cpu": "x"}}},
        [f'spec.overhead.limits[cpu]: Invalid value: "x": {QUANTITY}'],
    ),
]

T = "spec.tolerations"
N = "spec.affinity.nodeAffinity"
REQ = f"{N}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"

PLACEMENT_CASES = [
    Case(
        "valid tolerations",
        {
            "spec": {
                "tolerations": [
                    {"operator": "Exists"},
                    {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 5},
                ]
            }
        },
    ),
    Case(
        "empty key needs Exists",
        {"spec": {"tolerations": [{"operator": "Equal"}]}},
        [
            f'{T}[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
            'which means "match all values and all keys"'
        ],
    ),
    Case(
        "Exists with a value",
        {"spec": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}},
        [
            f'{T}[0].operator: Invalid value: {{"key":"k","operator":"Exists","value":"v"}}: '
            "value must be empty when `operator` is 'Exists'"
        ],
    ),
    Case(
        "unknown operator and effect",
        {"spec": {"tolerations": [{"key": "k", "operator": "Gte", "effect": "NoRun"}]}},
        [
            f'{T}[0].operator: Unsupported value: "Gte": supported values: "Equal", "Exists"',
            f'{T}[0].effect: Unsupported value: "NoRun": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        ],
    ),
    Case(
        "tolerationSeconds without NoExecute",
        {"spec": {"tolerations": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 1}]}},
        [f"{T}[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"],
    ),
    Case(
        "toleration key and value",
        {"spec": {"tolerations": [{"key": "a b", "value": "-x"}]}},
        [f'{T}[0].key: Invalid value: "a b": {QUALIFIED_NAME}', f'{T}[0].operator: Invalid value: "-x": {LABEL_VALUE}'],
    ),
    Case(
        "nodeSelector key and value",
        {"spec": {"nodeSelector": {"/zone": "a!"}}},
        [
            'spec.nodeSelector: Invalid value: "/zone": prefix part must be non-empty',
            f'spec.nodeSelector: Invalid value: "a!": {LABEL_VALUE}',
        ],
    ),
    Case(
        "required node affinity without terms",
        {
            "spec": {
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
                }
            }
        },
        [f"{REQ}: Required value: must have at least one node selector term"],
    ),
    Case(
        "node affinity operators and values",
        {
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "a", "operator": "In"},
                                        {"key": "b", "operator": "Exists", "values": ["x"]},
                                        {"key": "c", "operator": "Gt", "values": ["1", "2"]},
                                        {"key": "d", "operator": "Lt", "values": ["-1.5"]},
                                        {"key": "e", "operator": "Near", "values": ["x"]},
                                    ]
                                }
                            ]
                        }
                    }
                }
            }
        },
        [
            f"{REQ}[0].matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'",
            f"{REQ}[0].matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or "
            "'DoesNotExist'",
            f"{REQ}[0].matchExpressions[2].values: Required value: must be specified single value when `operator` is "
            "'Lt' or 'Gt'",
            f'{REQ}[0].matchExpressions[3].values[0]: Invalid value: "-1.5": must be an integer',
            f'{REQ}[0].matchExpressions[3].values[0]: Invalid value: "-1.5": {LABEL_VALUE}',
            f'{REQ}[0].matchExpressions[4].operator: Invalid value: "Near": not a valid selector operator',
        ],
    ),
    Case(
        "matchFields only metadata.name with one value",
        {
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
                                        {"key": "spec.unschedulable", "operator": "Exists"},
                                    ]
                                }
                            ]
                        }
                    }
                }
            }
        },
        [
            f"{REQ}[0].matchFields[0].values: Required value: must be only one value when `operator` is 'In' or "
            "'NotIn' for node field selector",
            f'{REQ}[0].matchFields[1].operator: Invalid value: "Exists": not a valid selector operator',
            f'{REQ}[0].matchFields[1].key: Invalid value: "spec.unschedulable": not a valid field selector key',
        ],
    ),
    Case(
        "preferred term weight",
        {
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}
                        ]
                    }
                }
            }
        },
        [
            f"{N}.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
            "Invalid value: 0: must be in the range 1-100"
        ],
    ),
]

SCHEDULING_CASES = [
    Case("valid schedulingGroup", {"spec": {"schedulingGroup": {"podGroupName": "train.worker-0"}}}),
    Case(
        "empty schedulingGroup",
        {"spec": {"schedulingGroup": {}}},
        ['spec.schedulingGroup: Invalid value: "": must specify one of: `podGroupName`'],
    ),
    Case(
        "podGroupName not a DNS subdomain",
        {"spec": {"schedulingGroup": {"podGroupName": "Worker"}}},
        [f'spec.schedulingGroup.podGroupName: Invalid value: "Worker": {DNS_SUBDOMAIN}'],
    ),
    Case(
        "preemptionPolicy enum",
        {"spec": {"preemptionPolicy": "Sometimes"}},
        ['spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"'],
    ),
    Case(
        "priorityClassName format",
        {"spec": {"priorityClassName": "High"}},
        [f'spec.priorityClassName: Invalid value: "High": {DNS_SUBDOMAIN}'],
    ),
    Case(
        "scheduling gates: bad name, duplicate, nodeName set",
        {"spec": {"nodeName": "n1", "schedulingGates": [{"name": "a/b/c"}, {"name": "x"}, {"name": "x"}]}},
        [
            "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
            'spec.schedulingGates[0].name: Invalid value: "a/b/c": a qualified name must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with "
            "an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            'spec.schedulingGates[2]: Duplicate value: "x"',
        ],
    ),
    Case(
        "pod resource claims",
        {
            "spec": {
                "resourceClaims": [
                    {"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"},
                    {"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"},
                    {"name": "Net"},
                    {"resourceClaimName": "Shared_GPUs"},
                ]
            }
        },
        [
            'spec.resourceClaims[1].name: Duplicate value: "gpu"',
            'spec.resourceClaims[1]: Invalid value: "": at most one of `resourceClaimName` or '
            "`resourceClaimTemplateName` may be specified",
            f'spec.resourceClaims[2].name: Invalid value: "Net": {DNS_LABEL}',
            'spec.resourceClaims[2]: Invalid value: "": must specify one of: `resourceClaimName`, '
            "`resourceClaimTemplateName`",
            "spec.resourceClaims[3].name: Required value",
            f'spec.resourceClaims[3].resourceClaimName: Invalid value: "Shared_GPUs": {DNS_SUBDOMAIN}',
        ],
    ),
    Case(
        "pod resource claim name of the wrong type",
        {"spec": {"resourceClaims": [{"name": 5, "resourceClaimName": "x"}]}},
        ["spec.resourceClaims[0].name: Invalid value: 5: must be of type string"],
    ),
    Case(
        "metadata: name and namespace",
        {"metadata": {"name": "p", "namespace": "Team_A"}},
        [f'metadata.namespace: Invalid value: "Team_A": {DNS_LABEL}'],
    ),
    Case(
        "metadata: generateName only",
        {"metadata": {"name": DELETE, "generateName": "worker-"}},
    ),
    Case(
        "metadata: no name",
        {"metadata": {"name": DELETE}},
        ["metadata.name: Required value: name or generateName is required"],
    ),
]


@pytest.mark.parametrize("case", params(CONTAINER_CASES))
def test_containers(case: Case) -> None:
    assert errors_of(m.Pod, POD, case.patch) == case.want


@pytest.mark.parametrize("case", params(RESOURCE_CASES))
def test_resources(case: Case) -> None:
    assert errors_of(m.Pod, POD, case.patch) == case.want


@pytest.mark.parametrize("case", params(PLACEMENT_CASES))
def test_placement(case: Case) -> None:
    assert errors_of(m.Pod, POD, case.patch) == case.want


@pytest.mark.parametrize("case", params(SCHEDULING_CASES))
def test_scheduling_fields(case: Case) -> None:
    assert errors_of(m.Pod, POD, case.patch) == case.want
