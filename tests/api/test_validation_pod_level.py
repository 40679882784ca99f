"""Pod-level resources (spec.resources): only cpu, memory and hugepages, requests within limits."""

from __future__ import annotations

import msgspec

from phalanx.api.models import Pod
from phalanx.api.validation import validate_pod


def problems(resources: dict[str, object]) -> list[str]:
    pod = msgspec.convert(
        {"metadata": {"name": "p", "namespace": "d"}, "spec": {"resources": resources, "containers": [{"name": "c"}]}},
        Pod,
    )
    return [f"{e.path}: {e.message}" for e in validate_pod(pod)]


def test_valid_pod_level_resources() -> None:
    assert problems({"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "4"}}) == []


def test_unsupported_pod_level_resource() -> None:
    assert problems({"requests": {"example.com/foo": "1"}, "limits": {"example.com/foo": "1"}})[0] == (
        'spec.resources.requests[example.com/foo]: Unsupported value: "example.com/foo": supported values: '
        '"cpu", "memory", "hugepages-*"'
    )


def test_pod_level_requests_within_limits() -> None:
    assert problems({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}) == [
        'spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'
    ]
