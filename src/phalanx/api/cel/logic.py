"""``&&``, ``||``, ``?:`` and ``@not_strictly_false`` with CEL's commutative error rules and no cost of their own.

``false && error`` and ``error && false`` are both false; ``true || error`` and ``error || true`` both true. An
error survives only when the other operand cannot decide; a non-bool operand counts as "no such overload".
Running out of cost is never absorbed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import CostExceeded, Frame, Plan
from phalanx.api.cel.nodes import Call
from phalanx.api.cel.runtime import no_such_overload

if TYPE_CHECKING:
    from phalanx.api.cel.interpreter import Planner

__all__ = ["plan_and", "plan_conditional", "plan_not_strictly_false", "plan_or"]


def _attempt(plan: Plan, frame: Frame) -> tuple[object, CelError | None]:
    try:
        return plan(frame), None
    except CostExceeded:
        raise
    except CelError as error:
        return None, error


def _logical(planner: Planner, node: Call, decisive: bool) -> Plan:
    left, right = (planner.plan(arg) for arg in node.args)

    def logical(frame: Frame) -> object:
        lhs, left_error = _attempt(left, frame)
        if lhs is decisive:
            return decisive
        rhs, right_error = _attempt(right, frame)
        if rhs is decisive:
            return decisive
        if left_error is not None:
            raise left_error
        if not isinstance(lhs, bool):
            raise no_such_overload()
        if right_error is not None:
            raise right_error
        if not isinstance(rhs, bool):
            raise no_such_overload()
        return not decisive

    return logical


def plan_and(planner: Planner, node: Call) -> Plan:
    return _logical(planner, node, decisive=False)


def plan_or(planner: Planner, node: Call) -> Plan:
    return _logical(planner, node, decisive=True)


def plan_conditional(planner: Planner, node: Call) -> Plan:
    condition, then, otherwise = (planner.plan(arg) for arg in node.args)

    def conditional(frame: Frame) -> object:
        chosen = condition(frame)
        if chosen is True:
            return then(frame)
        if chosen is False:
            return otherwise(frame)
        raise no_such_overload()

    return conditional


def plan_not_strictly_false(planner: Planner, node: Call) -> Plan:
    """The loop condition of ``all``/``exists``: true unless the value is exactly false; costs 1."""
    (operand,) = (planner.plan(arg) for arg in node.args)

    def not_strictly_false(frame: Frame) -> object:
        value, _ = _attempt(operand, frame)
        frame.charge(1)
        return value is not False

    return not_strictly_false
