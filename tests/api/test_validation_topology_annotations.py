"""phalanx's topology annotations on PodGroups are validated like label keys, with one intent at most."""

from __future__ import annotations

import msgspec
import pytest

from phalanx.api.models import PodGroup
from phalanx.api.validation import validate_pod_group


def problems(annotations: dict[str, str]) -> list[str]:
    pg = msgspec.convert(
        {
            "metadata": {"name": "g", "namespace": "d", "annotations": annotations},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        },
        PodGroup,
    )
    return [f"{e.path}: {e.message}" for e in validate_pod_group(pg)]


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"scheduling.phalanx.dev/topology-required": "example.com/rack"}, []),
        ({"scheduling.phalanx.dev/topology-unconstrained": "true"}, []),
        (
            {"scheduling.phalanx.dev/topology-unconstrained": "yes"},
            [
                'metadata.annotations[scheduling.phalanx.dev/topology-unconstrained]: Unsupported value: "yes": '
                'supported values: "true", "false"'
            ],
        ),
        (
            {"scheduling.phalanx.dev/topology-required": "rack", "scheduling.phalanx.dev/topology-preferred": "rack"},
            [
                "metadata.annotations: Forbidden: at most one of scheduling.phalanx.dev/topology-required, "
                "scheduling.phalanx.dev/topology-preferred may be set"
            ],
        ),
    ],
    ids=["required-ok", "unconstrained-ok", "unconstrained-bad-value", "two-intents"],
)
def test_topology_annotations(annotations: dict[str, str], expected: list[str]) -> None:
    assert problems(annotations) == expected


def test_required_key_must_be_a_label_key() -> None:
    (problem,) = problems({"scheduling.phalanx.dev/topology-required": "not a key!"})
    assert problem.startswith("metadata.annotations[scheduling.phalanx.dev/topology-required]: Invalid value")
