"""Per-evaluation state: the variables in scope and the runtime cost spent so far.

A compiled selector is shared across devices and threads; each evaluation gets its own :class:`Frame`, so the
compiled closures themselves hold no mutable state.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.api.cel.errors import CelError

__all__ = ["COST_EXCEEDED", "Frame", "Plan"]

COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class Frame:
    __slots__ = ("cost", "limit", "variables")

    def __init__(self, variables: dict[str, object], limit: int) -> None:
        self.variables = variables
        self.cost = 0
        self.limit = limit

    def charge(self, units: int) -> None:
        self.cost += units
        if self.cost > self.limit:
            raise CelError(COST_EXCEEDED)


Plan = Callable[[Frame], object]
