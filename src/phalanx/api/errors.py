"""Input problems, reported the way kube-apiserver does and rendered ``FILE:LINE: KIND NAMESPACE/NAME: PATH: msg``.

Exception tree (what the caller should do is in brackets)::

    InputError            bad input: print every problem, exit 2, write nothing [fix the input]
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FieldError", "InputError", "Problem", "Source"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object came from: a file (``-`` for stdin), its document index and, inside a List, the item."""

    path: str
    doc: int = 0
    item: int | None = None
    line: int = 0  # filled in lazily when a problem is reported


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field, as ``field.ErrorList`` holds it: the path and the rendered message."""

    path: str
    message: str

    @staticmethod
    def required(path: str, detail: str = "") -> FieldError:
        return FieldError(path, "Required value" + (f": {detail}" if detail else ""))

    @staticmethod
    def invalid(path: str, value: object, detail: str) -> FieldError:
        return FieldError(path, f"Invalid value: {_render(value)}: {detail}")

    @staticmethod
    def unsupported(path: str, value: object, supported: list[str]) -> FieldError:
        values = ", ".join(f'"{s}"' for s in supported)
        return FieldError(path, f"Unsupported value: {_render(value)}: supported values: {values}")

    @staticmethod
    def duplicate(path: str, value: object) -> FieldError:
        return FieldError(path, f"Duplicate value: {_render(value)}")

    @staticmethod
    def not_found(path: str, value: object) -> FieldError:
        return FieldError(path, f"Not found: {_render(value)}")

    @staticmethod
    def forbidden(path: str, detail: str) -> FieldError:
        return FieldError(path, f"Forbidden: {detail}")

    @staticmethod
    def too_many(path: str, actual: int, limit: int) -> FieldError:
        return FieldError(path, f"Too many: {actual}: must have at most {limit} items")


def _render(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class Problem:
    """A field error attached to an object and its place in the input."""

    source: Source
    kind: str
    namespace: str
    name: str
    error: FieldError

    def render(self) -> str:
        obj = f"{self.namespace}/{self.name}" if self.namespace else (self.name or "<unnamed>")
        where = f"{self.source.path}:{self.source.line}" if self.source.line else self.source.path
        path = f"{self.error.path}: " if self.error.path else ""
        return f"{where}: {self.kind} {obj}: {path}{self.error.message}"


class InputError(Exception):
    """The input cannot be used. Holds every problem found, so the user fixes them in one go."""

    def __init__(self, problems: list[Problem] | list[str]) -> None:
        self.lines = [p.render() if isinstance(p, Problem) else p for p in problems]
        super().__init__("\n".join(self.lines))
