"""PodGroup deletion protection (spec §1.8): the finalizer ``scheduling.k8s.io/podgroup-protection`` stays on a
PodGroup while any non-terminal pod names it, so a group is not deleted and recreated under running members."""

from __future__ import annotations

from collections.abc import Iterable

from phalanx.api.models import Pod, PodGroup

__all__ = ["FINALIZER", "in_use", "protected_finalizers"]

FINALIZER = "scheduling.k8s.io/podgroup-protection"


def in_use(pg: PodGroup, pods: Iterable[Pod]) -> bool:
    """A pod uses the group when it names it and is neither Succeeded nor Failed."""
    ns, name = pg.metadata.namespace, pg.metadata.name
    return any(
        p.metadata.namespace == ns
        and p.spec.scheduling_group is not None
        and p.spec.scheduling_group.pod_group_name == name
        and p.status.phase not in ("Succeeded", "Failed")
        for p in pods
    )


def protected_finalizers(pg: PodGroup, pods: Iterable[Pod]) -> list[str] | None:
    """The finalizers the controller would write, or None when it would leave them alone: added to a live group
    in use, removed from a group being deleted once no pod uses it."""
    finalizers = pg.metadata.finalizers
    deleting = pg.metadata.deletion_timestamp is not None
    if not deleting and FINALIZER not in finalizers and in_use(pg, pods):
        return [*finalizers, FINALIZER]
    if deleting and FINALIZER in finalizers and not in_use(pg, pods):
        return [f for f in finalizers if f != FINALIZER]
    return None
