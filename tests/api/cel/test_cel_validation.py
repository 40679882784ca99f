"""check_selector: API validation messages in kube-apiserver's words, and device_view's domain grouping."""

from __future__ import annotations

import pytest
from cel_devices import h100

from phalanx.api.cel import (
    MAX_EXPRESSION_BYTES,
    CelError,
    Quantity,
    Semver,
    check_selector,
    compile_selector,
    device_view,
)
from phalanx.api.dra import DeviceAttribute, DeviceCapacity


def test_valid_selector_has_no_messages() -> None:
    assert check_selector('device.attributes["gpu.nvidia.com"].driverVersion.major() >= 570') == []


def test_dyn_result_is_accepted_because_an_attribute_may_be_a_bool() -> None:
    assert check_selector('device.attributes["dra.example.com"].healthy') == []


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("device.driver", "must evaluate to bool or the unknown type, not string"),
        ("1 + 1", "must evaluate to bool or the unknown type, not int"),
        ("device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error"),
        ("foo == 1", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')"),
    ],
)
def test_invalid_selector_message(expression: str, message: str) -> None:
    messages = check_selector(expression)
    assert len(messages) == 1
    assert messages[0].startswith(message)


def test_too_long_expression() -> None:
    expression = "true || " * (MAX_EXPRESSION_BYTES // 8) + "true"
    assert check_selector(expression) == ["Too long: may not be more than 10240 bytes"]


def test_too_complex_expression() -> None:
    # Four nested comprehensions over attribute maps (32 entries each): 32^4 iterations exceed 1,000,000.
    nested = (
        "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, true))))"
    )
    assert check_selector(nested) == ["too complex, exceeds cost limit"]
    assert check_selector("device.attributes.all(a, device.attributes.all(b, true))") == []


def test_device_view_groups_names_by_domain() -> None:
    device = h100()
    assert device.attributes["gpu.nvidia.com"]["uuid"] == "GPU-5d2c0a41-8c1e-4a8e-9f63-2b7c1d0e9a11"
    assert device.attributes["resource.kubernetes.io"]["pcieRoot"] == "pci0000:15"
    assert device.attributes["gpu.nvidia.com"]["driverVersion"] == Semver(580, 95, 5)
    assert device.capacity["gpu.nvidia.com"]["memory"] == Quantity(81559 * 2**20)


def test_a_version_that_is_not_semver_fails_evaluation_on_that_device() -> None:
    view = device_view("gpu.nvidia.com", {"driverVersion": DeviceAttribute(version="580.95")}, {}, False)
    with pytest.raises(CelError, match=r"attribute driverVersion: parse semantic version: No Major\.Minor\.Patch"):
        compile_selector("true").matches(view)


def test_device_view_rejects_a_bad_capacity() -> None:
    with pytest.raises(CelError, match="capacity memory: quantities must match"):
        device_view("gpu.nvidia.com", {}, {"memory": DeviceCapacity(value="lots")}, False)


def test_deep_nesting_is_a_clear_error() -> None:
    messages = check_selector("(" * 300 + "true" + ")" * 300)
    assert messages[0].startswith("compilation failed: ERROR: <input>:1:101: expression recursion limit exceeded: 100")


def test_public_names_other_helpers_code_against() -> None:
    import phalanx.api.cel as cel

    contract = {
        "COST_LIMIT",
        "MAX_EXPRESSION_BYTES",
        "CelError",
        "DeviceView",
        "Selector",
        "check_selector",
        "compile_selector",
        "device_view",
    }
    assert contract <= set(cel.__all__)
    assert all(hasattr(cel, name) for name in cel.__all__)


def test_validate_cel_expression_reports_at_the_given_path_in_kube_apiserver_words() -> None:
    from phalanx.api.validation.dra_fields import validate_cel_expression

    at = "spec.deviceSelector.selectors[0].cel.expression"  # where a v1.37 DeviceTaintRule keeps its selectors
    errors = validate_cel_expression(at, "[1, 'a'].size() > 0")
    assert [(e.path, e.message) for e in errors] == [
        (
            at,
            "Invalid value: \"[1, 'a'].size() > 0\": compilation failed: ERROR: <input>:1:5: expected type 'int' "
            "but found 'string'\n | [1, 'a'].size() > 0\n | ....^",
        )
    ]
    assert validate_cel_expression(at, "device.driver == 'gpu.example.com'") == []
