"""A trace job becomes a v1.37 Job that asks for its gang in spec.scheduling: the simulator's gangs stay gangs now
that the Job controller acts as v1.37's (a Job without spec.scheduling would get a basic PodGroup)."""

from __future__ import annotations

from phalanx.sim.jobs import batch_job, job_objects
from phalanx.sim.workload import JobRecord


def test_a_multi_pod_job_is_a_gang_of_its_size() -> None:
    group, pods = job_objects(JobRecord("train", 0, 60, pods=4), 0, gang=True, topology=False)
    assert group is not None and group.spec is not None and group.spec.scheduling_policy is not None
    assert group.spec.scheduling_policy.gang is not None and group.spec.scheduling_policy.gang.min_count == 4
    assert {p.spec.scheduling_group.pod_group_name for p in pods if p.spec.scheduling_group} == {group.metadata.name}


def test_a_single_pod_has_no_group() -> None:
    assert batch_job(JobRecord("one", 0, 60, pods=1), 0).spec.scheduling is None
    group, pods = job_objects(JobRecord("one", 0, 60, pods=1), 0, gang=True, topology=False)
    assert group is None and all(p.spec.scheduling_group is None for p in pods)
