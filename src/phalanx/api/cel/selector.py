"""Device selectors: validation as kube-apiserver does it, compilation once, evaluation per device.

:func:`check_selector` is API validation (size, compile errors, result type, estimated cost, with the
NewExpressions environment and the feature gates); :func:`compile_selector` is the scheduler's path
(StoredExpressions, cached, no estimate) and :meth:`Selector.matches` evaluates with the runtime cost limit.
Runtime errors raise :class:`CelError`: they are fatal for the scheduling attempt, never "does not match".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from phalanx.api.cel.device import DeviceView
from phalanx.api.cel.dra import Features, dra_environment
from phalanx.api.cel.environment import Program
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.syntax import Expr
from phalanx.api.cel.types import Kind
from phalanx.api.cel.values import type_name

__all__ = ["COST_LIMIT", "MAX_EXPRESSION_BYTES", "Selector", "check_selector", "compile_selector", "selector_cost"]

MAX_EXPRESSION_BYTES = 10 * 1024
COST_LIMIT = 1_000_000
_CACHE_SIZE = 4096
TOO_COMPLEX = "too complex, exceeds cost limit"
DEFAULT_FEATURES = Features()


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector expression; immutable and safe to share between devices and threads."""

    expression: str
    program: Program = field(repr=False, compare=False)

    @property
    def syntax(self) -> Expr:
        return self.program.syntax

    def matches(self, device: DeviceView) -> bool:
        """Evaluate against one device; raises CelError on runtime errors (missing key, type mismatch, non-bool
        result, runtime cost above COST_LIMIT)."""
        return self.evaluate(device, COST_LIMIT)[0]

    def evaluate(self, device: DeviceView, cost_limit: int) -> tuple[bool, int]:
        """The result and the runtime cost spent, with an explicit cost limit."""
        if device.error is not None:
            raise device.error
        result, cost = self.program.evaluate(device.variables(), cost_limit)
        if not isinstance(result, bool):
            raise CelError(f"CEL result of type {type_name(result)} could not be converted to bool")
        return result, cost


def _result_error(program: Program, features: Features) -> str | None:
    output = program.output_type
    if output.kind in (Kind.BOOL, Kind.ANY) or (features.list_type_attributes and output.kind == Kind.DYN):
        return None
    return f"must evaluate to bool or the unknown type, not {output.display()}"


def _compile(expression: str, features: Features, stored: bool) -> Program:
    try:
        return dra_environment(features, stored).compile(expression)
    except CelError as error:
        raise CelError(f"compilation failed: {error}") from None


@lru_cache(maxsize=_CACHE_SIZE)
def compile_selector(expression: str, features: Features = DEFAULT_FEATURES) -> Selector:
    """Compile once (cached: the same expression gives the same Selector object). Raises CelError."""
    program = _compile(expression, features, stored=True)
    problem = _result_error(program, features)
    if problem is not None:
        raise CelError(problem)
    return Selector(expression, program)


def selector_cost(expression: str, features: Features = DEFAULT_FEATURES) -> int:
    """The estimated worst-case cost kube-apiserver computes for a valid selector."""
    return _compile(expression, features, stored=False).estimate_cost()[1]


def check_selector(expression: str, features: Features = DEFAULT_FEATURES) -> list[str]:
    """API validation of a device selector expression: empty list when valid, else messages in kube-apiserver's
    words (compile errors, 'must evaluate to bool', 'may not be more than 10240 bytes' size error,
    'too complex, exceeds cost limit' when the estimated cost is above COST_LIMIT)."""
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        return [f"Too long: may not be more than {MAX_EXPRESSION_BYTES} bytes"]
    try:
        program = _compile(expression, features, stored=False)
    except CelError as error:
        return [str(error)]
    problem = _result_error(program, features)
    if problem is not None:
        return [problem]
    if program.estimate_cost()[1] > COST_LIMIT:
        return [TOO_COMPLEX]
    return []
