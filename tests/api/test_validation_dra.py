"""DeviceClass and ResourceSlice validation (spec dra.md §1.1, §1.2, §1.5): one case per rule, exact messages.

The spec's H100 slice (§5.2), the NVIDIA GPU class and the example claims (§5.4) validate clean.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api import dra
from phalanx.api.validation import validate_object

from api_cases import DELETE, DNS_LABEL, DNS_SUBDOMAIN, QUALIFIED_NAME, QUANTITY, Case, errors_of, params
from dra_objects import EIGHT_H100, GPU_CLASS, H100_SLICE, SPEC_CLAIMS, cel, h100_device

C_IDENTIFIER = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)
NODE_SELECTION = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
PER_DEVICE = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to "
    "true in the ResourceSlice spec"
)
D0 = "spec.devices[0]"


def devices(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"devices": list(items)}}


def device(name: str = "gpu-0", **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def multi(capacity: dict[str, Any]) -> dict[str, Any]:
    """A slice with one multi-allocatable device with the given capacity map."""
    return devices(device(allowMultipleAllocations=True, capacity=capacity))


def policy(**fields: Any) -> dict[str, Any]:
    return {"memory": {"value": "40Gi", "requestPolicy": fields}}


RP = f"{D0}.capacity[memory].requestPolicy"

SLICE_CASES = [
    Case("the spec's H100 slice", {}),
    Case(
        "driver: required, too long, not a subdomain",
        {"spec": {"driver": "x" * 64}},
        ["spec.driver: Too long: may not be more than 63 bytes"],
    ),
    Case("driver required", {"spec": {"driver": ""}}, ["spec.driver: Required value"]),
    Case(
        "driver checked lower-cased",
        {"spec": {"driver": "GPU.nvidia.com"}},
        [],
    ),
    Case(
        "driver with an underscore",
        {"spec": {"driver": "gpu_nvidia.com"}},
        [f'spec.driver: Invalid value: "gpu_nvidia.com": {DNS_SUBDOMAIN}'],
    ),
    Case(
        "pool: name parts, count and generation",
        {"spec": {"pool": {"name": "rack-1//Node", "generation": -1, "resourceSliceCount": 0}}},
        [
            f'spec.pool.name: Invalid value: "": {DNS_SUBDOMAIN}',
            f'spec.pool.name: Invalid value: "Node": {DNS_SUBDOMAIN}',
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
            "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
        ],
    ),
    Case(
        "pool name with slashes and 254 characters",
        {"spec": {"pool": {"name": "a/" * 126 + "bc"}}},
        ["spec.pool.name: Too long: may not be more than 253 bytes"],
    ),
    Case("pool name required", {"spec": {"pool": {"name": ""}}}, ["spec.pool.name: Required value"]),
    Case("no node selection", {"spec": {"nodeName": DELETE}}, [f"spec: Required value: {NODE_SELECTION}"]),
    Case(
        "two node selections, false and empty ones",
        {"spec": {"allNodes": True, "perDeviceNodeSelection": False}},
        [
            "spec.perDeviceNodeSelection: Invalid value: false: must be either unset or set to true",
            f'spec: Invalid value: "{{`nodeName`, `allNodes`}}": {NODE_SELECTION}, but multiple fields are set',
        ],
    ),
    Case(
        "empty node name",
        {"spec": {"nodeName": "", "allNodes": True}},
        ['spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string'],
    ),
    Case(
        "node selector with two terms",
        {
            "spec": {
                "nodeName": DELETE,
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": []}, {"matchExpressions": []}]},
            }
        },
        ["spec.nodeSelector.nodeSelectorTerms: Invalid value: [{},{}]: must have exactly one node selector term"],
    ),
    Case(
        "node selector term rules apply",
        {
            "spec": {
                "nodeName": DELETE,
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": []}]}]
                },
            }
        },
        [
            "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified "
            "when `operator` is 'In' or 'NotIn'"
        ],
    ),
    Case(
        "devices and shared counters in one slice",
        {"spec": {"sharedCounters": [{"name": "cs", "counters": {"mem": {"value": "1Gi"}}}]}},
        ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'],
    ),
    Case(
        "129 devices",
        devices(*(device(f"d{i}") for i in range(129))),
        ["spec.devices: Too many: 129: must have at most 128 items"],
    ),
    Case("128 devices", devices(*(device(f"d{i}") for i in range(128)))),
    Case(
        "65 devices when one has taints",
        devices(device("d0", taints=[{"key": "k", "effect": "NoSchedule"}]), *(device(f"d{i}") for i in range(1, 65))),
        ["spec.devices: Too many: 65: must have at most 64 items"],
    ),
    Case(
        "device names: required, not a label, duplicate",
        devices(device(""), device("GPU-0"), device("gpu-1"), device("gpu-1")),
        [
            f"{D0}.name: Required value",
            f'spec.devices[1].name: Invalid value: "GPU-0": {DNS_LABEL}',
            'spec.devices[3]: Duplicate value: "gpu-1"',
        ],
    ),
    Case(
        "attribute names",
        devices(
            device(
                attributes={
                    "9lives": {"int": 1},
                    "x" * 33: {"int": 1},
                    "a/b/c": {"int": 1},
                    "/name": {"int": 1},
                    "Gpu.Example.com/ok": {"int": 1},
                    "gpu_example.com/ok": {"int": 1},
                }
            )
        ),
        [
            f'{D0}.attributes: Invalid value: "9lives": {C_IDENTIFIER}',
            f"{D0}.attributes: Too long: may not be more than 32 bytes",
            f'{D0}.attributes: Invalid value: "a/b/c": must not contain more than one slash',
            f'{D0}.attributes: Invalid value: "": the domain must not be empty',
            f'{D0}.attributes: Invalid value: "gpu_example.com": {DNS_SUBDOMAIN}',
        ],
    ),
    Case(
        "attribute values: union, semver, string length, empty lists",
        devices(
            device(
                attributes={
                    "none": {},
                    "two": {"int": 1, "bool": True},
                    "v": {"version": "1.02.3"},
                    "s": {"string": "x" * 65},
                    "l": {"ints": []},
                    "pre": {"version": "1.0.0-rc.1+build.5"},
                    "vs": {"versions": ["1.0.0", "1.0"]},
                }
            )
        ),
        [
            f'{D0}.attributes[none]: Invalid value: "": exactly one value must be specified',
            f'{D0}.attributes[two]: Invalid value: {{"int":1,"bool":true}}: exactly one value must be specified',
            f'{D0}.attributes[v].version: Invalid value: "1.02.3": must be a string compatible with semver.org spec 2.0.0',
            f"{D0}.attributes[s].string: Too long: may not be more than 64 bytes",
            f"{D0}.attributes[l].ints: Invalid value: []: must not be empty if specified",
            f'{D0}.attributes[vs].versions[1]: Invalid value: "1.0": must be a string compatible with semver.org spec '
            "2.0.0",
        ],
    ),
    Case(
        "33 attributes and capacities",
        devices(
            device(
                attributes={f"a{i}": {"int": i} for i in range(20)}, capacity={f"c{i}": {"value": 1} for i in range(13)}
            )
        ),
        [f"{D0}: Invalid value: 33: the total number of attributes and capacities must not exceed 32"],
    ),
    Case(
        "49 attribute values",
        devices(device(attributes={"a": {"ints": list(range(40))}, "b": {"strings": ["x"] * 9}})),
        [f"{D0}: Invalid value: 49: the total number of attribute values must not exceed 48"],
    ),
    Case(
        "capacity quantity and a policy without multiple allocations",
        devices(
            device(capacity={"memory": {"value": "80 Gi"}, "cores": {"value": 8, "requestPolicy": {"default": 1}}})
        ),
        [
            f'{D0}.capacity[memory].value: Invalid value: "80 Gi": {QUANTITY}',
            f"{D0}.capacity[cores].requestPolicy: Forbidden: allowMultipleAllocations must be true",
        ],
    ),
    Case(
        "valid request policies",
        multi(
            {
                **policy(default="8Gi", validRange={"min": "4Gi", "max": "40Gi", "step": "4Gi"}),
                "cores": {"value": 8, "requestPolicy": {"default": 2, "validValues": [1, 2, 4, 8]}},
            }
        ),
    ),
    Case(
        "policy with values and range",
        multi(policy(default="1Gi", validValues=["1Gi"], validRange={"min": "1Gi"})),
        [
            f'{RP}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time'
        ],
    ),
    Case(
        "valid values: default required",
        multi(policy(validValues=["1Gi"])),
        [f"{RP}.default: Required value: required when validValues is defined"],
    ),
    Case(
        "valid values: order, capacity, duplicates, default",
        multi(policy(default="3Gi", validValues=["2Gi", "1Gi", "1Gi", "80Gi"])),
        [
            f'{RP}.validValues[1]: Invalid value: "1Gi": values must be sorted in ascending order',
            f'{RP}.validValues[3]: Invalid value: "80Gi": option is larger than capacity value: 40Gi',
            f'{RP}.validValues[2]: Duplicate value: "1Gi"',
            f'{RP}.validValues: Invalid value: "3Gi": default value is not valid according to the requestPolicy',
        ],
    ),
    Case(
        "eleven valid values",
        multi(policy(default=1, validValues=list(range(1, 12)))),
        [f"{RP}.validValues: Too many: 11: must have at most 10 items"],
    ),
    Case(
        "valid range: min required",
        multi(policy(default="1Gi", validRange={"max": "2Gi"})),
        [f"{RP}.validRange.min: Required value: required when validRange is defined"],
    ),
    Case(
        "valid range: bounds against capacity and default",
        multi(policy(default="48Gi", validRange={"min": "42Gi", "max": "41Gi"})),
        [
            f'{RP}.validRange.min: Invalid value: "42Gi": min is larger than capacity value: 40Gi',
            f'{RP}.validRange.max: Invalid value: "42Gi": min is larger than max: 41Gi',
            f'{RP}.validRange.max: Invalid value: "41Gi": max is larger than capacity value: 40Gi',
            f'{RP}.validRange.default: Invalid value: "48Gi": default is more than max: 41Gi',
        ],
    ),
    Case(
        "valid range: default below min",
        multi(policy(default="1Gi", validRange={"min": "2Gi"})),
        [f'{RP}.validRange.default: Invalid value: "1Gi": default is less than min: 2Gi'],
    ),
    Case(
        "valid range: steps",
        multi(policy(default="6Gi", validRange={"min": "4Gi", "max": "34Gi", "step": "4Gi"})),
        [
            f'{RP}.validRange.step: Invalid value: "6Gi": value is not a multiple of a given step (4Gi) from (4Gi)',
            f'{RP}.validRange.step: Invalid value: "34Gi": value is not a multiple of a given step (4Gi) from (4Gi)',
        ],
    ),
    Case(
        "valid range: step too large or not positive",
        {
            "spec": {
                "devices": [
                    device(
                        "a",
                        allowMultipleAllocations=True,
                        capacity=policy(default="4Gi", validRange={"min": "4Gi", "step": "37Gi"}),
                    ),
                    device(
                        "b",
                        allowMultipleAllocations=True,
                        capacity=policy(default="4Gi", validRange={"min": "4Gi", "step": 0}),
                    ),
                ]
            }
        },
        [
            f'{D0}.capacity[memory].requestPolicy.validRange.step: Invalid value: "37Gi": one step 44023414784 is '
            "larger than capacity value: 40Gi",
            'spec.devices[1].capacity[memory].requestPolicy.validRange.step: Invalid value: "0": must be greater '
            "than zero",
        ],
    ),
    Case(
        "taints: key, value, effect; at most 16",
        devices(
            device(taints=[{"key": "", "value": "bad value", "effect": "PreferNoSchedule"}, {"key": "k"}]),
            device("b", taints=[{"key": "k", "effect": "None"}] * 17),
        ),
        [
            f'{D0}.taints[0].key: Invalid value: "": name part must be non-empty',
            f'{D0}.taints[0].key: Invalid value: "": {QUALIFIED_NAME}',
            f'{D0}.taints[0].value: Invalid value: "bad value": a valid label must be an empty string or consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            f'{D0}.taints[0].effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", '
            '"NoSchedule", "None"',
            f"{D0}.taints[1].effect: Required value",
            "spec.devices[1].taints: Too many: 17: must have at most 16 items",
        ],
    ),
    Case(
        "consumed counters: set required, counters required, duplicates, at most 2",
        devices(
            device(
                consumesCounters=[
                    {"counters": {}},
                    {"counterSet": "cs", "counters": {"Mem": {"value": "1Gi"}}},
                    {"counterSet": "cs", "counters": {"m": {"value": 1}}},
                ]
            ),
        ),
        [f"{D0}.consumesCounters: Too many: 3: must have at most 2 items"],
    ),
    Case(
        "consumed counters: entry rules",
        devices(device(consumesCounters=[{"counters": {}}, {"counterSet": "cs", "counters": {"Mem": {"value": "x"}}}])),
        [
            f"{D0}.consumesCounters[0].counterSet: Required value",
            f"{D0}.consumesCounters[0].counters: Required value",
            f'{D0}.consumesCounters[1].counters: Invalid value: "Mem": {DNS_LABEL}',
            f'{D0}.consumesCounters[1].counters[Mem].value: Invalid value: "x": {QUANTITY}',
        ],
    ),
    Case(
        "shared counter sets: names unique, at most 8, at most 32 counters",
        {
            "spec": {
                "devices": DELETE,
                "sharedCounters": [
                    {"name": "cs", "counters": {"c": {"value": 1}}},
                    {"name": "cs", "counters": {f"c{i}": {"value": 1} for i in range(33)}},
                ],
            }
        },
        [
            "spec.sharedCounters[1].counters: Too many: 33: must have at most 32 items",
            'spec.sharedCounters[1]: Duplicate value: "cs"',
        ],
    ),
    Case(
        "nine shared counter sets",
        {
            "spec": {
                "devices": DELETE,
                "sharedCounters": [{"name": f"cs{i}", "counters": {"c": {"value": 1}}} for i in range(9)],
            }
        },
        ["spec.sharedCounters: Too many: 9: must have at most 8 items"],
    ),
    Case(
        "per-device node fields without perDeviceNodeSelection",
        devices(device(nodeName="n1")),
        [
            f"{D0}: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
        ],
    ),
    Case(
        "per-device node selection: one each",
        {
            "spec": {
                "nodeName": DELETE,
                "perDeviceNodeSelection": True,
                "devices": [
                    device("a", nodeName="n1"),
                    device("b"),
                    device("c", nodeName="n1", allNodes=True),
                    device("d", nodeName="", allNodes=False, nodeSelector={"nodeSelectorTerms": [{}]}),
                ],
            }
        },
        [
            f"spec.devices[1]: Required value: {PER_DEVICE}",
            f'spec.devices[2]: Invalid value: "{{`nodeName`, `allNodes`}}": {PER_DEVICE}',
            'spec.devices[3].nodeName: Invalid value: "": must not be empty',
            "spec.devices[3].allNodes: Invalid value: false: must be either unset or set to true",
        ],
    ),
    Case(
        "binding conditions: limits, duplicates, overlap, pairing",
        devices(
            device(bindingConditions=["Attached", "Attached"], bindingFailureConditions=["Attached", "bad key!"]),
            device("b", bindingConditions=["Ready"]),
            device("c", bindingConditions=[f"C{i}" for i in range(5)], bindingFailureConditions=["F"]),
        ),
        [
            f'{D0}.bindingFailureConditions[1]: Invalid value: "bad key!": {QUALIFIED_NAME}',
            f'{D0}.bindingConditions[1]: Duplicate value: "Attached"',
            f'{D0}.bindingFailureConditions[0]: Invalid value: "Attached": bindingFailureConditions must not '
            "overlap with bindingConditions",
            "spec.devices[1].bindingFailureConditions: Invalid value: []: bindingFailureConditions are required to "
            "use bindingConditions",
            "spec.devices[2].bindingConditions: Too many: 5: must have at most 4 items",
        ],
    ),
]

CLASS_CASES = [
    Case("the NVIDIA GPU class", {}),
    Case(
        "name is a subdomain", {"metadata": {"name": "GPU"}}, [f'metadata.name: Invalid value: "GPU": {DNS_SUBDOMAIN}']
    ),
    Case(
        "selector without cel, empty and too long expressions",
        {"spec": {"selectors": [{}, cel(""), cel("x" * 10241)]}},
        [
            "spec.selectors[0].cel: Required value",
            "spec.selectors[1].cel.expression: Required value: expression must not be empty",
            "spec.selectors[2].cel.expression: Too long: may not be more than 10240 bytes",
        ],
    ),
    Case(
        "33 selectors",
        {"spec": {"selectors": [cel("true")] * 33}},
        ["spec.selectors: Too many: 33: must have at most 32 items"],
    ),
    Case(
        "config: opaque required, driver, parameters object and size",
        {
            "spec": {
                "config": [
                    {},
                    {"opaque": {"driver": "Bad_Driver", "parameters": [1]}},
                    {"opaque": {"driver": "gpu.nvidia.com"}},
                    {"opaque": {"driver": "gpu.nvidia.com", "parameters": {"blob": "x" * 10240}}},
                ]
            }
        },
        [
            "spec.config[0].opaque: Required value",
            f'spec.config[1].opaque.driver: Invalid value: "Bad_Driver": {DNS_SUBDOMAIN}',
            'spec.config[1].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object',
            "spec.config[2].opaque.parameters: Required value",
            "spec.config[3].opaque.parameters: Too long: may not be more than 10240 bytes",
        ],
    ),
    Case(
        "33 config entries",
        {"spec": {"config": [{"opaque": {"driver": "d", "parameters": {}}}] * 33}},
        ["spec.config: Too many: 33: must have at most 32 items"],
    ),
    Case(
        "CEL: compile error, not bool, too expensive",
        {
            "spec": {
                "selectors": [
                    cel("1 + 2"),
                    cel("device.driver =="),
                    cel(
                        "device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, "
                        "device.attributes.all(g, d == g))))"
                    ),
                ]
            }
        },
        [
            'spec.selectors[0].cel.expression: Invalid value: "1 + 2": must evaluate to bool or the unknown type, '
            "not int",
            'spec.selectors[1].cel.expression: Invalid value: "device.driver ==": compilation failed: ERROR: '
            "<input>:1:17: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', "
            "'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | device.driver ==\n"
            " | ................^",
            "spec.selectors[2].cel.expression: Forbidden: too complex, exceeds cost limit",
        ],
    ),
    Case(
        "extended resource name",
        {"spec": {"extendedResourceName": "gpu"}},
        ['spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name'],
    ),
]


@pytest.mark.parametrize("case", params(SLICE_CASES))
def test_resource_slice(case: Case) -> None:
    assert errors_of(dra.ResourceSlice, H100_SLICE, case.patch) == case.want


@pytest.mark.parametrize("case", params(CLASS_CASES))
def test_device_class(case: Case) -> None:
    assert errors_of(dra.DeviceClass, GPU_CLASS, case.patch) == case.want


def test_spec_example_claims_are_valid() -> None:
    assert validate_object(msgspec.convert(EIGHT_H100, dra.ResourceClaimTemplate)) == []
    for raw in SPEC_CLAIMS:
        assert validate_object(msgspec.convert(raw, dra.ResourceClaim)) == [], raw["metadata"]["name"]


def test_h100_devices_are_distinct() -> None:
    # The clean slice above is only meaningful if its devices really differ where a driver makes them differ.
    uuids = {h100_device(i)["attributes"]["uuid"]["string"] for i in range(8)}
    assert len(uuids) == 8
