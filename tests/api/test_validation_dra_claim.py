"""ResourceClaim and ResourceClaimTemplate validation (spec dra.md §1.3-§1.4): spec rules shared by both, and a
claim's status. One case per rule, exact paths and messages."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import dra
from phalanx.api import models as m

from api_cases import DNS_LABEL, DNS_SUBDOMAIN, QUANTITY, Case, errors_of, params
from dra_objects import EIGHT_H100, PREFER_H200, cel

R = "spec.devices.requests"
REF = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
UID = "4b9f0a9e-3c1d-4f8e-9a55-2f8a6c1e7d01"
EXACTLY = "exactly one of `exactly` or `firstAvailable` is required"


def requests(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"devices": {"requests": list(items)}}}


def exact(name: str = "gpus", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.nvidia.com", **fields}}


def sub(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": "gpu.nvidia.com", **fields}


def devices(**fields: Any) -> dict[str, Any]:
    return {"spec": {"devices": fields}}


CLAIM: dict[str, Any] = {
    "metadata": {"name": "c", "namespace": "ml"},
    "spec": {"devices": {"requests": [exact(count=2)]}},
}

SPEC_CASES = [
    Case("valid claim", {}),
    Case("the spec's prefer-H200 claim", {"spec": PREFER_H200["spec"]}),
    Case(
        "33 requests",
        requests(*(exact(f"r{i}") for i in range(33))),
        [f"{R}: Too many: 33: must have at most 32 items"],
    ),
    Case(
        "request names: required, label, duplicate",
        requests(exact(""), exact("GPUs"), exact("a"), exact("a")),
        [
            f"{R}[0].name: Required value",
            f'{R}[1].name: Invalid value: "GPUs": {DNS_LABEL}',
            f'{R}[3]: Duplicate value: "a"',
        ],
    ),
    Case("neither exactly nor firstAvailable", requests({"name": "r"}), [f"{R}[0]: Required value: {EXACTLY}"]),
    Case(
        "both exactly and firstAvailable",
        requests({**exact("r"), "firstAvailable": [sub("a")]}),
        [f"{R}[0]: Invalid value: null: {EXACTLY}, but multiple fields are set"],
    ),
    Case(
        "device class: required, subdomain",
        requests({"name": "a", "exactly": {}}, exact("b", deviceClassName="GPU")),
        [
            f"{R}[0].exactly.deviceClassName: Required value",
            f'{R}[1].exactly.deviceClassName: Invalid value: "GPU": {DNS_SUBDOMAIN}',
        ],
    ),
    Case(
        "allocation modes and counts",
        requests(
            exact("a", allocationMode="All", count=2),
            exact("b", count=-1),
            exact("c", allocationMode="Some"),
            exact("d", allocationMode="All"),
            exact("e", allocationMode="ExactCount"),
        ),
        [
            f"{R}[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
            f"{R}[1].exactly.count: Invalid value: -1: must be greater than zero",
            f'{R}[2].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"',
        ],
    ),
    Case(
        "selectors: at most 32, cel required",
        requests(exact("a", selectors=[cel("true")] * 33), exact("b", selectors=[{}])),
        [
            f"{R}[0].exactly.selectors: Too many: 33: must have at most 32 items",
            f"{R}[1].exactly.selectors[0].cel: Required value",
        ],
    ),
    Case(
        "tolerations: at most 16, key, operator, value, effect",
        requests(
            exact("a", tolerations=[{"operator": "Exists"}] * 17),
            exact(
                "b",
                tolerations=[
                    {"key": "bad key", "operator": "Exists", "value": "v"},
                    {"key": "k", "operator": "Gt", "effect": "PreferNoSchedule"},
                    {"key": "k", "value": "bad value"},
                    {"key": "k", "operator": "", "effect": "NoExecute", "tolerationSeconds": 30},
                ],
            ),
        ),
        [
            f"{R}[0].exactly.tolerations: Too many: 17: must have at most 16 items",
            f'{R}[1].exactly.tolerations[0].key: Invalid value: "bad key": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            f'{R}[1].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator `Exists`',
            f'{R}[1].exactly.tolerations[1].operator: Unsupported value: "Gt": supported values: "Equal", "Exists"',
            f'{R}[1].exactly.tolerations[1].effect: Unsupported value: "PreferNoSchedule": supported values: '
            '"NoExecute", "NoSchedule", "None"',
            f'{R}[1].exactly.tolerations[2].value: Invalid value: "bad value": a valid label must be an empty string '
            "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ],
    ),
    Case(
        "capacity requests: names and quantities",
        requests(exact(capacity={"requests": {"memory": "10Gi", "9x": "1", "cores": "lots", "neg": "-1"}})),
        [
            f'{R}[0].exactly.capacity.requests: Invalid value: "9x": a valid C identifier must start with alphabetic '
            "character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',"
            "  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
            f'{R}[0].exactly.capacity.requests[cores]: Invalid value: "lots": {QUANTITY}',
            f'{R}[0].exactly.capacity.requests[neg]: Invalid value: "-1": must be greater than or equal to 0',
        ],
    ),
    Case(
        "first available: 1..8 subrequests, names, duplicates, sub rules",
        requests(
            {"name": "a", "firstAvailable": [sub(f"s{i}") for i in range(9)]},
            {
                "name": "b",
                "firstAvailable": [sub(""), sub("x", allocationMode="All", count=1), sub("x", deviceClassName="")],
            },
        ),
        [
            f"{R}[0].firstAvailable: Too many: 9: must have at most 8 items",
            f"{R}[1].firstAvailable[0].name: Required value",
            f"{R}[1].firstAvailable[1].count: Invalid value: 1: must not be specified when allocationMode is 'All'",
            f"{R}[1].firstAvailable[2].deviceClassName: Required value",
            f'{R}[1].firstAvailable[2]: Duplicate value: "x"',
        ],
    ),
    Case(
        "constraints: union, full names, references",
        devices(
            requests=[exact("gpus"), {"name": "alt", "firstAvailable": [sub("h100")]}],
            constraints=[
                {"requests": ["gpus", "alt/h100", "alt"], "matchAttribute": "gpu.nvidia.com/partition4"},
                {"requests": ["nic", "alt/h200", "a/b/c", "gpus", "gpus"], "matchAttribute": "numaNode"},
                {},
                {"matchAttribute": "a.com/x", "distinctAttribute": "a.com/y"},
                {"distinctAttribute": "/pfName"},
            ],
        ),
        [
            f'spec.devices.constraints[1].requests[0]: Invalid value: "nic": {REF}',
            f'spec.devices.constraints[1].requests[1]: Invalid value: "alt/h200": {REF}',
            f'spec.devices.constraints[1].requests[2]: Invalid value: "a/b/c": {REF}',
            'spec.devices.constraints[1].requests[4]: Duplicate value: "gpus"',
            'spec.devices.constraints[1].matchAttribute: Invalid value: "numaNode": a fully qualified name must be a '
            "domain and a name separated by a slash",
            'spec.devices.constraints[2]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
            "required, but multiple fields are set",
            'spec.devices.constraints[3]: Invalid value: "{matchAttribute, distinctAttribute}": must specify exactly '
            "one of: `matchAttribute`, `distinctAttribute`",
            'spec.devices.constraints[4].distinctAttribute: Invalid value: "": the domain must not be empty',
        ],
    ),
    Case(
        "33 constraints",
        devices(requests=[exact()], constraints=[{"matchAttribute": "a.com/x"}] * 33),
        ["spec.devices.constraints: Too many: 33: must have at most 32 items"],
    ),
    Case(
        "config: references and opaque",
        devices(
            requests=[exact()],
            config=[{"requests": ["gpus", "nope"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}, {}],
        ),
        [
            f'spec.devices.config[0].requests[1]: Invalid value: "nope": {REF}',
            "spec.devices.config[1].opaque: Required value",
        ],
    ),
    Case(
        "33 config entries",
        devices(requests=[exact()], config=[{"opaque": {"driver": "d", "parameters": {}}}] * 33),
        ["spec.devices.config: Too many: 33: must have at most 32 items"],
    ),
]


def allocation(*results: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"devices": {"results": list(results)}, **fields}


def result(device: str = "gpu-0", **fields: Any) -> dict[str, Any]:
    return {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "node-1", "device": device, **fields}


def consumer(uid: str) -> dict[str, Any]:
    return {"resource": "pods", "name": "p", "uid": uid}


A = "status.allocation.devices"
STATUS_CASES = [
    Case(
        "valid allocated and reserved claim",
        {
            "status": {
                "allocation": allocation(
                    result("gpu-0"),
                    result("gpu-1", shareID=UID),
                    nodeSelector={
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
                        ]
                    },
                ),
                "reservedFor": [
                    consumer("u1"),
                    {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "pg", "uid": "u2"},
                ],
                "devices": [{"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-1", "shareID": UID}],
            }
        },
    ),
    Case(
        "reservedFor without allocation, entry fields, duplicates",
        {"status": {"reservedFor": [{}, consumer("u1"), consumer("u1")]}},
        [
            "status.reservedFor[0].resource: Required value",
            "status.reservedFor[0].name: Required value",
            "status.reservedFor[0].uid: Required value",
            'status.reservedFor[2]: Duplicate value: "u1"',
            "status.reservedFor: Forbidden: may not be specified when `allocated` is not set",
        ],
    ),
    Case(
        "257 consumers",
        {"status": {"allocation": allocation(result()), "reservedFor": [consumer(f"u{i}") for i in range(257)]}},
        ["status.reservedFor: Too many: 257: must have at most 256 items"],
    ),
    Case(
        "33 results",
        {"status": {"allocation": allocation(*(result(f"gpu-{i}") for i in range(33)))}},
        [f"{A}.results: Too many: 33: must have at most 32 items"],
    ),
    Case(
        "result fields",
        {"status": {"allocation": allocation(result("GPU 0", request="nope", driver="", pool="", shareID="ABC"))}},
        [
            f'{A}.results[0].request: Invalid value: "nope": {REF}',
            f"{A}.results[0].driver: Required value",
            f"{A}.results[0].pool: Required value",
            f'{A}.results[0].device: Invalid value: "GPU 0": {DNS_LABEL}',
            f'{A}.results[0].shareID: Invalid value: "ABC": uid must be in RFC 4122 normalized form, '
            "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
        ],
    ),
    Case(
        "allocation config: source and references",
        {
            "status": {
                "allocation": {
                    "devices": {
                        "results": [result()],
                        "config": [
                            {"source": "FromDriver", "requests": ["gpus"], "opaque": {"driver": "d", "parameters": {}}},
                            {"requests": ["x"], "opaque": {"driver": "d", "parameters": {}}},
                        ],
                    }
                }
            }
        },
        [
            f'{A}.config[0].source: Unsupported value: "FromDriver": supported values: "FromClaim", "FromClass"',
            f"{A}.config[1].source: Required value",
            f'{A}.config[1].requests[0]: Invalid value: "x": {REF}',
        ],
    ),
    Case(
        "device status must name an allocated device",
        {
            "status": {
                "allocation": allocation(result()),
                "devices": [
                    {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-7", "conditions": [{}] * 9},
                    {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-7"},
                ],
            }
        },
        [
            'status.devices[0]: Invalid value: "gpu.nvidia.com/node-1/gpu-7": must be an allocated device in the claim',
            "status.devices[0].conditions: Too many: 9: must have at most 8 items",
            'status.devices[1]: Invalid value: "gpu.nvidia.com/node-1/gpu-7": must be an allocated device in the claim',
            'status.devices[1]: Duplicate value: "gpu.nvidia.com/node-1/gpu-7"',
        ],
    ),
]

TEMPLATE_CASES = [
    Case("the spec's eight-H100 template", {}),
    Case(
        "template spec paths and template metadata",
        {"spec": {"metadata": {"labels": {"bad key!": "v"}}, "spec": {"devices": {"requests": [{"name": "gpus"}]}}}},
        [
            'spec.metadata.labels: Invalid value: "bad key!": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
            "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            f"spec.spec.devices.requests[0]: Required value: {EXACTLY}",
        ],
    ),
    Case(
        "template annotation keys are checked lower-cased, shown as written",
        {"spec": {"metadata": {"annotations": {"Example.com/Note": "ok", "Bad Key": "v"}}}},
        [
            'spec.metadata.annotations: Invalid value: "Bad Key": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ],
    ),
]


@pytest.mark.parametrize("case", params(SPEC_CASES + STATUS_CASES))
def test_resource_claim(case: Case) -> None:
    assert errors_of(dra.ResourceClaim, CLAIM, case.patch) == case.want


@pytest.mark.parametrize("case", params(TEMPLATE_CASES))
def test_resource_claim_template(case: Case) -> None:
    assert errors_of(dra.ResourceClaimTemplate, EIGHT_H100, case.patch) == case.want


POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ml"},
    "spec": {
        "containers": [{"name": "c"}],
        "resourceClaims": [
            {"name": "gpus", "resourceClaimTemplateName": "eight-h100"},
            {"name": "nic", "resourceClaimName": "nic-0"},
        ],
    },
}


def claim_refs(*refs: dict[str, str], init: bool = False) -> dict[str, Any]:
    ctr = {"name": "i" if init else "c", "resources": {"claims": list(refs)}}
    return {"spec": {"initContainers": [ctr]} if init else {"containers": [ctr]}}


POD_CASES = [
    Case("containers use the pod's claims", claim_refs({"name": "gpus"}, {"name": "nic", "request": "port"})),
    Case(
        "container claim refs: unknown name, empty name, bad request, duplicates",
        claim_refs(
            {"name": "gpu"}, {"name": ""}, {"name": "gpus", "request": "Port_1"}, {"name": "gpus"}, {"name": "gpus"}
        ),
        [
            'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
            "pod.spec.resourceClaims: gpus, nic",
            "spec.containers[0].resources.claims[1]: Required value",
            f'spec.containers[0].resources.claims[2].request: Invalid value: "Port_1": {DNS_LABEL}',
            'spec.containers[0].resources.claims[4]: Duplicate value: "gpus"',
        ],
    ),
    Case(
        "init container claim refs without pod claims",
        {
            "spec": {
                "initContainers": [{"name": "i", "resources": {"claims": [{"name": "gpus"}]}}],
                "resourceClaims": [],
            }
        },
        [
            'spec.initContainers[0].resources.claims[0]: Not found: "gpus": must be one of the names in '
            "pod.spec.resourceClaims which is empty"
        ],
    ),
    Case(
        "same claim, different requests",
        claim_refs({"name": "nic", "request": "a"}, {"name": "nic", "request": "b"}, {"name": "nic", "request": "a"}),
        ['spec.containers[0].resources.claims[2]: Duplicate value: "nic/a"'],
    ),
    Case(
        "pod-level resources claims",
        {"spec": {"resources": {"claims": [{"name": "fpga"}]}}},
        ['spec.resources.claims[0]: Not found: "fpga": must be one of the names in pod.spec.resourceClaims: gpus, nic'],
    ),
    Case(
        "status claim statuses",
        {
            "status": {
                "resourceClaimStatuses": [
                    {"name": "gpus", "resourceClaimName": "p-gpus-x7k2"},
                    {"name": "nic"},
                    {"name": "gpus", "resourceClaimName": "P_GPUS"},
                    {"name": "tpu"},
                ]
            }
        },
        [
            'status.resourceClaimStatuses[2].name: Duplicate value: "gpus"',
            f'status.resourceClaimStatuses[2].name: Invalid value: "P_GPUS": {DNS_SUBDOMAIN}',
            'status.resourceClaimStatuses[3].name: Invalid value: "tpu": must match the name of an entry in '
            "`spec.resourceClaims`",
        ],
    ),
]


@pytest.mark.parametrize("case", params(POD_CASES))
def test_pod_claim_references(case: Case) -> None:
    assert errors_of(m.Pod, POD, case.patch) == case.want
