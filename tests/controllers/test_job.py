"""The Job controller's scheduling part: v1.37's phase 2 (spec.scheduling, every root Job, delegated Jobs, elastic
minCount) by default, v1.36's phase 1 under JobControllerOptions(version="v1.36"); names, owners, pods."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api.models import Job, Pod, PodGroup, Workload, WorkloadSpec
from phalanx.api.scheduling import GROUP_TEMPLATE_NAME_ANNOTATION, PARENT_COMPOSITE_POD_GROUP_ANNOTATION
from phalanx.api.validation import validate_pod, validate_pod_group, validate_workload
from phalanx.controllers.job import INDEX_LABEL, JobControllerOptions, gang_eligible, reconcile_job, workload_name

V136 = JobControllerOptions(version="v1.36")


def job(name: str = "train", uid: str = "u-1", meta: dict[str, Any] | None = None, **spec: Any) -> Job:
    base: dict[str, Any] = {
        "parallelism": 4,
        "completions": 4,
        "completionMode": "Indexed",
        "template": {"metadata": {"labels": {"app": "train"}}, "spec": {"containers": [{"name": "w"}]}},
    }
    base.update(spec)
    metadata = {"name": name, "namespace": "ml", "uid": uid, **(meta or {})}
    return msgspec.convert({"metadata": metadata, "spec": base}, Job)


def gang(**fields: Any) -> dict[str, Any]:
    return {"schedulingPolicy": {"gang": fields}}


def owners(obj: Workload | PodGroup | Pod) -> list[tuple[str, str, str, bool, bool]]:
    return [
        (r.api_version, r.kind, r.name, bool(r.controller), bool(r.block_owner_deletion))
        for r in obj.metadata.owner_references
    ]


# --- v1.37 ------------------------------------------------------------------------------------------------------


def test_names_are_kube_controller_managers() -> None:
    """What the real v1.37.2 kube-controller-manager named a gang Job's objects (docs/testenv.md, k8s-facts)."""
    out = reconcile_job(job("gang", "da09eb2c-48fa-44a2-b40b-1ed1fd8a05e6", scheduling=gang()), [], [], [])
    assert out.workload is not None and out.pod_group is not None
    assert out.workload.metadata.name == "gang-76658dd799"
    assert out.workload.spec is not None and out.workload.spec.pod_group_templates[0].name == "gang-pgt-0"
    assert out.pod_group.metadata.name == "gang-76658dd799-gang-pgt-0-6759c56578"
    assert out.events == ["WorkloadCreated", "PodGroupCreated"]


def test_a_job_without_scheduling_is_basic() -> None:
    out = reconcile_job(job(completionMode="NonIndexed", completions=None), [], [], [])
    assert out.workload is not None and out.pod_group is not None and out.workload.spec is not None
    (template,) = out.workload.spec.pod_group_templates
    assert template.scheduling_policy is not None and template.scheduling_policy.basic is not None
    pg = out.pod_group
    assert pg.spec is not None and pg.spec.scheduling_policy == template.scheduling_policy
    assert pg.spec.disruption_mode is not None and pg.spec.disruption_mode.single is not None  # the API default
    assert {p.spec.scheduling_group.pod_group_name for p in out.pods if p.spec.scheduling_group} == {pg.metadata.name}


@pytest.mark.parametrize(
    ("scheduling", "parallelism", "want"),
    [
        pytest.param(gang(), 4, 4, id="parallelism"),
        pytest.param(gang(minCount=2), 4, 2, id="explicit"),
        pytest.param(gang(), 0, 1, id="at-least-one"),
    ],
)
def test_gang_min_count_defaults_to_parallelism(scheduling: dict[str, Any], parallelism: int, want: int) -> None:
    out = reconcile_job(job(scheduling=scheduling, parallelism=parallelism), [], [], [])
    assert out.pod_group is not None and out.pod_group.spec is not None
    policy = out.pod_group.spec.scheduling_policy
    assert policy is not None and policy.gang is not None and policy.gang.min_count == want


def test_the_building_blocks_reach_the_workload_and_pod_group() -> None:
    scheduling = {
        **gang(),
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
        "disruptionMode": {"all": {}},
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}],
    }
    template_spec = {"priorityClassName": "high", "containers": [{"name": "w"}]}
    out = reconcile_job(job(scheduling=scheduling, template={"spec": template_spec}), [], [], [])
    assert out.workload is not None and out.workload.spec is not None and out.pod_group is not None
    (template,) = out.workload.spec.pod_group_templates
    spec = out.pod_group.spec
    assert spec is not None
    for obj in (template, spec):
        assert obj.scheduling_constraints is not None and obj.scheduling_constraints.topology[0].key.endswith("rack")
        assert obj.disruption_mode is not None and obj.disruption_mode.all is not None
        assert [c.name for c in obj.resource_claims] == ["gpus"]
        assert obj.priority_class_name == "high"
    assert spec.workload_ref is not None
    assert (spec.workload_ref.workload_name, spec.workload_ref.template_name) == (
        out.workload.metadata.name,
        "train-pgt-0",
    )


def test_owners() -> None:
    out = reconcile_job(job(scheduling=gang()), [], [], [])
    assert out.workload is not None and out.pod_group is not None
    controller = ("batch/v1", "Job", "train", True, True)
    assert owners(out.workload) == [controller]
    wl = out.workload.metadata.name
    assert owners(out.pod_group) == [controller, ("scheduling.k8s.io/v1beta1", "Workload", wl, False, False)]
    ref = out.workload.spec.controller_ref if out.workload.spec else None
    assert ref is not None and (ref.api_group, ref.kind, ref.name) == ("batch", "Job", "train")
    assert all(owners(p) == [controller] for p in out.pods)


def test_objects_are_valid() -> None:
    out = reconcile_job(job(scheduling={**gang(), "disruptionMode": {"all": {}}}), [], [], [])
    assert out.workload is not None and out.pod_group is not None
    assert validate_workload(out.workload) == []
    assert validate_pod_group(out.pod_group) == []
    assert all(validate_pod(p) == [] for p in out.pods)


def test_existing_objects_are_reused_and_only_missing_indexes_made() -> None:
    first = reconcile_job(job(scheduling=gang()), [], [], [])
    assert first.workload is not None and first.pod_group is not None
    again = reconcile_job(job(scheduling=gang()), [first.workload], [first.pod_group], first.pods[:2])
    assert again.workload is None and again.pod_group is None and again.events == []
    assert sorted(p.metadata.labels[INDEX_LABEL] for p in again.pods) == ["2", "3"]
    assert {p.spec.scheduling_group.pod_group_name for p in again.pods if p.spec.scheduling_group} == {
        first.pod_group.metadata.name
    }


def test_objects_the_job_does_not_control_are_ignored() -> None:
    """A user's Workload naming the Job is not the controller's: a new Job gets its own."""
    mine = reconcile_job(job(scheduling=gang()), [], [], []).workload
    assert mine is not None
    theirs = msgspec.structs.replace(mine, metadata=msgspec.structs.replace(mine.metadata, owner_references=[]))
    out = reconcile_job(job(scheduling=gang()), [theirs], [], [])
    assert out.workload is not None and out.workload is not theirs


def test_two_workloads_of_the_job_mean_pod_by_pod() -> None:
    wl = reconcile_job(job(), [], [], []).workload
    assert wl is not None
    twin = msgspec.structs.replace(wl, metadata=msgspec.structs.replace(wl.metadata, name="other"))
    out = reconcile_job(job(), [wl, twin], [], [])
    assert out.events == ["AmbiguousWorkload"] and out.pod_group is None
    assert all(p.spec.scheduling_group is None for p in out.pods)


@pytest.mark.parametrize(
    "started",
    [
        {"startTime": "2026-01-01T00:00:00Z"},
        {"succeeded": 1},
        {"conditions": [{"type": "Suspended", "status": "True"}]},
    ],
    ids=["started", "succeeded", "was-suspended"],
)
def test_a_job_that_started_gets_no_scheduling_objects(started: dict[str, Any]) -> None:
    running = msgspec.structs.replace(job(), status=msgspec.convert(started, type(job().status)))
    out = reconcile_job(running, [], [], [])
    assert out.workload is None and out.pod_group is None


def test_a_template_naming_a_group_brings_its_own() -> None:
    template = {"spec": {"containers": [{"name": "w"}], "schedulingGroup": {"podGroupName": "mine"}}}
    out = reconcile_job(job(template=template), [], [], [])
    assert out.workload is None and out.pod_group is None
    assert {p.spec.scheduling_group.pod_group_name for p in out.pods if p.spec.scheduling_group} == {"mine"}


def test_a_suspended_job_gets_its_objects_but_no_pods() -> None:
    out = reconcile_job(job(suspend=True, scheduling=gang()), [], [], [])
    assert out.workload is not None and out.pod_group is not None and out.pods == []


def _count(obj: Workload | PodGroup) -> tuple[str, int | None]:
    spec = obj.spec
    assert spec is not None
    part = spec.pod_group_templates[0] if isinstance(spec, WorkloadSpec) else spec
    assert part.scheduling_policy is not None and part.scheduling_policy.gang is not None
    return type(obj).__name__, part.scheduling_policy.gang.min_count


def test_elastic_min_count_follows_the_job() -> None:
    first = reconcile_job(job(scheduling=gang(minCount=4)), [], [], [])
    assert first.workload is not None and first.pod_group is not None
    out = reconcile_job(job(scheduling=gang(minCount=2)), [first.workload], [first.pod_group], first.pods)
    assert [_count(o) for o in out.updated] == [("Workload", 2), ("PodGroup", 2)]
    unchanged = reconcile_job(job(scheduling=gang(minCount=4)), [first.workload], [first.pod_group], first.pods)
    assert unchanged.updated == []


# --- a Job inside a larger workload (delegated) -----------------------------------------------------------------


JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "llm", "uid": "js-1", "controller": True}


def parent_workload() -> Workload:
    doc = {
        "metadata": {"name": "llm-wl", "namespace": "ml", "uid": "w-1"},
        "spec": {
            "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "llm"},
            "podGroupTemplates": [{"name": "decode", "schedulingPolicy": {"gang": {"minCount": 8}}}],
        },
    }
    return msgspec.convert(doc, Workload)


def child(**annotations: str) -> Job:
    return job("llm-decode-0", "c-1", {"ownerReferences": [JOBSET], "annotations": annotations})


def test_delegated_job_gets_a_pod_group_from_its_parents_template() -> None:
    out = reconcile_job(child(**{GROUP_TEMPLATE_NAME_ANNOTATION: "decode"}), [parent_workload()], [], [])
    assert out.workload is None and out.pod_group is not None and out.pod_group.spec is not None
    pg = out.pod_group
    assert owners(pg) == [("batch/v1", "Job", "llm-decode-0", True, True)]  # the Workload is the parent's
    assert pg.spec.workload_ref is not None and pg.spec.workload_ref.template_name == "decode"
    policy = pg.spec.scheduling_policy
    assert policy is not None and policy.gang is not None and policy.gang.min_count == 8
    assert pg.spec.parent_composite_pod_group_name is None


def test_delegated_job_joins_the_composite_its_parent_names() -> None:
    notes = {GROUP_TEMPLATE_NAME_ANNOTATION: "decode", PARENT_COMPOSITE_POD_GROUP_ANNOTATION: "llm-serving"}
    out = reconcile_job(child(**notes), [parent_workload()], [], [])
    assert out.pod_group is not None and out.pod_group.spec is not None
    assert out.pod_group.spec.parent_composite_pod_group_name == "llm-serving"
    # v1.37.2's controller defines the annotation but does not read it.
    upstream = reconcile_job(child(**notes), [parent_workload()], [], [], JobControllerOptions.for_version("1.37.2"))
    assert upstream.pod_group is not None and upstream.pod_group.spec is not None
    assert upstream.pod_group.spec.parent_composite_pod_group_name is None


def test_delegated_job_waits_for_its_parent_and_owned_jobs_without_the_annotation_get_nothing() -> None:
    waiting = reconcile_job(child(**{GROUP_TEMPLATE_NAME_ANNOTATION: "decode"}), [], [], [])
    assert waiting.pod_group is None and all(p.spec.scheduling_group is None for p in waiting.pods)
    unmanaged = reconcile_job(child(), [parent_workload()], [], [])
    assert unmanaged.pod_group is None and unmanaged.workload is None


# --- v1.36 (--compat v1.36) -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "eligible"),
    [
        ({}, True),
        ({"parallelism": 1, "completions": 1}, False),
        ({"completionMode": "NonIndexed"}, False),
        ({"completions": 8}, False),
        ({"template": {"spec": {"containers": [{"name": "w"}], "schedulingGroup": {"podGroupName": "x"}}}}, False),
    ],
    ids=["indexed-gang", "parallelism-1", "non-indexed", "completions-differ", "template-names-a-group"],
)
def test_v136_gang_eligibility(spec: dict[str, Any], eligible: bool) -> None:
    assert gang_eligible(job(**spec)) is eligible


def test_v136_eligible_job_gets_a_gang() -> None:
    out = reconcile_job(
        job(scheduling={"disruptionMode": {"all": {}}}), [], [], [], V136
    )  # no spec.scheduling in v1.36
    assert out.events == ["WorkloadCreated"]
    assert out.workload is not None and out.pod_group is not None and out.workload.spec is not None
    assert out.workload.metadata.name == workload_name(job())
    (template,) = out.workload.spec.pod_group_templates
    assert template.name == "train-pgt-0"
    assert template.scheduling_policy is not None and template.scheduling_policy.gang is not None
    assert template.scheduling_policy.gang.min_count == 4
    wl = out.workload.metadata.name
    assert owners(out.pod_group) == [
        ("batch/v1", "Job", "train", True, True),
        ("scheduling.k8s.io/v1alpha2", "Workload", wl, False, False),
    ]
    assert out.pod_group.spec is not None and out.pod_group.spec.disruption_mode is not None
    assert out.pod_group.spec.disruption_mode.all is None
    assert sorted(p.metadata.labels[INDEX_LABEL] for p in out.pods) == ["0", "1", "2", "3"]


def test_v136_other_jobs_are_pod_by_pod() -> None:
    out = reconcile_job(job(completionMode="NonIndexed", parallelism=3, completions=5), [], [], [], V136)
    assert out.workload is None and out.pod_group is None and len(out.pods) == 3
    done = [
        msgspec.structs.replace(p, status=msgspec.convert({"phase": "Succeeded"}, type(p.status))) for p in out.pods
    ]
    more = reconcile_job(job(completionMode="NonIndexed", parallelism=3, completions=5), [], [], done, V136)
    assert len(more.pods) == 2


def test_v136_job_that_predates_the_gate_is_left_alone() -> None:
    pods = reconcile_job(job(completionMode="NonIndexed"), [], [], [], V136).pods
    out = reconcile_job(job(), [], [], pods, V136)
    assert out.workload is None and out.pod_group is None


# --- running the controllers over a snapshot --------------------------------------------------------------------


def test_run_once_adds_and_replaces_objects() -> None:
    from phalanx.api.loader import Inventory
    from phalanx.controllers.run import run_once

    solo = job("solo", "u-2", completionMode="NonIndexed", parallelism=2, completions=2)
    inv = Inventory(jobs=[job(scheduling=gang()), solo])
    events = run_once(inv)
    assert events == [
        "Job ml/solo: WorkloadCreated",
        "Job ml/solo: PodGroupCreated",
        "Job ml/train: WorkloadCreated",
        "Job ml/train: PodGroupCreated",
    ]
    assert len(inv.workloads) == 2 and len(inv.pod_groups) == 2 and len(inv.pods) == 6
    assert run_once(inv) == [] and len(inv.pods) == 6  # idempotent
    inv.jobs[0] = job(scheduling=gang(minCount=3))
    run_once(inv)
    train = next(g for g in inv.pod_groups if g.metadata.name.startswith("train-"))
    assert train.spec is not None and train.spec.scheduling_policy is not None
    assert train.spec.scheduling_policy.gang is not None and train.spec.scheduling_policy.gang.min_count == 3


def test_run_once_as_v136() -> None:
    from phalanx.api.loader import Inventory
    from phalanx.controllers.run import run_once

    inv = Inventory(jobs=[job(), job("solo", "u-2", completionMode="NonIndexed", parallelism=2, completions=2)])
    assert run_once(inv, V136) == ["Job ml/train: WorkloadCreated"]
    assert len(inv.workloads) == 1 and len(inv.pod_groups) == 1 and len(inv.pods) == 6


def _with_phase(pod: Pod, phase: str) -> Pod:
    return msgspec.structs.replace(pod, status=msgspec.convert({"phase": phase}, type(pod.status)))


def test_failed_pods_are_replaced_until_the_backoff_limit() -> None:
    out = reconcile_job(job(backoffLimit=1, scheduling=gang()), [], [], [])
    assert out.workload is not None and out.pod_group is not None
    objs = ([out.workload], [out.pod_group])
    first_fail = [_with_phase(out.pods[0], "Failed"), *out.pods[1:]]
    retry = reconcile_job(job(backoffLimit=1, scheduling=gang()), *objs, first_fail)
    assert [p.metadata.labels[INDEX_LABEL] for p in retry.pods] == ["0"]
    assert retry.pods[0].metadata.name != out.pods[0].metadata.name
    second_fail = [*first_fail, _with_phase(retry.pods[0], "Failed")]
    assert reconcile_job(job(backoffLimit=1, scheduling=gang()), *objs, second_fail).pods == []


def test_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match=r"v1\.35"):
        JobControllerOptions(version="v1.35")
