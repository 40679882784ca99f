"""The test API server's own semantics, through the real client: field selectors, 410, stale updates, evictions."""

from __future__ import annotations

from typing import Any

import pytest

from kube.apiserver import APIServer, Store, field_matches, merge_patch, strategic_merge_status
from kube.conftest import pdb, pod
from phalanx.kube.api import RESOURCES, Api, ApiError, make_api_client


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.schedulerName=phalanx", True),
        ("spec.schedulerName==other", False),
        ("spec.nodeName=", True),
        ("spec.nodeName!=,spec.schedulerName=phalanx", False),
        ("spec.schedulerName=phalanx,status.phase!=Succeeded", True),
    ],
)
def test_field_selectors(selector: str, expected: bool) -> None:
    assert field_matches(pod("p"), selector) is expected


def test_patches() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    target = {"status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}}
    patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    assert strategic_merge_status(target, patch)["status"]["conditions"] == [
        {"type": "Ready", "status": "False"},
        {"type": "PodScheduled", "status": "False"},
    ]


def test_watch_from_a_compacted_version_is_410(apiserver: APIServer) -> None:
    st = apiserver.store
    st.create("pods", pod("p0"))
    api = Api(make_api_client(host=apiserver.url), qps=0)
    try:
        _, rv = api.list(RESOURCES["pods"])
        st.create("pods", pod("p1"))
        st.compact()
        events = list(api.watch(RESOURCES["pods"], rv, timeout=1))
        assert [(e.type, e.object["code"]) for e in events] == [("ERROR", 410)]
        with pytest.raises(ApiError) as err:
            api.bind("default", "p0", "wrong-uid", "n0")
        assert err.value.code == 409 and not err.value.retryable
    finally:
        api.close()


def test_lease_update_with_stale_version_conflicts(apiserver: APIServer) -> None:
    api = Api(make_api_client(host=apiserver.url), qps=0)
    try:
        body = {"metadata": {"name": "l", "namespace": "ns"}, "spec": {"holderIdentity": "a"}}
        api.create_lease("ns", body)
        lease = api.get_lease("ns", "l")
        assert lease is not None
        api.replace_lease("ns", "l", {**lease, "spec": {"holderIdentity": "b"}})
        with pytest.raises(ApiError) as err:
            api.replace_lease("ns", "l", {**lease, "spec": {"holderIdentity": "c"}})
        assert err.value.code == 409
    finally:
        api.close()


def _evictable(store: Store, phase: str | None = None) -> dict[str, Any]:
    p = pod("p0")
    p["metadata"]["labels"] = {"app": "db"}
    p["spec"]["nodeName"] = "n0"
    if phase:
        p["status"] = {"phase": phase}
    return store.create("pods", p)


def test_eviction_spends_the_budget_then_is_refused_with_kube_apiserver_words(apiserver: APIServer) -> None:
    st = apiserver.store
    st.create("poddisruptionbudgets", pdb("db", {"app": "db"}, allowed=1))
    api = Api(make_api_client(host=apiserver.url, pool=2), qps=0)
    uid = _evictable(st)["metadata"]["uid"]
    api.evict_pod("default", "p0", uid)
    assert st.get("pods", "default/p0") is None
    status = st.get("poddisruptionbudgets", "default/db")["status"]
    assert status["disruptionsAllowed"] == 0 and list(status["disruptedPods"]) == ["p0"]
    uid = _evictable(st)["metadata"]["uid"]
    with pytest.raises(ApiError) as refused:
        api.evict_pod("default", "p0", uid)
    assert refused.value.code == 429 and refused.value.refused_by_budget and not refused.value.retryable
    assert refused.value.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert st.get("pods", "default/p0") is not None
    api.close()


@pytest.mark.parametrize(
    ("phase", "uid", "budget", "code"),
    [
        ("Pending", None, 0, None),  # not running: budgets do not apply
        ("Succeeded", None, 0, None),
        (None, "other", 1, 409),  # the uid precondition
        (None, None, -1, 403),
    ],
    ids=["pending", "succeeded", "uid-precondition", "negative-budget"],
)
def test_eviction_rules(
    apiserver: APIServer, phase: str | None, uid: str | None, budget: int, code: int | None
) -> None:
    st = apiserver.store
    st.create("poddisruptionbudgets", pdb("db", {"app": "db"}, allowed=budget))
    api = Api(make_api_client(host=apiserver.url, pool=2), qps=0)
    real = _evictable(st, phase)["metadata"]["uid"]
    try:
        api.evict_pod("default", "p0", uid or real)
        got = None
    except ApiError as exc:
        got = exc.code
    api.close()
    assert got == code
    assert (st.get("pods", "default/p0") is None) == (code is None)
