"""What one sync of a Job creates or changes, and how the Job controller is configured (which version it acts as)."""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.api import models as m

__all__ = ["V1_36", "V1_37", "VERSIONS", "JobControllerOptions", "JobObjects"]

V1_36 = "v1.36"
V1_37 = "v1.37"
VERSIONS = (V1_36, V1_37)


@dataclass(frozen=True)
class JobControllerOptions:
    """Which kube-controller-manager the Job controller acts as. ``--compat v1.36`` selects phase 1."""

    version: str = V1_37
    # A delegated Job's PodGroup joins the CompositePodGroup its parent names in the annotation
    # scheduling.k8s.io/parent-compositepodgroup. v1.37.2 defines the annotation, but its Job controller does not
    # read it yet, so there the PodGroup is a root of its own (docs/cli.md, "Jobs").
    parent_annotation: bool = True

    def __post_init__(self) -> None:
        if self.version not in VERSIONS:
            raise ValueError(f"unknown Job controller version {self.version!r}: one of {', '.join(VERSIONS)}")

    @classmethod
    def for_version(cls, version: str) -> JobControllerOptions:
        """The controller of Kubernetes ``version`` ("v1.36", "1.37.2" ...), upstream's behaviour only."""
        minor = "v" + ".".join(version.removeprefix("v").split(".")[:2])
        return cls(version=minor, parent_annotation=False)


@dataclass
class JobObjects:
    """What reconciling one Job creates (objects that already exist are not repeated), and the existing Workload and
    PodGroup whose gang minCount it changed (elastic scaling: the Job's minCount or parallelism changed)."""

    workload: m.Workload | None = None
    pod_group: m.PodGroup | None = None
    pods: list[m.Pod] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # WorkloadCreated, PodGroupCreated, AmbiguousWorkload ...
    updated: list[m.Workload | m.PodGroup] = field(default_factory=list)
