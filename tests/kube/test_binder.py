"""The binder against a fake Api (STYLE.md habit 13): retries, condition rules, the event backlog."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from phalanx.kube.api import ApiError
from phalanx.kube.binder import Binder
from phalanx.kube.metrics import Metrics


class FakeApi:
    def __init__(self, answers: list[int] | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.answers = list(answers or [])
        self.gate = threading.Event()
        self.gate.set()

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))
        if self.answers:
            code = self.answers.pop(0)
            if code:
                raise ApiError(code, "fake")

    def bind(self, *args: Any) -> None:
        self._record("bind", *args)

    def patch_pod_group_status(self, *args: Any) -> None:
        self._record("patch_pod_group_status", *args)

    def create_event(self, *args: Any) -> None:
        self.gate.wait(5)
        self.calls.append(("create_event", args))


def _binder(api: FakeApi, **kw: Any) -> Binder:
    b = Binder(api, Metrics(), "me", workers=1, **kw)  # type: ignore[arg-type]
    b.backoff = 0.0
    return b


@pytest.mark.parametrize(
    ("answers", "error"),
    [([], None), ([429, 500, 0], None), ([409], 409), ([404], 404), ([500] * 6, 500)],
    ids=["ok", "retried", "conflict", "gone", "gave-up"],
)
def test_bind_retries_only_what_is_retryable(answers: list[int], error: int | None) -> None:
    api = FakeApi(answers)
    b = _binder(api)
    err = b.bind("ns", "p", "uid", "n0")
    b.shutdown()
    assert (err.code if err else None) == error
    binds = [c for c in api.calls if c[0] == "bind"]
    assert len(binds) == {None: max(1, len(answers)), 409: 1, 404: 1, 500: 6}[error]


def _pg(status: str | None) -> dict[str, Any]:
    conds = [{"type": "PodGroupScheduled", "status": status, "reason": "Scheduled", "message": ""}] if status else []
    md = {"name": "g", "namespace": "ns", "resourceVersion": "7", "generation": 1}
    return {"metadata": md, "status": {"conditions": conds}}


def test_pod_group_condition_never_regresses_true_and_carries_the_version() -> None:
    api = FakeApi()
    b = _binder(api)
    v1alpha2, v1beta1 = "scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1beta1"
    assert b.pod_group_condition(_pg("True"), v1alpha2, "False", "Unschedulable", "no") is None
    assert api.calls == []
    b.pod_group_condition(_pg(None), v1alpha2, "True", "Scheduled", "")
    b.pod_group_condition(_pg(None), v1beta1, "True", "Scheduled", "")
    (_, old), (_, new) = api.calls
    assert old[2]["metadata"]["resourceVersion"] == "7"
    assert [(c["type"], c["status"], c["observedGeneration"]) for c in old[2]["status"]["conditions"]] == [
        ("PodGroupScheduled", "True", 1)
    ]
    # v1.37 renamed the condition; the patch goes to the version the group is watched in.
    assert [c["type"] for c in new[2]["status"]["conditions"]] == ["PodGroupInitiallyScheduled"]
    assert new[3:] == (v1beta1, "podgroups")
    b.shutdown()


def test_events_never_wait_and_a_full_backlog_drops() -> None:
    api = FakeApi()
    api.gate.clear()  # the API is slow: events pile up
    b = _binder(api, event_backlog=2)
    for _ in range(6):
        b.event("ns", {"kind": "Pod", "name": "p"}, "Normal", "Scheduled", "Binding", "x")
    api.gate.set()
    b.shutdown()
    dropped = b.metrics.get("phalanx_api_writes_total", kind="event", result="dropped")
    written = len([c for c in api.calls if c[0] == "create_event"])
    assert dropped >= 1 and written + dropped == 6


class FakeVictimApi(FakeApi):
    def __init__(self, errors: list[ApiError | None]) -> None:
        super().__init__()
        self.errors = list(errors)

    def patch_pod_status(self, *args: Any) -> None:
        self.calls.append(("patch_pod_status", args))

    def evict_pod(self, *args: Any) -> None:
        self.calls.append(("evict_pod", args))
        err = self.errors.pop(0) if self.errors else None
        if err is not None:
            raise err

    def delete_pod(self, *args: Any) -> None:
        self.calls.append(("delete_pod", args))


_BUDGET = ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.", ("DisruptionBudget",))
_THROTTLED = ApiError(429, "Too many requests, please try again later.")  # API priority and fairness


@pytest.mark.parametrize(
    ("errors", "evictions", "result", "condition"),
    [
        ([], 1, "evicted", "True"),
        ([_THROTTLED, _THROTTLED], 3, "evicted", "True"),  # throttled: retried
        ([_BUDGET], 1, "refused", "False"),  # a budget: an answer, and the victim is not left marked disrupted
        ([ApiError(404, "gone")], 1, "evicted", "True"),
    ],
    ids=["evicted", "throttled", "budget", "gone"],
)
def test_victims_are_evicted_and_a_budget_refusal_is_an_answer(
    errors: list[ApiError | None], evictions: int, result: str, condition: str
) -> None:
    api = FakeVictimApi(errors)
    b = _binder(api)  # type: ignore[arg-type]
    err = b.preempt("ns", "v", "uid", "n0", "pod ns/p", "preempted")
    b.shutdown()
    assert (err is not None and err.refused_by_budget) == (result == "refused")
    assert len([c for c in api.calls if c[0] == "evict_pod"]) == evictions
    assert b.metrics.get("phalanx_preemption_victims_total", result=result) == 1
    last = [c for c in api.calls if c[0] == "patch_pod_status"][-1][1][2]["status"]["conditions"][0]
    assert (last["type"], last["status"]) == ("DisruptionTarget", condition)


def test_deletion_mode_deletes() -> None:
    api = FakeVictimApi([])
    b = Binder(api, Metrics(), "me", workers=1, eviction=False)  # type: ignore[arg-type]
    assert b.preempt("ns", "v", "uid", "n0", "pod ns/p", "preempted") is None
    b.shutdown()
    assert [c[0] for c in api.calls if c[0] != "create_event"] == ["patch_pod_status", "delete_pod"]
    assert b.metrics.get("phalanx_preemption_victims_total", result="deleted") == 1


def test_api_errors_cross_the_process_boundary() -> None:
    import pickle

    back = pickle.loads(pickle.dumps(_BUDGET))
    assert (back.code, back.message, back.causes) == (429, _BUDGET.message, ("DisruptionBudget",))
