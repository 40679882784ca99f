"""The resourceclaim controller's generation step: a ResourceClaim from each ResourceClaimTemplate a pod (or a
PodGroup, DRAWorkloadResourceClaims) references, recorded in the owner's ``status.resourceClaimStatuses``.

Names follow the controller's ``<pod>-<claim>-<suffix>`` pattern with a hash suffix instead of a random one, so a
snapshot gives the same names every run. A pod claim that matches a PodGroup claim exactly (same name, same
template: the DRAWorkloadResourceClaims rule of v1.37's resourceclaim controller, ``resourceclaim.BindTo``) creates
no claim of its own: it uses the PodGroup's, generated once per PodGroup and owned by it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from phalanx.api import dra
from phalanx.api import models as m
from phalanx.api.dra import POD_CLAIM_NAME_ANNOTATION
from phalanx.api.scheduling import HUB_VERSION
from phalanx.controllers.job_owners import uid_of

__all__ = ["GeneratedClaims", "generate_claims", "generated_claim_name"]

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the characters of kube's generateName suffixes
_MAX_BASE = 57  # kube keeps generated claim names within a DNS label by shortening <pod>-<claim>-


@dataclass
class GeneratedClaims:
    claims: list[dra.ResourceClaim] = field(default_factory=list)
    generated_from: dict[str, str] = field(default_factory=dict)  # claim namespace/name -> template name
    problems: list[str] = field(default_factory=list)  # pods whose template is missing (they wait)


def generated_claim_name(owner: str, claim: str, seed: str) -> str:
    """``<owner>-<claim>-<5 chars>``; a long base keeps its head and tail as the controller does."""
    base = f"{owner}-{claim}"
    if len(base) > _MAX_BASE:
        base = base[: _MAX_BASE // 2] + base[-(_MAX_BASE - _MAX_BASE // 2) :]
    digest = hashlib.blake2b(seed.encode(), digest_size=8).digest()
    suffix = "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])
    return f"{base}-{suffix}"


def generate_claims(
    pods: Sequence[m.Pod],
    pod_groups: Sequence[m.PodGroup],
    templates: Iterable[dra.ResourceClaimTemplate],
    existing: Iterable[dra.ResourceClaim],
) -> GeneratedClaims:
    """Generate the missing claims; pods and PodGroups get their ``status.resourceClaimStatuses`` filled in place."""
    by_template = {(t.metadata.namespace, t.metadata.name): t for t in templates}
    have = {(c.metadata.namespace, c.metadata.name) for c in existing}
    groups = {(g.metadata.namespace, g.metadata.name): g for g in pod_groups}
    out = GeneratedClaims()
    for pg in sorted(pod_groups, key=lambda g: (g.metadata.namespace, g.metadata.name)):
        entries = pg.spec.resource_claims if pg.spec else []
        statuses = {s.name for s in pg.status.resource_claim_statuses}
        for entry in entries:
            if entry.resource_claim_template_name is None or entry.name in statuses:
                continue
            name = _generate(
                out, have, by_template, "PodGroup", pg.metadata, entry.name, entry.resource_claim_template_name
            )
            if name is not None:
                pg.status.resource_claim_statuses.append(
                    m.PodGroupResourceClaimStatus(name=entry.name, resource_claim_name=name)
                )
    for pod in pods:
        if not pod.spec.resource_claims or pod.spec.node_name:
            continue
        statuses = {s.name for s in pod.status.resource_claim_statuses}
        group = _group_of(pod, groups)
        shared = {c.name: c for c in group.spec.resource_claims} if group is not None and group.spec else {}
        shared_names = {s.name: s.resource_claim_name for s in group.status.resource_claim_statuses} if group else {}
        for pod_entry in msgspec.convert(pod.spec.resource_claims, list[dra.PodResourceClaim]):
            template = pod_entry.resource_claim_template_name
            if template is None or pod_entry.name in statuses:
                continue
            match = shared.get(pod_entry.name)
            if (
                match is not None
                and match.resource_claim_template_name == template
                and match.resource_claim_name is None
            ):
                generated: str | None = shared_names.get(pod_entry.name)  # the PodGroup's claim
            else:
                generated = _generate(out, have, by_template, "Pod", pod.metadata, pod_entry.name, template)
            if generated is not None:
                pod.status.resource_claim_statuses.append(
                    m.PodResourceClaimStatus(name=pod_entry.name, resource_claim_name=generated)
                )
    return out


def _group_of(pod: m.Pod, groups: dict[tuple[str, str], m.PodGroup]) -> m.PodGroup | None:
    sg = pod.spec.scheduling_group
    if sg is None or not sg.pod_group_name:
        return None
    return groups.get((pod.metadata.namespace, sg.pod_group_name))


def _generate(
    out: GeneratedClaims,
    have: set[tuple[str, str]],
    by_template: dict[tuple[str, str], dra.ResourceClaimTemplate],
    kind: str,
    owner: m.ObjectMeta,
    claim_name: str,
    template_name: str,
) -> str | None:
    ns = owner.namespace
    template = by_template.get((ns, template_name))
    if template is None:
        out.problems.append(f'{kind} {ns}/{owner.name}: resourceclaimtemplate "{template_name}" not found')
        return None
    name = generated_claim_name(owner.name, claim_name, f"{kind}/{ns}/{owner.name}/{claim_name}")
    if (ns, name) in have:
        return name
    have.add((ns, name))
    api_version = "v1" if kind == "Pod" else HUB_VERSION
    claim = dra.ResourceClaim(
        metadata=m.ObjectMeta(
            name=name,
            namespace=ns,
            uid=uid_of("ResourceClaim", m.ObjectMeta(namespace=ns, name=name)),
            labels=dict(template.spec.metadata.labels),
            annotations={**template.spec.metadata.annotations, POD_CLAIM_NAME_ANNOTATION: claim_name},
            owner_references=[
                m.OwnerReference(
                    api_version=api_version,
                    kind=kind,
                    name=owner.name,
                    uid=uid_of(kind, owner),
                    controller=True,
                    block_owner_deletion=True,
                )
            ],
        ),
        spec=msgspec.structs.replace(template.spec.spec),
    )
    out.claims.append(claim)
    out.generated_from[f"{ns}/{name}"] = template_name
    return name
