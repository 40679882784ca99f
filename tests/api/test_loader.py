"""The loader: files, directories, Lists, stdin, unknown kinds, and line lookup for problems."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from phalanx.api.errors import InputError, Source
from phalanx.api.loader import load, locate

SNAPSHOT = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    capacity:
      nvidia.com/gpu: "8"
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec:
    containers:
    - name: main
      resources:
        requests:
          nvidia.com/gpu: "1"
          cpu: 1
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: ignored}
"""


def test_list_items_decode_and_unknown_kinds_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "snap.yaml").write_text(SNAPSHOT)
    (tmp_path / "notes.txt").write_text("not yaml: [")
    inv = load([str(tmp_path)])
    assert [n.metadata.name for n in inv.nodes] == ["n1"]
    assert [(p.metadata.namespace, p.metadata.name) for p in inv.pods] == [("default", "p")]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("spec.containers[0].resources.requests[nvidia.com/gpu]", 18),
        ("spec.containers[0].resources.requests[cpu]", 19),
        ("spec.containers[0].name", 15),
        ("spec.containers[3].name", 14),  # closest existing parent
        ("spec.nodeName", 13),
    ],
)
def test_locate_finds_lines_with_dotted_keys(tmp_path: Path, path: str, line: int) -> None:
    f = tmp_path / "snap.yaml"
    f.write_text(SNAPSHOT)
    assert locate(Source(str(f), 0, 1), path) == line


def test_locate_dotted_path_form(tmp_path: Path) -> None:
    f = tmp_path / "snap.yaml"
    f.write_text(SNAPSHOT)
    assert locate(Source(str(f), 0, 0), "status.capacity.nvidia.com/gpu") == 9


def test_stdin_and_duplicates() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n"
    with pytest.raises(InputError) as err:
        load(["-"], io.StringIO(text))
    assert err.value.lines == ['-:7: Node a: metadata.name: Duplicate value: "a"']


def test_a_workload_as_kube_apiserver_returns_it_has_null_template_lists(tmp_path: Path) -> None:
    """kube-apiserver v1.37.2 returns a v1alpha3 Workload that holds only composite templates with
    ``podGroupTemplates: null`` (found by the differential run): null is an empty list, at every level."""
    (tmp_path / "w.yaml").write_text(
        """\
apiVersion: scheduling.k8s.io/v1alpha3
kind: Workload
metadata: {name: tree, namespace: default}
spec:
  podGroupTemplates: null
  compositePodGroupTemplates:
  - name: root
    schedulingPolicy: {gang: {minGroupCount: 1}}
    compositePodGroupTemplates: null
    podGroupTemplates:
    - {name: child, schedulingPolicy: {gang: {minCount: 1}}}
"""
    )
    inv = load([str(tmp_path)])
    (w,) = inv.workloads
    assert w.spec is not None and w.spec.pod_group_templates == []
    (root,) = w.spec.composite_pod_group_templates
    assert [t.name for t in root.pod_group_templates] == ["child"] and root.composite_pod_group_templates == []
    (tmp_path / "w.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1alpha3\nkind: Workload\nmetadata: {name: tree}\nspec: {podGroupTemplates: 3}\n"
    )
    with pytest.raises(InputError, match=r"spec\.podGroupTemplates: Invalid value: 3: must be of type array"):
        load([str(tmp_path)])
