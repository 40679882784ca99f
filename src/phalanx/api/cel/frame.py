"""Per-evaluation state: the variables in scope and the runtime cost spent so far.

A compiled program is shared across devices and threads; each evaluation gets its own :class:`Frame`, so the
planned closures hold no mutable state. The cost is cel-go's runtime cost, charged as the interpreter observes
each step; evaluation stops with cel-go's message as soon as it exceeds the limit.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.api.cel.errors import CelError

__all__ = ["COST_EXCEEDED", "CostExceeded", "Frame", "Lazy", "Plan"]

COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class CostExceeded(CelError):
    """The runtime cost limit was reached; never absorbed by ``&&``, ``||`` or comprehensions."""


class Frame:
    __slots__ = ("cost", "limit", "variables")

    def __init__(self, variables: dict[str, object], limit: int) -> None:
        self.variables = variables
        self.cost = 0
        self.limit = limit

    def charge(self, units: int) -> None:
        self.cost += units
        if self.cost > self.limit:
            raise CostExceeded(COST_EXCEEDED)


Plan = Callable[[Frame], object]


class Lazy:
    """A ``cel.bind`` variable (a comprehension accumulator): evaluated the first time it is read, as cel-go
    initialises accumulators lazily; its cost is paid only then."""

    __slots__ = ("done", "init", "value")

    def __init__(self, init: Plan) -> None:
        self.init = init
        self.done = False
        self.value: object = None

    def get(self, frame: Frame) -> object:
        if not self.done:
            try:
                self.value = self.init(frame)
            except CostExceeded:
                raise
            except CelError as error:
                self.value = error  # an erroneous initialiser stays erroneous, without being evaluated again
            self.done = True
        if isinstance(self.value, CelError):
            raise self.value
        return self.value
