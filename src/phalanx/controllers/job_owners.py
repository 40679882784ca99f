"""Who owns what: the owner references the Job controller writes and reads, and stable UIDs for objects that have
none (a snapshot's Job, the Workload phalanx just made), shared by both versions of the Job integration."""

from __future__ import annotations

import uuid

from phalanx.api import models as m

__all__ = ["controlled_by", "is_new_job", "job_owner", "uid_of"]


def uid_of(kind: str, meta: m.ObjectMeta) -> str:
    """The object's uid, or a stable one derived from its identity (objects a snapshot holds or we generate)."""
    return meta.uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"phalanx:{kind}/{meta.namespace}/{meta.name}"))


def job_owner(job: m.Job) -> m.OwnerReference:
    """``metav1.NewControllerRef(job)``: the Job as controller, blocking its owner's deletion."""
    return m.OwnerReference(
        api_version="batch/v1",
        kind="Job",
        name=job.metadata.name,
        uid=uid_of("Job", job.metadata),
        controller=True,
        block_owner_deletion=True,
    )


def controlled_by(meta: m.ObjectMeta, job: m.Job) -> bool:
    """``metav1.IsControlledBy``: the object's controller reference is this Job (by UID, as upstream compares)."""
    uid = uid_of("Job", job.metadata)
    return any(r.controller and r.uid == uid for r in meta.owner_references)


def is_new_job(job: m.Job, has_pods: bool) -> bool:
    """``isNewJob``: the Job never started (no pods, no start time, nothing finished, never suspended), so the
    controller may create its scheduling objects; a Job that predates the feature is left alone."""
    status = job.status
    if has_pods or status.start_time is not None or status.succeeded or status.failed:
        return False
    return not any(c.type == "Suspended" for c in status.conditions)
