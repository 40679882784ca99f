"""Validation of object metadata, Node, PriorityClass and PodDisruptionBudget, and ``validate`` through the loader.

Pod, Workload and PodGroup rules have their own tables in ``test_validation_pod.py`` and
``test_validation_workload.py``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from phalanx.api import models as m
from phalanx.api.loader import load
from phalanx.api.validation import validate

from api_cases import (
    DELETE,
    DNS_LABEL,
    DNS_SUBDOMAIN,
    LABEL_VALUE,
    QUALIFIED_NAME,
    QUANTITY,
    Case,
    Replace,
    errors_of,
    params,
)

NODE: dict[str, Any] = {"metadata": {"name": "node-1"}, "status": {"allocatable": {"cpu": "8", "memory": "64Gi"}}}
PDB: dict[str, Any] = {
    "metadata": {"name": "pdb", "namespace": "ns"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
}
PRIORITY_CLASS: dict[str, Any] = {"metadata": {"name": "high"}, "value": 1000}

META_CASES = [
    Case(
        "namespace on a cluster-scoped kind",
        {"metadata": {"namespace": "ns"}},
        ["metadata.namespace: Forbidden: not allowed on this type"],
    ),
    Case(
        "generateName keeps its trailing dash",
        {"metadata": {"name": DELETE, "generateName": "Node-"}},
        [f'metadata.generateName: Invalid value: "Node-": {DNS_SUBDOMAIN}'],
    ),
    Case(
        "name longer than 253",
        {"metadata": {"name": "a" * 254}},
        [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'],
    ),
    Case(
        "label keys and values",
        {"metadata": {"labels": {"example.com/ok": "yes", "Example.com/x": "v", "k": "a" * 64}}},
        [
            f'metadata.labels: Invalid value: "Example.com/x": prefix part {DNS_SUBDOMAIN}',
            'metadata.labels: Invalid value: "' + "a" * 64 + '": must be no more than 63 characters',
        ],
    ),
    Case(
        "annotation key",
        {"metadata": {"annotations": {"A b": "v", "UPPER.example.com/Key": "ok after lower-casing"}}},
        [f'metadata.annotations: Invalid value: "A b": {QUALIFIED_NAME}'],
    ),
    Case(
        "annotations over 256 KiB",
        {"metadata": {"annotations": {"a": "x" * (256 * 1024)}}},
        ["metadata.annotations: Too long: may not be more than 262144 bytes"],
    ),
    Case("annotations at 256 KiB", {"metadata": {"annotations": {"a": "x" * (256 * 1024 - 1)}}}),
    Case(
        "owner reference fields",
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": "apps/", "kind": "", "name": "", "uid": ""},
                    {"apiVersion": "a/b/v1", "kind": "K", "name": "n", "uid": "u"},
                    {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"},
                ]
            }
        },
        [
            'metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty',
            'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
            'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
            'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
            'metadata.ownerReferences.apiVersion: Invalid value: "a/b/v1": version must not be empty',
            'metadata.ownerReferences: Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: '
            "/v1, Kind=Event is disallowed from being an owner",
        ],
    ),
    Case(
        "two controllers",
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
                    {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True},
                ]
            }
        },
        [
            'metadata.ownerReferences: Invalid value: [{"apiVersion":"v1","kind":"A","name":"a","uid":"1",'
            '"controller":true},{"apiVersion":"v1","kind":"B","name":"b","uid":"2","controller":true}]: '
            'Only one reference can have Controller set to true. Found "true" in references for A/a and B/b'
        ],
    ),
    Case(
        "finalizer not a qualified name",
        {"metadata": {"finalizers": ["example.com/ok", "bad finalizer"]}},
        [f'metadata.finalizers[1]: Invalid value: "bad finalizer": {QUALIFIED_NAME}'],
    ),
]

NODE_CASES = [
    Case("valid node", {"spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}}),
    Case(
        "taint key, value and effect",
        {"spec": {"taints": [{"key": "", "value": "a b", "effect": "Sometimes"}, {"key": "k"}]}},
        [
            'spec.taints[0].key: Invalid value: "": name part must be non-empty',
            f'spec.taints[0].key: Invalid value: "": {QUALIFIED_NAME}',
            f'spec.taints[0].value: Invalid value: "a b": {LABEL_VALUE}',
            'spec.taints[0].effect: Unsupported value: "Sometimes": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"',
            "spec.taints[1].effect: Required value",
        ],
    ),
    Case(
        "duplicate taint key and effect",
        {
            "spec": {
                "taints": [
                    {"key": "k", "value": "a", "effect": "NoSchedule"},
                    {"key": "k", "value": "b", "effect": "NoExecute"},
                    {"key": "k", "value": "c", "effect": "NoSchedule"},
                ]
            }
        },
        [
            'spec.taints[2]: Duplicate value: {"key":"k","effect":"NoSchedule"}: '
            "taints must be unique by key and effect pair"
        ],
    ),
    Case(
        "resource quantities and names",
        {
            "status": {
                "capacity": {"cpu": "-2", "nvidia.com/gpu": "0.5", "pods": 110},
                "allocatable": Replace({"memory": "64GB", "gpus": 8}),
            }
        },
        [
            'status.capacity.cpu: Invalid value: "-2": must be greater than or equal to 0',
            'status.capacity.nvidia.com/gpu: Invalid value: "0.5": must be an integer',
            f'status.allocatable.memory: Invalid value: "64GB": {QUANTITY}',
            'status.allocatable.gpus: Invalid value: "gpus": must be a standard resource type or fully qualified',
        ],
    ),
]

PRIORITY_CLASS_CASES = [
    Case("valid user class", {"value": 1_000_000_000, "preemptionPolicy": "Never"}),
    Case("valid system class", {"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000}),
    Case("value missing", {"value": DELETE}, ["value: Required value"]),
    Case(
        "value above the user maximum",
        {"value": 1_000_000_001},
        ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"],
    ),
    Case(
        "unknown system- name",
        {"metadata": {"name": "system-high"}},
        [
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
            "error: system-high is not a known system priority class"
        ],
    ),
    Case(
        "system class with the wrong value",
        {"metadata": {"name": "system-cluster-critical"}, "value": 5},
        [
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
            "error: value of system-cluster-critical PriorityClass must be 2000000000"
        ],
    ),
    Case(
        "preemptionPolicy enum",
        {"preemptionPolicy": "Always"},
        ['preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"'],
    ),
]

PDB_CASES = [
    Case("valid minAvailable percent", {"spec": {"minAvailable": "50%"}}),
    Case("valid maxUnavailable only", {"spec": {"minAvailable": DELETE, "maxUnavailable": 0}}),
    Case("valid nil selector", {"spec": {"selector": DELETE}}),
    Case(
        "both set",
        {"spec": {"maxUnavailable": "10%", "selector": DELETE}},
        [
            'spec: Invalid value: {"minAvailable":1,"maxUnavailable":"10%"}: '
            "minAvailable and maxUnavailable cannot be both set"
        ],
    ),
    Case(
        "negative and over 100%",
        {"spec": {"minAvailable": -1, "selector": DELETE}},
        ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"],
    ),
    Case(
        "percent above 100",
        {"spec": {"minAvailable": DELETE, "maxUnavailable": "101%"}},
        ['spec.maxUnavailable: Invalid value: "101%": must not be greater than 100%'],
    ),
    Case(
        "not a percent",
        {"spec": {"minAvailable": "half"}},
        [
            'spec.minAvailable: Invalid value: "half": a valid percent string must be a numeric string followed by an '
            "ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
        ],
    ),
    Case(
        "selector expressions",
        {
            "spec": {
                "selector": {
                    "matchLabels": {"app": "a b"},
                    "matchExpressions": [
                        {"key": "tier", "operator": "In"},
                        {"key": "role", "operator": "DoesNotExist", "values": ["x"]},
                        {"key": "x y", "operator": "Like", "values": ["-"]},
                    ],
                }
            }
        },
        [
            f'spec.selector.matchLabels: Invalid value: "a b": {LABEL_VALUE}',
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or "
            "'NotIn'",
            "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' "
            "or 'DoesNotExist'",
            'spec.selector.matchExpressions[2].operator: Invalid value: "Like": not a valid selector operator',
            f'spec.selector.matchExpressions[2].key: Invalid value: "x y": {QUALIFIED_NAME}',
            f'spec.selector.matchExpressions[2].values[0]: Invalid value: "-": {LABEL_VALUE}',
        ],
    ),
    Case(
        "unhealthyPodEvictionPolicy enum",
        {"spec": {"unhealthyPodEvictionPolicy": "Never"}},
        [
            'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: '
            '"AlwaysAllow", "IfHealthyBudget"'
        ],
    ),
    Case(
        "namespace not a DNS label",
        {"metadata": {"namespace": "a.b"}},
        [f'metadata.namespace: Invalid value: "a.b": {DNS_LABEL}'],
    ),
]


@pytest.mark.parametrize("case", params(META_CASES))
def test_object_meta(case: Case) -> None:
    assert errors_of(m.Node, NODE, case.patch) == case.want


@pytest.mark.parametrize("case", params(NODE_CASES))
def test_node(case: Case) -> None:
    assert errors_of(m.Node, NODE, case.patch) == case.want


@pytest.mark.parametrize("case", params(PRIORITY_CLASS_CASES))
def test_priority_class(case: Case) -> None:
    assert errors_of(m.PriorityClass, PRIORITY_CLASS, case.patch) == case.want


@pytest.mark.parametrize("case", params(PDB_CASES))
def test_pod_disruption_budget(case: Case) -> None:
    assert errors_of(m.PodDisruptionBudget, PDB, case.patch) == case.want


# --- through the loader ----------------------------------------------------------------------------------------

SNAPSHOT = """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
spec:
  taints:
  - key: gpu
    effect: NoRun
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
spec:
  schedulingGroup:
    podGroupName: train
  containers:
  - name: main
    resources:
      requests:
        cpu: "4"
      limits:
        cpu: "2"
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata:
  name: train
  namespace: ml
spec:
  schedulingPolicy:
    gang:
      minCount: -1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ignored
"""


def test_validate_renders_file_line_object_and_path(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.yaml"
    path.write_text(SNAPSHOT)
    problems = validate(load([str(path)]))
    # A field is located at its key's line, also when its value is a map (requests).
    assert [p.render() for p in problems] == [
        f'{path}:8: Node node-1: spec.taints[0].effect: Unsupported value: "NoRun": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        f'{path}:21: Pod ml/trainer: spec.containers[0].resources.requests: Invalid value: "4": '
        "must be less than or equal to cpu limit of 2",
        f"{path}:34: PodGroup ml/train: spec.schedulingPolicy.gang.minCount: Invalid value: -1: "
        "must be greater than or equal to 1",
    ]


def test_validate_keeps_input_order_across_kinds_and_files(tmp_path: Path) -> None:
    first = tmp_path / "a.yaml"
    second = tmp_path / "b.yaml"
    bad_group = "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec: {}\n"
    bad_node = "apiVersion: v1\nkind: Node\nmetadata: {name: N}\n"
    first.write_text(bad_group)
    second.write_text(bad_node)
    problems = validate(load([str(first), str(second)]))
    assert [(p.kind, p.source.path, p.error.path) for p in problems] == [
        ("PodGroup", str(first), "spec.schedulingPolicy"),
        ("Node", str(second), "metadata.name"),
    ]


def test_validate_clean_snapshot_has_no_problems(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            apiVersion: v1
            kind: List
            items:
            - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "8", nvidia.com/gpu: 8}}}
            - apiVersion: v1
              kind: Pod
              metadata: {name: p, namespace: ml}
              spec:
                containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
                schedulingGroup: {podGroupName: g}
            - apiVersion: scheduling.k8s.io/v1alpha2
              kind: PodGroup
              metadata: {name: g, namespace: ml}
              spec: {schedulingPolicy: {gang: {minCount: 1}}}
            """
        )
    )
    assert validate(load([str(path)])) == []
