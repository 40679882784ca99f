"""Per-job timelines from the simulator's observer: a preempted job's spans and why the preemptor never waited, a
pod-by-pod deadlock's partial gangs in the scheduler's words, and on generated workloads, spans that tile each
job's life and agree with the run's own start and end."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from phalanx.sim.simulator import CAUSES, POLICIES, simulate
from phalanx.sim.timeline import END_OF_RUN, JobTimeline, Span, TimelineRecorder, WaitReason
from phalanx.sim.workload import ClusterSpec, JobRecord, Pool, generate_jobs, nodes_of

TWO_NODES = ClusterSpec([Pool("gpu", 2, {"cpu": "96", "memory": "64Gi", "nvidia.com/gpu": 8})])
FOUR_NODES = ClusterSpec([Pool("gpu", 4, {"cpu": "96", "memory": "64Gi", "nvidia.com/gpu": 8})])
INSUFFICIENT = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def timelines(spec: ClusterSpec, jobs: list[JobRecord], policy: str) -> list[JobTimeline]:
    recorder = TimelineRecorder(jobs)
    result = simulate(nodes_of(spec), jobs, POLICIES[policy], observer=recorder)
    return recorder.timelines(result.samples[-1].time)


def test_a_preempted_job_waits_again_and_starts_over() -> None:
    jobs = [
        JobRecord("low", 0.0, 1000.0, 2, cpu="8", memory="8Gi", gpus=8, priority=0),
        JobRecord("high", 100.0, 50.0, 2, cpu="8", memory="8Gi", gpus=8, priority=100),
    ]
    low, high = timelines(TWO_NODES, jobs, "gang-tas-preemption")
    assert low.spans == [
        Span("queued", 0.0, 0.0, "started"),
        Span("running", 0.0, 100.0, "preemption"),
        Span("queued", 100.0, 150.0, "started"),
        Span("running", 150.0, 1150.0, "completed"),
    ]
    assert high.spans == [Span("queued", 100.0, 100.0, "started"), Span("running", 100.0, 150.0, "completed")]
    assert high.reasons == []  # it preempted at once: it never waited
    # While the preemptor ran, the restarted victim was told why it could not fit.
    (why,) = low.reasons
    assert (why.time, why.reason, why.bound) == (100.0, "Unschedulable", 0)
    assert why.message.startswith(INSUFFICIENT)


def test_pod_by_pod_deadlock_shows_partial_gangs_in_the_schedulers_words() -> None:
    gangs = [
        JobRecord("a", 0.0, 100.0, 3, cpu="8", memory="8Gi", gpus=8),
        JobRecord("b", 0.0, 100.0, 3, cpu="8", memory="8Gi", gpus=8),
    ]
    a, b = timelines(FOUR_NODES, gangs, "pod-by-pod")
    for line in (a, b):
        assert line.spans == [Span("queued", 0.0, 0.0, END_OF_RUN)]
        assert line.reasons == [
            WaitReason(0.0, "Unschedulable", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", 2)
        ]
    gang_a, _ = timelines(FOUR_NODES, gangs, "gang")
    assert [s.ended_by for s in gang_a.spans] == ["started", "completed"]


@pytest.mark.parametrize("policy", ["pod-by-pod", "gang-tas-preemption"])
def test_spans_tile_each_job_and_agree_with_its_run(policy: str) -> None:
    spec = ClusterSpec([Pool("gpu", 8, {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": 8}, 4, 2)])
    jobs = generate_jobs("philly", 80, seed=4, mean_gap=10)
    recorder = TimelineRecorder(jobs)
    result = simulate(nodes_of(spec), jobs, POLICIES[policy], observer=recorder)
    lines = recorder.timelines(result.samples[-1].time)
    assert sum(r.restarts for r in result.runs) > 0 or policy == "pod-by-pod"  # the workload exercises restarts
    for run, line in zip(result.runs, lines, strict=True):
        spans = line.spans
        assert spans[0].state == "queued" and spans[0].start == run.job.submit
        assert all(x.end == y.start for x, y in itertools.pairwise(spans))  # no gap, no overlap
        causes = Counter(s.ended_by for s in spans if s.ended_by in CAUSES)
        assert causes == +run.restarts_by  # every restart ends a span, with its cause
        if run.end is not None:
            assert spans[-1] == Span("running", run.start, run.end, "completed")
        else:
            assert spans[-1].state == "queued" and spans[-1].ended_by == END_OF_RUN
        queued = [s for s in spans if s.state == "queued"]
        for w in line.reasons:  # every reason was given while the job waited
            assert any(s.start <= w.time <= s.end for s in queued)
        if any(s.end > s.start for s in queued):
            assert line.reasons  # and a job that waited was told why
