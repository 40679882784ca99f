"""Regular expressions as CEL and Kubernetes use them: RE2 syntax, run by Python's ``re``.

RE2 lacks backreferences and lookaround, which ``re`` would silently accept; those are rejected here like RE2
rejects them ("invalid regex"). Patterns are cached: selectors reuse a handful of them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from phalanx.api.cel.errors import CelError

__all__ = ["compile_regex", "is_valid_regex"]

_UNSUPPORTED = re.compile(r"\\[1-9]|\(\?[=!<]|\(\?P[=>]|\(\?#")


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str] | str:
    if _UNSUPPORTED.search(pattern):
        return "invalid or unsupported Perl syntax"
    translated = pattern.replace("(?P<", "(?P<").replace(r"\z", r"\Z")
    try:
        return re.compile(translated)
    except re.error as error:
        return str(error)


def compile_regex(pattern: str) -> re.Pattern[str]:
    compiled = _compile(pattern)
    if isinstance(compiled, str):
        raise CelError(f"error parsing regexp: {compiled}: `{pattern}`")
    return compiled


def is_valid_regex(pattern: str) -> bool:
    return not isinstance(_compile(pattern), str)
