"""Comprehensions (every macro, ``cel.bind`` included) evaluated as cel-go's fold.

Lists iterate their elements (two variables: index and element), maps their keys (two variables: key and value).
The accumulator starts lazily, the first time it is read (so ``cel.bind`` costs its initialiser only when used);
each iteration evaluates the condition (stopping when it is false) and the step, whose error becomes the
accumulator's value rather than ending the loop, exactly as cel-go keeps error values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.frame import CostExceeded, Frame, Lazy, Plan
from phalanx.api.cel.nodes import Fold

if TYPE_CHECKING:
    from phalanx.api.cel.interpreter import Planner

__all__ = ["go_type_name", "plan_fold"]

_MISSING = object()
_GO_TYPES = {
    "bool": "types.Bool",
    "int": "types.Int",
    "uint": "types.Uint",
    "double": "types.Double",
    "string": "types.String",
    "bytes": "types.Bytes",
    "null_type": "types.Null",
    "kubernetes.Semver": "cel.Semver",
    "kubernetes.Quantity": "cel.Quantity",
    "google.protobuf.Timestamp": "types.Timestamp",
    "google.protobuf.Duration": "types.Duration",
    "optional_type": "*types.Optional",
    "type": "*types.Type",
}


def go_type_name(value: object) -> str:
    """The Go type cel-go names in "expected iterable type" errors."""
    from phalanx.api.cel.values import type_name

    name = type_name(value)
    return _GO_TYPES.get(name, name)


def _items(value: object, two: bool) -> Iterator[tuple[object, ...]]:
    if isinstance(value, list | tuple):
        return ((i, v) for i, v in enumerate(value)) if two else ((v,) for v in value)
    if isinstance(value, Mapping):
        return ((k, value[k]) for k in list(value)) if two else ((k,) for k in list(value))
    if two:
        raise CelError(f"unsupported comprehension range type: {go_type_name(value)}")
    raise CelError(f"got '{go_type_name(value)}', expected iterable type")


def _settled(value: object) -> Lazy:
    holder = Lazy(lambda frame: None)
    holder.done, holder.value = True, value
    return holder


def plan_fold(planner: Planner, node: Fold) -> Plan:
    iter_range, init = planner.plan(node.iter_range), planner.plan(node.accu_init)
    condition, step, result = planner.plan(node.condition), planner.plan(node.step), planner.plan(node.result)
    names = (node.iter_var, node.iter_var2) if node.iter_var2 else (node.iter_var,)
    accu, two = node.accu_var, bool(node.iter_var2)
    bind = node.is_bind()

    def fold(frame: Frame) -> object:
        variables = frame.variables
        saved = {n: variables.get(n, _MISSING) for n in (*names, accu)}
        variables[accu] = Lazy(init)
        try:
            if not bind:
                _loop(frame, _items(iter_range(frame), two), names, accu, condition, step)
            for name in names:
                variables.pop(name, None)
                if saved[name] is not _MISSING:
                    variables[name] = saved[name]
            return result(frame)
        finally:
            for name, old in saved.items():
                if old is _MISSING:
                    variables.pop(name, None)
                else:
                    variables[name] = old

    return fold


def _loop(
    frame: Frame, items: Iterator[tuple[object, ...]], names: tuple[str, ...], accu: str, condition: Plan, step: Plan
) -> None:
    variables = frame.variables
    for item in items:
        for name, value in zip(names, item, strict=True):
            variables[name] = value
        try:
            if condition(frame) is False:
                return
        except CostExceeded:
            raise
        except CelError:
            pass  # a condition that errs does not stop the loop
        try:
            variables[accu] = _settled(step(frame))
        except CostExceeded:
            raise
        except CelError as error:
            variables[accu] = _settled(error)
