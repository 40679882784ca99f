"""``&&``, ``||`` and ``?:`` with CEL's commutative error rules.

``false && error`` and ``error && false`` are both false; ``true || error`` and ``error || true`` are both true.
An error survives only when the other operand cannot decide. A non-bool operand counts as an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import Frame, Plan
from phalanx.api.cel.overloads import no_overload
from phalanx.api.cel.syntax import Call

if TYPE_CHECKING:
    from phalanx.api.cel.planner import Planner, Typed

__all__ = ["plan_and", "plan_conditional", "plan_or"]


def _operands(planner: Planner, node: Call, scope: Mapping[str, str]) -> tuple[Plan, Plan]:
    (left, left_type), (right, right_type) = (planner.plan(arg, scope) for arg in node.args)
    for arg, kind in zip(node.args, (left_type, right_type), strict=True):
        if kind not in ("bool", "dyn"):
            raise planner.error(arg, f"found no matching overload for '{node.function}' applied to "
                                     f"'({left_type}, {right_type})'")  # fmt: skip
    return left, right


def _attempt(plan: Plan, frame: Frame) -> tuple[object, CelError | None]:
    try:
        return plan(frame), None
    except CelError as error:
        if str(error).startswith("operation cancelled"):
            raise  # running out of budget is never absorbed
        return None, error


def _logical(planner: Planner, node: Call, scope: Mapping[str, str], decisive: bool) -> Typed:
    left, right = _operands(planner, node, scope)
    function = node.function

    def logical(frame: Frame) -> object:
        frame.charge(1)
        lhs, left_error = _attempt(left, frame)
        if lhs is decisive:
            return decisive
        rhs, right_error = _attempt(right, frame)
        if rhs is decisive:
            return decisive
        if left_error is not None:
            raise left_error
        if right_error is not None:
            raise right_error
        if isinstance(lhs, bool) and isinstance(rhs, bool):
            return not decisive
        raise no_overload(function, [lhs, rhs])

    return logical, "bool"


def plan_and(planner: Planner, node: Call, scope: Mapping[str, str]) -> Typed:
    return _logical(planner, node, scope, decisive=False)


def plan_or(planner: Planner, node: Call, scope: Mapping[str, str]) -> Typed:
    return _logical(planner, node, scope, decisive=True)


def plan_conditional(planner: Planner, node: Call, scope: Mapping[str, str]) -> Typed:
    (condition, condition_type), (then, then_type), (otherwise, other_type) = (
        planner.plan(arg, scope) for arg in node.args
    )
    if condition_type not in ("bool", "dyn"):
        raise planner.error(node.args[0], f"found no matching overload for '_?_:_' applied to "
                                          f"'({condition_type}, {then_type}, {other_type})'")  # fmt: skip

    def conditional(frame: Frame) -> object:
        frame.charge(1)
        chosen = condition(frame)
        if chosen is True:
            return then(frame)
        if chosen is False:
            return otherwise(frame)
        raise no_overload("_?_:_", [chosen])

    return conditional, then_type if then_type == other_type else "dyn"
