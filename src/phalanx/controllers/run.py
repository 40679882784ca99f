"""Running the controllers once over a snapshot, as `phalanx schedule` does before scheduling: every Job gets the
pods (and Workload and PodGroup) its controller would have created, and every pod or PodGroup that names a
ResourceClaimTemplate gets its generated claim, so a snapshot holding Jobs and templates schedules them."""

from __future__ import annotations

from typing import TypeVar

from phalanx.api import models as m
from phalanx.api.loader import Inventory
from phalanx.controllers.job import DEFAULT_OPTIONS, JobControllerOptions, reconcile_job
from phalanx.controllers.resource_claim import generate_claims

__all__ = ["run_once"]


def run_once(
    inv: Inventory,
    options: JobControllerOptions = DEFAULT_OPTIONS,
    workload_with_job: bool = True,
    workload_claims: bool = True,
) -> list[str]:
    """Reconcile every Job of ``inv`` in name order, adding what is created to ``inv`` (and replacing the Workloads
    and PodGroups whose gang minCount a Job changed); returns the events as ``KIND NAMESPACE/NAME: Reason`` lines.
    ``options`` says which Kubernetes version's Job controller to act as (``--compat v1.36``: phase 1). The
    feature gates of kube-controller-manager: without ``workload_with_job`` (WorkloadWithJob) a Job gets its pods
    only, without ``workload_claims`` (DRAWorkloadResourceClaims) claims are generated per pod only."""
    events: list[str] = []
    for job in sorted(inv.jobs, key=lambda j: (j.metadata.namespace, j.metadata.name)):
        out = reconcile_job(job, inv.workloads, inv.pod_groups, inv.pods, options)
        if not workload_with_job and out.pod_group is not None:
            # The Job controller without WorkloadWithJob creates no Workload or PodGroup, and pods naming none.
            for pod in out.pods:
                pod.spec.scheduling_group = None
            out.workload = out.pod_group = None
            out.events = []
            out.updated = []
        for obj in out.updated:
            if isinstance(obj, m.Workload):
                inv.workloads = _replaced(inv.workloads, obj)
            else:
                inv.pod_groups = _replaced(inv.pod_groups, obj)
        if out.workload is not None:
            inv.workloads.append(out.workload)
        if out.pod_group is not None:
            inv.pod_groups.append(out.pod_group)
        inv.pods.extend(out.pods)
        events += [f"Job {job.metadata.namespace}/{job.metadata.name}: {reason}" for reason in out.events]
    groups = inv.pod_groups if workload_claims else []
    generated = generate_claims(inv.pods, groups, inv.resource_claim_templates, inv.resource_claims)
    inv.resource_claims.extend(generated.claims)
    inv.generated_claims.update(generated.generated_from)
    events += [
        f"ResourceClaim {key}: Generated from ResourceClaimTemplate {t}" for key, t in generated.generated_from.items()
    ]
    return events


Named = TypeVar("Named", m.Workload, m.PodGroup)


def _replaced(objects: list[Named], new: Named) -> list[Named]:
    key = (new.metadata.namespace, new.metadata.name)
    return [new if (o.metadata.namespace, o.metadata.name) == key else o for o in objects]
