"""Device selectors: validation as kube-apiserver does it, compilation once, evaluation per device.

:func:`check_selector` is API validation (size, compile errors, result type, estimated cost);
:func:`compile_selector` is the scheduler's path (compile, cached, no estimate) and :meth:`Selector.matches`
evaluates with the runtime cost limit. Runtime errors raise :class:`CelError`: they are fatal for the scheduling
attempt, never "does not match".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from phalanx.api.cel.cost import estimate_cost
from phalanx.api.cel.device import DeviceView
from phalanx.api.cel.environment import FIELD_TYPES, SCOPE, function_table
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import Frame, Plan
from phalanx.api.cel.parser import parse
from phalanx.api.cel.planner import Planner
from phalanx.api.cel.syntax import Expr
from phalanx.api.cel.values import type_name

__all__ = ["COST_LIMIT", "MAX_EXPRESSION_BYTES", "Selector", "check_selector", "compile_selector"]

MAX_EXPRESSION_BYTES = 10 * 1024
COST_LIMIT = 1_000_000
_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector expression; immutable and safe to share between devices and threads."""

    expression: str
    _plan: Plan = field(repr=False, compare=False)
    syntax: Expr = field(repr=False, compare=False)

    def matches(self, device: DeviceView) -> bool:
        """Evaluate against one device; raises CelError on runtime errors (missing key, type mismatch, non-bool
        result, runtime cost above COST_LIMIT)."""
        return self.evaluate(device, COST_LIMIT)[0]

    def evaluate(self, device: DeviceView, cost_limit: int) -> tuple[bool, int]:
        """The result and the runtime cost spent, with an explicit cost limit."""
        frame = Frame(dict(device.variables()), cost_limit)
        try:
            result = self._plan(frame)
        except RecursionError:
            raise CelError("expression nesting too deep") from None
        if not isinstance(result, bool):
            raise CelError(f"CEL result of type {type_name(result)} could not be converted to bool")
        return result, frame.cost


def _compile(expression: str) -> tuple[Expr, Plan]:
    syntax = parse(expression)
    plan, result_type = Planner(expression, function_table(), FIELD_TYPES).plan(syntax, SCOPE)
    if result_type not in ("bool", "dyn"):
        raise CelError(f"must evaluate to bool or the unknown type, not {result_type}")
    return syntax, plan


@lru_cache(maxsize=_CACHE_SIZE)
def compile_selector(expression: str) -> Selector:
    """Compile once (cached: the same expression gives the same Selector object). Raises CelError."""
    try:
        syntax, plan = _compile(expression)
    except RecursionError:
        raise CelError("expression nesting too deep") from None
    return Selector(expression, plan, syntax)


def check_selector(expression: str) -> list[str]:
    """API validation of a device selector expression: empty list when valid, else messages in kube-apiserver's
    words (compile errors, 'must evaluate to bool', 'may not be longer than 10240 bytes' style size error,
    'too complex, exceeds cost limit' when the estimated cost is above COST_LIMIT)."""
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        return [f"Too long: may not be more than {MAX_EXPRESSION_BYTES} bytes"]
    try:
        selector = compile_selector(expression)
    except CelError as error:
        message = str(error)
        return [message if message.startswith("must evaluate") else f"compilation failed: {message}"]
    if estimate_cost(selector.syntax) > COST_LIMIT:
        return ["too complex, exceeds cost limit"]
    return []
