"""The one exception of the CEL package, and how compile errors point at the expression.

kube-apiserver prints cel-go's issues as ``ERROR: <input>:LINE:COL: message`` followed by the source line and a
caret; :func:`syntax_error` renders the same shape so users can find the spot in a long selector.
"""

from __future__ import annotations

__all__ = ["CelError", "located", "render_issues"]


class CelError(Exception):
    """A compile or runtime error; str() is the message kube-scheduler/apiserver would print."""


def located(expression: str, offset: int, message: str) -> CelError:
    """A compile error at character ``offset`` of ``expression``, rendered as cel-go renders issues."""
    return CelError(_render(expression, offset, message))


def _render(expression: str, offset: int, message: str) -> str:
    before = expression[:offset]
    line = before.count("\n") + 1
    start = before.rfind("\n") + 1
    column = offset - start
    end = expression.find("\n", start)
    text = expression[start : end if end >= 0 else len(expression)].replace("\t", " ")
    caret = "".join("." if ord(c) < 0x80 else "\uff0e" for c in text[:column])
    caret += "^" if column >= len(text) or ord(text[column]) < 0x80 else "\uff3e"
    return f"ERROR: <input>:{line}:{column + 1}: {message}\n | {text}\n | {caret}"


def render_issues(expression: str, issues: list[tuple[int, str]]) -> str:
    """All issues as cel-go's ``Issues.String()``: one block per error, sorted by position."""
    ordered = sorted(issues, key=lambda issue: issue[0])
    return "\n".join(_render(expression, offset, message) for offset, message in ordered[:100])
