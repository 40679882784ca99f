"""The resourceclaim controller's DRAWorkloadResourceClaims rule (v1.37 beta, resourceclaim.BindTo): a member pod's
claim entry identical to one of its PodGroup's (same name, same template) creates no claim of its own and uses the
PodGroup's; any difference, or a pod outside the group, gets its own claim."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from phalanx.api import dra
from phalanx.api import models as m
from phalanx.controllers.resource_claim import generate_claims

TEMPLATES = [
    msgspec.convert(
        {"metadata": {"name": t, "namespace": "ml"}, "spec": {"spec": {"devices": {"requests": [{"name": "r"}]}}}},
        dra.ResourceClaimTemplate,
    )
    for t in ("imex", "other")
]


def group() -> m.PodGroup:
    doc = {
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": "imex"}],
        },
    }
    return msgspec.convert(doc, m.PodGroup)


def pod(name: str, entry: dict[str, Any], in_group: bool = True) -> m.Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}], "resourceClaims": [entry]}
    if in_group:
        spec["schedulingGroup"] = {"podGroupName": "train"}
    return msgspec.convert({"metadata": {"name": name, "namespace": "ml"}, "spec": spec}, m.Pod)


def test_identical_entries_share_the_pod_groups_claim() -> None:
    pg = group()
    pods = [pod(f"train-{i}", {"name": "imex", "resourceClaimTemplateName": "imex"}) for i in range(2)]
    out = generate_claims(pods, [pg], TEMPLATES, [])
    (claim,) = out.claims  # one for the group, none per pod
    assert [(r.kind, r.name) for r in claim.metadata.owner_references] == [("PodGroup", "train")]
    assert {p.status.resource_claim_statuses[0].resource_claim_name for p in pods} == {claim.metadata.name}
    assert pg.status.resource_claim_statuses[0].resource_claim_name == claim.metadata.name


@pytest.mark.parametrize(
    ("entry", "in_group"),
    [
        pytest.param({"name": "imex", "resourceClaimTemplateName": "other"}, True, id="other-template"),
        pytest.param({"name": "channel", "resourceClaimTemplateName": "imex"}, True, id="other-name"),
        pytest.param({"name": "imex", "resourceClaimTemplateName": "imex"}, False, id="not-a-member"),
    ],
)
def test_any_difference_means_a_claim_of_the_pods_own(entry: dict[str, Any], in_group: bool) -> None:
    p = pod("train-0", entry, in_group)
    out = generate_claims([p], [group()], TEMPLATES, [])
    owners = sorted((r.kind, r.name) for c in out.claims for r in c.metadata.owner_references)
    assert owners == [("Pod", "train-0"), ("PodGroup", "train")]
    own = next(c for c in out.claims if c.metadata.owner_references[0].kind == "Pod")
    assert p.status.resource_claim_statuses[0].resource_claim_name == own.metadata.name
