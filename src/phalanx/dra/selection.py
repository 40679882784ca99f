"""Device selectability (spec dra.md §3.6): class selectors, then request selectors, as CEL, cached.

Slices are immutable here, so a selector's verdict is cached across allocate calls per (expression, values of
the device paths it reads): devices that agree on those share one evaluation. A compile or runtime error is
remembered too and becomes fatal only when the search actually reaches that device, as upstream.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from phalanx.api import cel
from phalanx.dra.features import DEFAULT_FEATURES, Features
from phalanx.dra.inventory import DeviceInfo
from phalanx.dra.projection import Path, device_paths, projection

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

    def __init__(self, compile_fn: CompileFn | None, features: Features = DEFAULT_FEATURES) -> None:
        # The DRA CEL environment depends on two gates: DRAConsumableCapacity (device.allowMultipleAllocations)
        # and DRAListTypeAttributes (with it off, a list attribute is an unsupported value and includes() fails
        # to compile), as in kube-scheduler.
        self._list_attributes = features.list_type_attributes
        cel_features = cel.Features(features.consumable_capacity, features.list_type_attributes)
        self._compile: CompileFn = compile_fn or functools.partial(cel.compile_selector, features=cel_features)
        self._compiled: dict[str, Selector | tuple[str, str]] = {}
        self._paths: dict[str, frozenset[Path] | None] = {}
        self._keys: dict[tuple[str, int], Hashable] = {}
        self._verdicts: dict[tuple[str, Hashable], bool | tuple[str, str]] = {}
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

    def selection_key(self, expr: str, info: DeviceInfo) -> Hashable:
        """Equal for devices on which ``expr`` certainly gives the same verdict: the values of the device paths it
        reads (see :mod:`phalanx.dra.projection`), or the whole device when that is unknown."""
        key = self._keys.get((expr, info.index))
        if key is None:
            selector = self._selector(expr)
            paths = self._paths.get(expr)
            if isinstance(selector, tuple):
                key = "compile error"
            elif paths is None:
                key = info.signature
            else:
                key = projection(paths, info.driver, info.device, info.allow_multiple)
            self._keys[(expr, info.index)] = key
        return key

    def _verdict(self, expr: str, info: DeviceInfo) -> bool | tuple[str, str]:
        key = (expr, self.selection_key(expr, info))
        cached = self._verdicts.get(key)
        if cached is None:
            cached = self._evaluate(expr, info)
            self._verdicts[key] = cached
        return cached

    def _selector(self, expr: str) -> Selector | tuple[str, str]:
        selector = self._compiled.get(expr)
        if selector is None:
            try:
                selector = self._compile(expr)
            except cel.CelError as err:
                selector = ("compile", str(err))
            self._compiled[expr] = selector
            syntax = getattr(selector, "syntax", None)  # injected test compilers have none: whole-device keys
            self._paths[expr] = device_paths(syntax) if syntax is not None else None
        return selector

    def _evaluate(self, expr: str, info: DeviceInfo) -> bool | tuple[str, str]:
        selector = self._selector(expr)
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
            view = cel.device_view(info.driver, device.attributes, device.capacity, multi, self._list_attributes)
            self._views[info.signature] = view
        return view
