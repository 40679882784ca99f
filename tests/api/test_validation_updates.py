"""v1.37's update rules: a gang's minCount may change (elastic gangs), the rest of a PodGroup, a Workload's
templates and a CompositePodGroup may not; messages as kube-apiserver v1.37.2's declarative validation words them."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api import scheduling as s
from phalanx.api.validation.updates import (
    validate_composite_pod_group_update,
    validate_pod_group_update,
    validate_workload_update,
)

IMMUTABLE = "Invalid value: null: field is immutable"


def pod_group(**spec: Any) -> s.PodGroup:
    base: dict[str, Any] = {
        "workloadRef": {"workloadName": "w", "templateName": "t"},
        "schedulingPolicy": {"gang": {"minCount": 4}},
    }
    return msgspec.convert({"metadata": {"name": "pg", "namespace": "ml"}, "spec": base | spec}, s.PodGroup)


def errors(found: list[Any]) -> list[str]:
    return [f"{e.path}: {e.message}" for e in found]


@pytest.mark.parametrize(
    ("change", "want"),
    [
        pytest.param({"schedulingPolicy": {"gang": {"minCount": 2}}}, [], id="min-count-is-elastic"),
        pytest.param({"disruptionMode": {"single": {}}}, [], id="the-default-written-out-is-no-change"),
        pytest.param({"disruptionMode": {"all": {}}}, [f"spec.disruptionMode: {IMMUTABLE}"], id="disruption-mode"),
        pytest.param(
            {"schedulingPolicy": {"basic": {}}},
            [
                f"spec.schedulingPolicy.basic: {IMMUTABLE}",
                "spec.schedulingPolicy.gang: Invalid value: null: field cannot be cleared once set",
            ],
            id="gang-to-basic",
        ),
        pytest.param(
            {"workloadRef": {"workloadName": "w", "templateName": "u"}},
            [f"spec.workloadRef: {IMMUTABLE}"],
            id="workload-ref",
        ),
        pytest.param(
            {"parentCompositePodGroupName": "root"}, [f"spec.parentCompositePodGroupName: {IMMUTABLE}"], id="parent"
        ),
        pytest.param(
            {"preemptionPolicy": "Never", "priority": 5},
            [f"spec.priority: {IMMUTABLE}", f"spec.preemptionPolicy: {IMMUTABLE}"],
            id="priority",
        ),
        pytest.param(
            {"resourceClaims": [{"name": "imex", "resourceClaimTemplateName": "t"}]},
            [f"spec.resourceClaims: {IMMUTABLE}"],
            id="claims",
        ),
    ],
)
def test_pod_group_update(change: dict[str, Any], want: list[str]) -> None:
    assert errors(validate_pod_group_update(pod_group(), pod_group(**change))) == want


def test_basic_to_gang_is_setting_a_gang() -> None:
    old = pod_group(schedulingPolicy={"basic": {}})
    assert errors(validate_pod_group_update(old, pod_group())) == [
        f"spec.schedulingPolicy.basic: {IMMUTABLE}",
        "spec.schedulingPolicy.gang: Invalid value: null: field cannot be set once created",
    ]


def workload(*templates: dict[str, Any], composite: list[dict[str, Any]] | None = None) -> s.Workload:
    spec: dict[str, Any] = {"podGroupTemplates": list(templates)} if templates else {}
    if composite is not None:
        spec["compositePodGroupTemplates"] = composite
    return msgspec.convert({"metadata": {"name": "w", "namespace": "ml"}, "spec": spec}, s.Workload)


def gang(name: str, count: int, **more: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": count}}, **more}


def test_workload_templates_keep_their_names_and_all_but_min_count() -> None:
    old = workload(gang("a", 4), gang("b", 2))
    assert validate_workload_update(old, workload(gang("a", 8), gang("b", 1))) == []
    assert errors(validate_workload_update(old, workload(gang("a", 4), gang("c", 2)))) == [
        "spec.podGroupTemplates[1]: Forbidden: item may not be added",
        "spec.podGroupTemplates: Forbidden: item may not be removed",
    ]
    changed = workload(gang("a", 4, priorityClassName="high"), gang("b", 2))
    assert errors(validate_workload_update(old, changed)) == [
        f"spec.podGroupTemplates[0].priorityClassName: {IMMUTABLE}"
    ]


def composite(count: int, child: dict[str, Any]) -> dict[str, Any]:
    return {"name": "root", "schedulingPolicy": {"gang": {"minGroupCount": count}}, "podGroupTemplates": [child]}


def test_a_composite_template_tree_is_checked_all_the_way_down() -> None:
    old = workload(composite=[composite(2, gang("decode", 8))])
    assert validate_workload_update(old, workload(composite=[composite(1, gang("decode", 4))])) == []
    deeper = workload(composite=[composite(2, gang("decode", 8, disruptionMode={"all": {}}))])
    assert errors(validate_workload_update(old, deeper)) == [
        f"spec.compositePodGroupTemplates[0].podGroupTemplates[0].disruptionMode: {IMMUTABLE}"
    ]


def test_a_composite_pod_groups_policy_is_immutable_min_group_count_included() -> None:
    def cpg(count: int) -> s.CompositePodGroup:
        spec = {
            "workloadRef": {"workloadName": "w", "templateName": "root"},
            "schedulingPolicy": {"gang": {"minGroupCount": count}},
        }
        return msgspec.convert({"metadata": {"name": "root", "namespace": "ml"}, "spec": spec}, s.CompositePodGroup)

    assert validate_composite_pod_group_update(cpg(2), cpg(2)) == []
    assert errors(validate_composite_pod_group_update(cpg(2), cpg(1))) == [f"spec.schedulingPolicy: {IMMUTABLE}"]
