"""Device selectability (spec dra.md §3.6): class selectors, then request selectors, as CEL, cached.

Slices are immutable here, so a selector's verdict on a device is cached across allocate calls per (expression,
device signature): devices with the same driver, attributes and capacity share one evaluation. A compile or
runtime error is remembered too and becomes fatal only when the search actually reaches that device, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from phalanx.api import cel
from phalanx.dra.inventory import DeviceInfo

__all__ = ["CompileFn", "Selector", "SelectorError", "Selectors"]


class Selector(Protocol):
    def matches(self, device: Any) -> bool: ...


CompileFn = Callable[[str], Selector]


@dataclass(frozen=True, slots=True)
class SelectorError:
    """A CEL error met while checking one device: the message kube-scheduler would return."""

    message: str


class Selectors:
    """Compiled selectors and cached verdicts for one inventory."""

    def __init__(self, compile_fn: CompileFn | None) -> None:
        self._compile: CompileFn = compile_fn or cel.compile_selector
        self._compiled: dict[str, Selector | tuple[str, str]] = {}
        self._verdicts: dict[tuple[str, int], bool | tuple[str, str]] = {}
        self._views: dict[int, cel.DeviceView] = {}

    def check(self, owner: str, expressions: list[str], info: DeviceInfo) -> bool | SelectorError:
        """All ``expressions`` in order, stopping at the first false one."""
        for i, expr in enumerate(expressions):
            verdict = self._verdict(expr, info)
            if isinstance(verdict, tuple):
                stage, message = verdict
                where = f"{owner}: selector #{i}"
                if stage == "runtime":
                    device = f"{info.driver}/{info.pool}/{info.name}"
                    return SelectorError(f"{where} on device {device}: CEL runtime error: {message}")
                return SelectorError(f"{where}: CEL compile error: {message}")
            if not verdict:
                return False
        return True

    def _verdict(self, expr: str, info: DeviceInfo) -> bool | tuple[str, str]:
        key = (expr, info.signature)
        cached = self._verdicts.get(key)
        if cached is None:
            cached = self._evaluate(expr, info)
            self._verdicts[key] = cached
        return cached

    def _evaluate(self, expr: str, info: DeviceInfo) -> bool | tuple[str, str]:
        selector = self._compiled.get(expr)
        if selector is None:
            try:
                selector = self._compile(expr)
            except cel.CelError as err:
                selector = ("compile", str(err))
            self._compiled[expr] = selector
        if isinstance(selector, tuple):
            return selector
        try:
            result = selector.matches(self._view(info))
        except cel.CelError as err:
            return ("runtime", str(err))
        if not isinstance(result, bool):
            return ("runtime", f"expression must evaluate to bool, got {type(result).__name__}")
        return result

    def _view(self, info: DeviceInfo) -> cel.DeviceView:
        view = self._views.get(info.signature)
        if view is None:
            device, multi = info.device, info.allow_multiple  # false when DRAConsumableCapacity is off
            view = self._views[info.signature] = cel.device_view(info.driver, device.attributes, device.capacity, multi)
        return view
