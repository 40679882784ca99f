"""Device selectability (spec dra.md §3.6): class selectors, then request selectors, as CEL, cached.

Slices are immutable here, so a selector's verdict on a device is cached across allocate calls per (expression,
device signature): devices with the same driver, attributes and capacity share one evaluation. A compile or
runtime error is remembered too and becomes fatal only when the search actually reaches that device, as upstream.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from phalanx.dra.inventory import DeviceInfo

__all__ = ["CompileFn", "Selector", "SelectorError", "Selectors", "load_cel"]


class Selector(Protocol):
    def matches(self, device: Any) -> bool: ...


CompileFn = Callable[[str], Selector]


@dataclass(frozen=True, slots=True)
class SelectorError:
    """A CEL error met while checking one device: the message kube-scheduler would return."""

    message: str


@dataclass(frozen=True, slots=True)
class _FallbackView:
    """Used only when phalanx.api.cel is not importable and tests inject their own compiler."""

    driver: str
    attributes: Mapping[str, Mapping[str, object]]
    capacity: Mapping[str, Mapping[str, object]]
    allow_multiple_allocations: bool = False


def load_cel() -> ModuleType | None:
    """phalanx.api.cel, imported on first use (it is optional for callers that inject a compiler)."""
    try:
        return importlib.import_module("phalanx.api.cel")
    except ImportError:
        return None


class Selectors:
    """Compiled selectors and cached verdicts for one inventory."""

    def __init__(self, compile_fn: CompileFn | None) -> None:
        self._cel = load_cel()
        if compile_fn is None:
            if self._cel is None:
                raise RuntimeError("phalanx.api.cel is not available and no CEL compiler was given")
            compile_fn = self._cel.compile_selector
        self._compile = compile_fn
        # CEL's own error type; anything else raised by the compiler is a bug and should surface as one.
        self._errors: tuple[type[Exception], ...] = (self._cel.CelError,) if self._cel is not None else (Exception,)
        self._compiled: dict[str, Selector | tuple[str, str]] = {}
        self._verdicts: dict[tuple[str, int], bool | tuple[str, str]] = {}
        self._views: dict[int, object] = {}

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
            except self._errors as err:
                selector = ("compile", str(err))
            self._compiled[expr] = selector
        if isinstance(selector, tuple):
            return selector
        try:
            result = selector.matches(self._view(info))
        except self._errors as err:
            return ("runtime", str(err))
        if not isinstance(result, bool):
            return ("runtime", f"expression must evaluate to bool, got {type(result).__name__}")
        return result

    def _view(self, info: DeviceInfo) -> object:
        view = self._views.get(info.signature)
        if view is None:
            device = info.device
            multi = bool(device.allow_multiple_allocations)
            if self._cel is not None:
                view = self._cel.device_view(info.driver, device.attributes, device.capacity, multi)
            else:
                view = _fallback_view(info, multi)
            self._views[info.signature] = view
        return view


def _fallback_view(info: DeviceInfo, multi: bool) -> _FallbackView:
    attributes: dict[str, dict[str, object]] = {}
    for name, attr in info.device.attributes.items():
        domain, _, ident = name.rpartition("/")
        value = next(
            v for v in (attr.int_, attr.bool_, attr.string, attr.version, attr.ints, attr.strings) if v is not None
        )
        attributes.setdefault(domain or info.driver, {})[ident] = value
    capacity: dict[str, dict[str, object]] = {}
    for name, cap in info.device.capacity.items():
        domain, _, ident = name.rpartition("/")
        capacity.setdefault(domain or info.driver, {})[ident] = cap.value
    return _FallbackView(info.driver, attributes, capacity, multi)
