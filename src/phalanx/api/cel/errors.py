"""The one exception of the CEL package, and how compile errors point at the expression.

kube-apiserver prints cel-go's issues as ``ERROR: <input>:LINE:COL: message`` followed by the source line and a
caret; :func:`syntax_error` renders the same shape so users can find the spot in a long selector.
"""

from __future__ import annotations

__all__ = ["CelError", "located"]


class CelError(Exception):
    """A compile or runtime error; str() is the message kube-scheduler/apiserver would print."""


def located(expression: str, offset: int, message: str) -> CelError:
    """A compile error at character ``offset`` of ``expression``, rendered as cel-go renders issues."""
    before = expression[:offset]
    line = before.count("\n") + 1
    start = before.rfind("\n") + 1
    column = offset - start + 1
    end = expression.find("\n", start)
    text = expression[start : end if end >= 0 else len(expression)]
    return CelError(f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * (column - 1)}^")
