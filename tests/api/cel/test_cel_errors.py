"""CEL errors: runtime errors are raised (fatal for a scheduling attempt, never "no match"), compile errors point at
the position, and the runtime cost limit stops runaway comprehensions."""

from __future__ import annotations

import pytest
from cel_devices import h100

from phalanx.api.cel import COST_LIMIT, CelError, compile_selector

GPU = 'device.attributes["gpu.nvidia.com"]'

RUNTIME_ERRORS = [
    ("missing-key", f'{GPU}.productNam == "x"', "no such key: productNam"),
    ("missing-index-key", f'{GPU}["gpuModuleID"] == 1', "no such key: gpuModuleID"),
    ("type-mismatch", f"{GPU}.productName > 5", "no such overload"),
    ("member-on-wrong-type", f"{GPU}.productName.major() == 1", "no such overload: major(string)"),
    ("non-bool-result", f"{GPU}.productName", "CEL result of type string could not be converted to bool"),
    ("and-keeps-error-when-undecided", f"{GPU}.nope == 1 && true", "no such key: nope"),
    ("int-overflow", "9223372036854775807 + 1 > 0", "integer overflow"),
    ("negative-overflow", "-9223372036854775808 - 1 < 0", "integer overflow"),
    ("division-by-zero", "1 / 0 == 1", "division by zero"),
    ("bad-quantity", "sign(quantity('ten')) == 1", "quantities must match the regular expression"),
    ("bad-semver", "semver('1.0').major() == 1", "No Major.Minor.Patch elements found"),
    ("optional-none-value", "optional.none().value() == 1", "optional.none() dereference"),
    ("index-out-of-range", "[1][3] == 1", "index out of bounds: 3"),
    ("min-empty", "[].min() == 1", "min called on empty list"),
    ("includes-too-long", "lists.range(49).includes(100)", "cannot be applied to lists longer than 48 values"),
]


@pytest.mark.parametrize(("expression", "message"), [c[1:] for c in RUNTIME_ERRORS], ids=[c[0] for c in RUNTIME_ERRORS])
def test_runtime_error(expression: str, message: str) -> None:
    selector = compile_selector(expression)
    with pytest.raises(CelError) as error:
        selector.matches(h100())
    assert message in str(error.value)


COMPILE_ERRORS = [
    ("syntax-with-position", "device.driver ==", "ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>'"),
    ("caret", "device.driver = 'x'", " | ..............^"),
    ("undeclared", "gpu.type == 'gpu'", "ERROR: <input>:1:1: undeclared reference to 'gpu' (in container '')"),
    ("undefined-field", "device.drivers == 'x'", "undefined field 'drivers'"),
    ("unknown-function", "device.driver.startswith('x')", "undeclared reference to 'startswith'"),
    ("static-overload", "1 + 'a' == 2", "found no matching overload for '_+_' applied to '(int, string)'"),
    ("static-equality", "device.driver == 1", "found no matching overload for '_==_' applied to '(string, int)'"),
    ("not-bool", "device.driver", "must evaluate to bool or the unknown type, not string"),
    ("reserved", "if == 1", "reserved identifier: if"),
    ("bad-escape", r"'\q' == 'q'", "invalid escape sequence"),
    ("int-literal-range", "9223372036854775808 > 0", "invalid int literal"),
    ("has-needs-field", "has(device)", "invalid argument to has() macro"),
]


@pytest.mark.parametrize(("expression", "message"), [c[1:] for c in COMPILE_ERRORS], ids=[c[0] for c in COMPILE_ERRORS])
def test_compile_error(expression: str, message: str) -> None:
    with pytest.raises(CelError) as error:
        compile_selector(expression)
    assert message in str(error.value)


def test_runtime_cost_limit_stops_a_large_comprehension() -> None:
    # Each contains() over a 5,000-character string costs ~500 units: 3,000 of them exceed the limit of 1,000,000.
    expression = f"cel.bind(s, '{'a' * 5000}', lists.range(3000).all(i, !s.contains('b')))"
    selector = compile_selector(expression)
    with pytest.raises(CelError, match="operation cancelled: actual cost limit exceeded"):
        selector.matches(h100())
    result, cost = selector.evaluate(h100(), COST_LIMIT * 2)
    assert result is True
    assert cost > COST_LIMIT


def test_cost_is_reported_and_small_for_typical_selectors() -> None:
    selector = compile_selector(f"{GPU}.driverVersion.major() >= 570")
    result, cost = selector.evaluate(h100(), COST_LIMIT)
    assert result is True
    assert 0 < cost < 20


def test_cost_limit_is_not_absorbed_by_or() -> None:
    expression = f"cel.bind(s, '{'a' * 5000}', lists.range(3000).all(i, !s.contains('b'))) || true"
    with pytest.raises(CelError, match="cost limit exceeded"):
        compile_selector(expression).matches(h100())
