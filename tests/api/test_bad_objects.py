"""Issue 19's failure classes on Kubernetes objects: objects skipped silently, Python text in messages, integers
beyond the API's int32/int64, unreadable files, and admission failures that named no file."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.api.errors import InputError
from phalanx.api.loader import load
from phalanx.api.validation import validate

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8', pods: '10'}}\n"


def problems(tmp_path: Path, text: str) -> list[str]:
    """Every line `phalanx validate` prints for ``text`` (loader problems, or validation problems)."""
    path = tmp_path / "x.yaml"
    path.write_text(text)
    try:
        inv = load([str(path)])
    except InputError as exc:
        return [line.replace(str(path), "x.yaml") for line in exc.lines]
    return [p.render().replace(str(path), "x.yaml") for p in validate(inv)]


def warnings(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    return [w.replace(str(path), "x.yaml") for w in load([str(path)]).warnings]


# --- skipped objects are warnings ---------------------------------------------------------------------------------


def test_a_pod_without_api_version_is_a_warning_at_its_line(tmp_path: Path) -> None:
    pod = "kind: Pod\nmetadata: {name: p, namespace: ml}\nspec: {containers: [{name: c, resources: {requests: {cpu: '-1'}}}]}\n"
    assert warnings(tmp_path, NODE + "---\n" + pod) == [
        "x.yaml:6: Pod ml/p: apiVersion: Required value: the object is skipped"
    ]


def test_an_object_without_kind_and_an_unsupported_version_are_warnings(tmp_path: Path) -> None:
    text = "apiVersion: v1\nmetadata: {name: a}\n---\napiVersion: scheduling.k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\n"
    assert warnings(tmp_path, text) == [
        "x.yaml:1: object a: kind: Required value: the object is skipped",
        'x.yaml:4: PodGroup default/g: apiVersion: Unsupported value: "scheduling.k8s.io/v1alpha1": '
        'supported values: "scheduling.k8s.io/v1alpha2": the object is skipped'.replace("default/g", "g"),
    ]


def test_kinds_phalanx_does_not_read_are_one_warning_per_file_and_kind(tmp_path: Path) -> None:
    deployment = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web%d, namespace: shop}\n"
    text = NODE + "".join(deployment % i for i in range(3))
    assert warnings(tmp_path, text) == [
        "x.yaml:6: Deployment shop/web0: skipped: phalanx does not read apps/v1 Deployment (2 more in this file)"
    ]


def test_a_snapshot_of_known_kinds_has_no_warnings(tmp_path: Path) -> None:
    assert warnings(tmp_path, NODE) == []


# --- messages in Kubernetes' words --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        (
            "metadata: {name: p, namespace: null}\nspec: {containers: [{name: c}]}",
            "x.yaml:3: Pod p: metadata.namespace: Invalid value: null: must be of type string",
        ),
        (
            "metadata: {name: p}\nspec: {containers: [{name: null}]}",
            "x.yaml:4: Pod p: spec.containers[0].name: Invalid value: null: must be of type string",
        ),
        (
            "metadata: {name: p}\nspec: {priority: high, containers: [{name: c}]}",
            'x.yaml:4: Pod p: spec.priority: Invalid value: "high": must be of type integer',
        ),
        (
            "metadata: {name: p}\nspec: {priority: 1.0e+30, containers: [{name: c}]}",
            "x.yaml:4: Pod p: spec.priority: Invalid value: 1e+30: must be of type integer",
        ),
        (
            "metadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: [1]}}}]}",
            "x.yaml:4: Pod p: spec.containers[0].resources.requests[cpu]: Invalid value: [1]: must be of type number or string",
        ),
    ],
    ids=["null-namespace", "null-name", "string-for-int", "float-for-int", "list-for-quantity"],
)
def test_decoding_errors_show_the_value_and_the_json_type(tmp_path: Path, spec: str, line: str) -> None:
    assert problems(tmp_path, f"apiVersion: v1\nkind: Pod\n{spec}\n") == [line]


# --- integers within the API's ranges -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\n"
            "spec: {schedulingPolicy: {gang: {minCount: 2147483648}}}\n",
            "x.yaml:4: PodGroup default/g: spec.schedulingPolicy.gang.minCount: Invalid value: 2147483648: must be of type int32",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: 3000000000, containers: [{name: c}]}\n",
            "x.yaml:4: Pod default/p: spec.priority: Invalid value: 3000000000: must be of type int32",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n"
            "  tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 9223372036854775808}]\n",
            "x.yaml:6: Pod default/p: spec.tolerations[0].tolerationSeconds: Invalid value: 9223372036854775808: "
            "must be of type int64",
        ),
        (
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  backoffLimit: 2147483648\n"
            "  template: {spec: {containers: [{name: c}]}}\n",
            "x.yaml:5: Job default/j: spec.backoffLimit: Invalid value: 2147483648: must be of type int32",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  affinity:\n"
            "    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n"
            "        - matchExpressions: [{key: k, operator: Gt, values: ['99999999999999999999']}]\n",
            "x.yaml:10: Pod default/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            '.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "99999999999999999999": must be an integer',
        ),
    ],
    ids=["minCount", "priority", "tolerationSeconds", "backoffLimit", "gt-beyond-int64"],
)
def test_integers_beyond_the_api_range_are_errors(tmp_path: Path, text: str, line: str) -> None:
    assert problems(tmp_path, text) == [line]


def test_an_indexed_job_is_at_most_100000_wide_and_named_as_a_label_value(tmp_path: Path) -> None:
    name = "j" * 64
    text = (
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n  parallelism: 100001\n"
        "  completions: 100001\n  completionMode: Indexed\n  template: {spec: {containers: [{name: c}]}}\n"
    )
    assert problems(tmp_path, text) == [
        f"x.yaml:5: Job default/{name}: spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 "
        "when completion mode is Indexed",
        f'x.yaml:8: Job default/{name}: spec.template.labels: Invalid value: "{name}": must be no more than 63 characters',
    ]


# --- files --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"kind: Pod\nmetadata: {name: caf\xe9}\n", "x.yaml: cannot read: not UTF-8 text (byte 0xe9 on line 2)"),
        (bytes(range(256)), "x.yaml: cannot read: not UTF-8 text (byte 0x80 on line 2)"),
        (b"kind: Pod\x00\n", "x.yaml: cannot read: a binary file, not text (it contains NUL bytes)"),
    ],
    ids=["latin-1", "binary", "nul"],
)
def test_a_file_that_is_not_text_is_one_clear_error(tmp_path: Path, data: bytes, line: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        load([str(path)])
    assert [msg.replace(str(path), "x.yaml") for msg in err.value.lines] == [line]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_byte_order_mark_is_not_part_of_the_document(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"n{suffix}"
    body = NODE if suffix == ".yaml" else '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}'
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert [n.metadata.name for n in load([str(path)]).nodes] == ["n1"]


# --- admission that needs the snapshot ----------------------------------------------------------------------------


def test_an_unknown_priority_class_is_a_problem_at_the_object(tmp_path: Path) -> None:
    text = (
        NODE + "---\napiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\n"
        "spec: {schedulingPolicy: {basic: {}}, priorityClassName: gold}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: resolved}\nspec: {priority: 5, priorityClassName: gone, containers: [{name: c}]}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: system}\nspec: {priorityClassName: system-node-critical, containers: [{name: c}]}\n"
    )
    assert problems(tmp_path, text) == [
        "x.yaml:9: PodGroup default/g: spec.priorityClassName: Forbidden: no PriorityClass with name gold was found"
    ]


def test_a_pod_that_disagrees_with_its_runtime_class_is_a_problem_at_the_pod(tmp_path: Path) -> None:
    text = (
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n"
        "scheduling: {nodeSelector: {sandbox: gvisor}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {runtimeClassName: gvisor, nodeSelector: {sandbox: kata}, containers: [{name: c}]}\n"
    )
    assert problems(tmp_path, text) == [
        "x.yaml:10: Pod default/p: spec.runtimeClassName: Forbidden: conflict: "
        "runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata"
    ]


# --- shapes that would hang or overflow the stack -----------------------------------------------------------------


def _alias_bomb(levels: int) -> str:
    """A YAML "billion laughs": each level lists the previous one ten times (10**levels nodes when expanded)."""
    lines = ["    a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(lines)


def test_a_yaml_alias_bomb_is_refused_not_expanded(tmp_path: Path) -> None:
    text = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  x:\n{_alias_bomb(8)}\n  tolerations: *a8\n"
    assert problems(tmp_path, text) == ["x.yaml: cannot parse: document contains excessive aliasing"]


def test_modest_aliases_are_fine(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: &l {a: b}}}\n"
    )
    text += "- {apiVersion: v1, kind: Node, metadata: {name: n2, labels: *l}}\n"
    assert problems(tmp_path, text) == []


def test_json_nested_deeper_than_the_stack_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"apiVersion": "v1", "kind": "Pod", "spec": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    with pytest.raises(InputError) as err:
        load([str(path)])
    assert err.value.lines == [f"{path}: cannot parse: exceeded maximum nesting depth"]


def test_numbers_with_thousands_of_digits_are_errors_not_exit_1(tmp_path: Path) -> None:
    huge = "1" + "0" * 5000
    node = f"apiVersion: v1\nkind: Node\nmetadata: {{name: n}}\nstatus: {{allocatable: {{cpu: '{huge}'}}}}\n"
    assert problems(tmp_path, node) == [
        f'x.yaml:4: Node n: status.allocatable.cpu: Invalid value: "{huge}": quantity has more than 1000 digits'
    ]
    pod = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{priority: {huge}}}\n"
    assert problems(tmp_path, pod) == ["x.yaml: cannot parse: an integer of 5001 digits (at most 4300 are read)"]
