"""Pod priority as the Priority admission plugin resolves it from PriorityClasses."""

from __future__ import annotations

from collections.abc import Iterable

from phalanx.api.models import PriorityClass

__all__ = ["SYSTEM_CLASSES", "PriorityResolver", "UnknownPriorityClass"]

# Built into every cluster (pkg/apis/scheduling): they need no object in the snapshot.
SYSTEM_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


class UnknownPriorityClass(LookupError):
    """A priorityClassName that names no PriorityClass; admission would have rejected the object."""


class PriorityResolver:
    """Resolves ``(priority, priorityClassName)`` to the integer priority admission would have written."""

    def __init__(self, classes: Iterable[PriorityClass]) -> None:
        self.values = dict(SYSTEM_CLASSES)
        self.policies: dict[str, str] = {}
        self.default: PriorityClass | None = None
        for pc in classes:
            self.values[pc.metadata.name] = pc.value or 0
            if pc.preemption_policy:
                self.policies[pc.metadata.name] = pc.preemption_policy
            # With several global defaults the API server would pick the lowest; be deterministic the same way.
            if pc.global_default and (self.default is None or (pc.value or 0) < (self.default.value or 0)):
                self.default = pc

    def resolve(self, priority: int | None, class_name: str) -> int:
        if priority is not None:
            return priority
        if class_name:
            if class_name not in self.values:
                raise UnknownPriorityClass(f'no PriorityClass with name "{class_name}" was found')
            return self.values[class_name]
        return (self.default.value or 0) if self.default is not None else 0
