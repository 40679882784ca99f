"""The Job controller's scheduling part (spec §6): eligibility, Workload/PodGroup names and owners, pods."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api.models import Job, Pod, PodGroup, Workload
from phalanx.controllers.job import INDEX_LABEL, gang_eligible, pod_group_name, reconcile_job, workload_name


def job(**spec: Any) -> Job:
    base: dict[str, Any] = {
        "parallelism": 4,
        "completions": 4,
        "completionMode": "Indexed",
        "template": {"metadata": {"labels": {"app": "train"}}, "spec": {"containers": [{"name": "w"}]}},
    }
    base.update(spec)
    return msgspec.convert({"metadata": {"name": "train", "namespace": "ml", "uid": "u-1"}, "spec": base}, Job)


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
def test_gang_eligibility(spec: dict[str, Any], eligible: bool) -> None:
    assert gang_eligible(job(**spec)) is eligible


def test_eligible_job_gets_workload_pod_group_and_member_pods() -> None:
    out = reconcile_job(job(), [], [], [])
    assert out.events == ["WorkloadCreated"]
    assert out.workload is not None and out.pod_group is not None
    wl, pg = out.workload, out.pod_group
    assert wl.metadata.name == workload_name(job()) and wl.metadata.name.startswith("train-")
    assert wl.spec is not None and wl.spec.controller_ref is not None
    assert (wl.spec.controller_ref.api_group, wl.spec.controller_ref.kind, wl.spec.controller_ref.name) == (
        "batch",
        "Job",
        "train",
    )
    (template,) = wl.spec.pod_group_templates
    assert template.name == "worker-0"
    assert template.scheduling_policy is not None and template.scheduling_policy.gang is not None
    assert template.scheduling_policy.gang.min_count == 4
    assert pg.metadata.name == pod_group_name(wl.metadata.name)
    assert [(r.kind, bool(r.controller)) for r in pg.metadata.owner_references] == [("Job", True), ("Workload", False)]
    assert pg.spec is not None and pg.spec.scheduling_policy == template.scheduling_policy
    assert sorted(p.metadata.labels[INDEX_LABEL] for p in out.pods) == ["0", "1", "2", "3"]
    assert {p.spec.scheduling_group.pod_group_name for p in out.pods if p.spec.scheduling_group} == {pg.metadata.name}
    assert len({p.metadata.name for p in out.pods}) == 4


def test_existing_workload_and_pod_group_are_reused() -> None:
    first = reconcile_job(job(), [], [], [])
    assert first.workload is not None and first.pod_group is not None
    again = reconcile_job(job(), [first.workload], [first.pod_group], first.pods)
    assert again.workload is None and again.pod_group is None and again.pods == [] and again.events == []


def test_job_that_predates_the_gate_is_left_alone() -> None:
    pods = reconcile_job(job(completionMode="NonIndexed"), [], [], []).pods  # pods without a group
    out = reconcile_job(job(), [], [], pods)
    assert out.workload is None and out.pod_group is None


def test_ambiguous_workload_falls_back_to_pod_by_pod() -> None:
    wl = reconcile_job(job(), [], [], []).workload
    assert wl is not None
    twin = msgspec.structs.replace(wl, metadata=msgspec.structs.replace(wl.metadata, name="other"))
    out = reconcile_job(job(), [wl, twin], [], [])
    assert out.events == ["AmbiguousWorkload"]
    assert all(p.spec.scheduling_group is None for p in out.pods)


def test_non_indexed_job_pods_and_completions() -> None:
    out = reconcile_job(job(completionMode="NonIndexed", parallelism=3, completions=5), [], [], [])
    assert out.pod_group is None and len(out.pods) == 3
    done = [
        msgspec.structs.replace(p, status=msgspec.convert({"phase": "Succeeded"}, type(p.status))) for p in out.pods
    ]
    more = reconcile_job(job(completionMode="NonIndexed", parallelism=3, completions=5), [], [], done)
    assert len(more.pods) == 2


def test_suspended_job_creates_nothing() -> None:
    assert reconcile_job(job(suspend=True), [], [], []).pods == []


def test_only_missing_indexes_are_created() -> None:
    out = reconcile_job(job(), [], [], [])
    assert out.workload is not None and out.pod_group is not None
    kept: list[Pod] = out.pods[:2]
    again = reconcile_job(job(), [out.workload], [out.pod_group], kept)
    assert sorted(p.metadata.labels[INDEX_LABEL] for p in again.pods) == ["2", "3"]


def test_objects_are_valid() -> None:
    from phalanx.api.validation import validate_pod, validate_pod_group, validate_workload

    out = reconcile_job(job(), [], [], [])
    assert out.workload is not None and out.pod_group is not None
    assert validate_workload(out.workload) == []
    assert validate_pod_group(out.pod_group) == []
    assert all(validate_pod(p) == [] for p in out.pods)
    assert isinstance(out.pod_group, PodGroup) and isinstance(out.workload, Workload)


def test_run_once_adds_the_created_objects_to_the_snapshot() -> None:
    from phalanx.api.loader import Inventory
    from phalanx.controllers.run import run_once

    inv = Inventory(jobs=[job(), job(completionMode="NonIndexed", parallelism=2, completions=2)])
    inv.jobs[1] = msgspec.structs.replace(
        inv.jobs[1], metadata=msgspec.structs.replace(inv.jobs[1].metadata, name="solo")
    )
    events = run_once(inv)
    assert events == ["Job ml/train: WorkloadCreated"]
    assert len(inv.workloads) == 1 and len(inv.pod_groups) == 1 and len(inv.pods) == 6
    assert run_once(inv) == [] and len(inv.pods) == 6  # idempotent


def _with_phase(pod: Pod, phase: str) -> Pod:
    return msgspec.structs.replace(pod, status=msgspec.convert({"phase": phase}, type(pod.status)))


def test_failed_pods_are_replaced_until_the_backoff_limit() -> None:
    out = reconcile_job(job(backoffLimit=1), [], [], [])
    assert out.workload is not None and out.pod_group is not None
    objs = ([out.workload], [out.pod_group])
    first_fail = [_with_phase(out.pods[0], "Failed"), *out.pods[1:]]
    retry = reconcile_job(job(backoffLimit=1), *objs, first_fail)
    assert [p.metadata.labels[INDEX_LABEL] for p in retry.pods] == ["0"]
    assert retry.pods[0].metadata.name != out.pods[0].metadata.name
    second_fail = [*first_fail, _with_phase(retry.pods[0], "Failed")]
    assert reconcile_job(job(backoffLimit=1), *objs, second_fail).pods == []  # BackoffLimitExceeded
