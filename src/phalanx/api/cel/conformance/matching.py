"""Whether an outcome (what an implementation did with a case) meets a case's expectation.

Values are tagged JSON (``{"int": "1"}``, ``{"list": [...]}``, ``{"map": [[k, v], ...]}``) and compare by CEL
semantics: types must agree, doubles compare numerically (NaN equals NaN here, as the conformance tests mean),
maps ignore entry order, quantities and semvers compare by value as their ``Equal`` does in Kubernetes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from phalanx.api.quantity import QuantityError, parse_quantity

__all__ = ["Outcome", "meets", "values_equal"]

Outcome = Mapping[str, Any]  # {"value": tagged} | {"error": msg} | {"compile_error": msg}, plus cost fields


def _semver_key(text: str) -> tuple[object, ...]:
    core, _, _ = text.partition("+")
    return (core,)


def _scalar_equal(tag: str, a: Any, b: Any) -> bool:
    if tag == "double":
        x, y = float(a), float(b)
        return (math.isnan(x) and math.isnan(y)) or x == y
    if tag == "quantity":
        try:
            return parse_quantity(a) == parse_quantity(b)
        except QuantityError:
            return bool(a == b)
    if tag == "semver":
        return _semver_key(a) == _semver_key(b)
    return bool(a == b)


def values_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Tagged values equal as CEL values of the same type."""
    if a.keys() != b.keys() or len(a) != 1:
        return False
    (tag, x), (_, y) = next(iter(a.items())), next(iter(b.items()))
    if tag == "list":
        return len(x) == len(y) and all(values_equal(p, q) for p, q in zip(x, y, strict=True))
    if tag == "map":
        return len(x) == len(y) and all(any(values_equal(k, k2) and values_equal(v, v2) for k2, v2 in y) for k, v in x)
    if tag == "optional":
        return bool(x is None and y is None) or (x is not None and y is not None and values_equal(x, y))
    return _scalar_equal(tag, x, y)


def _text_matches(pattern: str | None, text: str, how: str) -> bool:
    if pattern is None or how == "any":
        return True
    if how == "regex":
        return re.search(pattern, text) is not None
    if how == "exact":
        return pattern == text
    return pattern in text


def _compile_errors_match(patterns: list[str], message: str) -> bool:
    """Upstream's rule: every expected pattern matches some reported error (each error is one line)."""
    errors = [line.split(": ", 2)[-1] for line in message.splitlines() if line.startswith("ERROR: ")]
    errors = errors or [message]
    return all(any(re.search(p, e) for e in errors) for p in patterns)


def meets(expect: Mapping[str, Any], outcome: Outcome) -> bool:
    """True when ``outcome`` satisfies ``expect`` (see tests/data/cel/README.md for the expectation kinds)."""
    if "value" in expect:
        return "value" in outcome and values_equal(expect["value"], outcome["value"])
    if "error" in expect:
        return "error" in outcome and _text_matches(expect["error"], outcome["error"], expect.get("match", "any"))
    if "compile_error" in expect:
        message = outcome.get("compile_error")
        return message is not None and _text_matches(expect["compile_error"], message, expect.get("match", "in"))
    if "compile_errors" in expect:
        message = outcome.get("compile_error")
        return message is not None and _compile_errors_match(expect["compile_errors"], message)
    if "match" in expect or "match_error" in expect:
        return _dra_meets(expect, outcome)
    if "estimated" in expect:
        same_estimate = list(outcome.get("estimated") or []) == expect["estimated"]
        return same_estimate and bool(outcome.get("actual") == expect["runtime"])
    raise ValueError(f"unknown expectation {dict(expect)}")


def _dra_meets(expect: Mapping[str, Any], outcome: Outcome) -> bool:
    """TestCEL's rules: the estimated maximum cost equals ``cost``, the actual cost is not above it, and the match
    result or the error (by substring) is as expected."""
    estimated = outcome.get("estimated")
    if "cost" in expect and (estimated is None or estimated[1] != expect["cost"]):
        return False
    if estimated is not None and outcome.get("actual") is not None and outcome["actual"] > estimated[1]:
        return False
    if "match_error" in expect:
        return "error" in outcome and expect["match_error"] in outcome["error"]
    return "value" in outcome and outcome["value"] == {"bool": expect["match"]}
