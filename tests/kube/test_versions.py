"""v1.37 PodGroup shapes converted to v1alpha2 (spec §1.1)."""

from __future__ import annotations

from phalanx.kube.versions import condition_type, to_v1alpha2


def test_v1beta1_pod_group_converts_to_v1alpha2() -> None:
    pg = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {
            "workloadRef": {"workloadName": "train", "templateName": "worker"},
            "schedulingPolicy": {"gang": {"minCount": 4}},
            "disruptionMode": {"single": {}},
            "preemptionPolicy": "Never",
        },
        "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]},
    }
    out = to_v1alpha2(pg)
    assert out["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert out["spec"] == {
        "podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "worker"}},
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "disruptionMode": "Pod",
    }
    assert out["status"]["conditions"] == [{"type": "PodGroupScheduled", "status": "True"}]
    assert condition_type(pg) == "PodGroupInitiallyScheduled"


def test_v1alpha2_is_unchanged() -> None:
    pg = {"apiVersion": "scheduling.k8s.io/v1alpha2", "spec": {"disruptionMode": "PodGroup"}}
    assert to_v1alpha2(pg) is pg
    assert condition_type(pg) == "PodGroupScheduled"
