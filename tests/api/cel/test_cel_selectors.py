"""Selector results over a realistic H100 device: the typical DRA selectors and the CEL language around them."""

from __future__ import annotations

import pytest
from cel_devices import h100

from phalanx.api.cel import CelError, Features, compile_selector, device_view
from phalanx.api.dra import DeviceAttribute

GPU = 'device.attributes["gpu.nvidia.com"]'

CASES = [
    # The typical selectors of dra.md §2.3 and the NVIDIA device classes.
    ("driver-class", "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", True),
    ("memory-at-least-80G", 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) >= 0', True),
    # 81559Mi is less than 80Gi (81920Mi): exact quantities, the classic surprise on real H100s.
    ("memory-80Gi-exact", 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0', False),
    ("compute-capability", f"{GPU}.cudaComputeCapability.compareTo(semver('9.0.0')) >= 0", True),
    ("driver-major", f"{GPU}.driverVersion.major() >= 570", True),
    ("semver-greater", f"{GPU}.driverVersion.isGreaterThan(semver('580.95.4'))", True),
    ("semver-prerelease", "semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))", True),
    ("semver-normalize", "semver('v1.2', true).minor() == 2 && !isSemver('v1.2') && isSemver('v1.2', true)", True),
    ("bind", f'cel.bind(g, {GPU}, g.type == "gpu" && g.productName.startsWith("NVIDIA H"))', True),
    ("kubernetes-domain", 'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:15"', True),
    ("numa-node", 'device.attributes["resource.kubernetes.io"].numaNode == 0', True),
    ("multi-allocation", "!device.allowMultipleAllocations", True),
    # Robust lookups.
    ("unknown-domain-empty", 'device.attributes["dra.example.com"].size() == 0', True),
    ("unknown-domain-not-in", '!("dra.example.com" in device.attributes)', True),
    ("has-present", f"has({GPU}.uuid)", True),
    ("has-missing", f"has({GPU}.gpuModuleID)", False),
    ("in-map", f'"productName" in {GPU}', True),
    ("optional-present", f'{GPU}.?productName.orValue("") == "NVIDIA H100 80GB HBM3"', True),
    ("optional-missing", f"{GPU}.?gpuModuleID.orValue(-1) == -1", True),
    ("optional-index", f'{GPU}[?"gpuModuleID"].hasValue()', False),
    ("optional-chain", 'device.attributes["x.io"].?a.?b.orValue(1) == 1', True),
    ("optional-of", "optional.of(1).value() == 1 && !optional.none().hasValue()", True),
    # Short circuit absorbs errors from either side.
    ("or-absorbs-right-error", f"{GPU}.gpuModuleID == 1 || true", True),
    ("or-absorbs-left-error", f"true || {GPU}.gpuModuleID == 1", True),
    ("and-absorbs-left-error", f"{GPU}.gpuModuleID == 1 && false", False),
    ("all-absorbs-error", "[0, 1].all(x, 1 / x > 1)", False),
    ("exists-absorbs-error", "[0, 1].exists(x, 1 / x > 0)", True),
    # Language.
    ("macros", "[1, 2, 3].map(x, x * 2).filter(y, y > 2) == [4, 6]", True),
    ("map-filter-form", "[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]", True),
    ("exists-one", "[1, 2, 3].exists_one(x, x > 2)", True),
    ("two-variable-all", "{'a': 1, 'b': 2}.all(k, v, v > 0 && k.size() == 1)", True),
    ("ternary", "device.driver == 'x' ? false : true", True),
    ("numbers", "1u + 2u == 3u && 7 / -2 == -3 && 7 % -2 == 1 && 1.5 * 2.0 == 3.0 && 1 < 1.5", True),
    ("conversions", "int('42') == 42 && string(42) == '42' && double(1) == 1.0 && uint(3) == 3u", True),
    ("bytes-null", "b'ab'.size() == 2 && null == null && size({'a': 1}) == 1", True),
    ("string-functions", "'a-b-c'.split('-') == ['a', 'b', 'c'] && ['a', 'b'].join('/') == 'a/b'", True),
    (
        "string-more",
        "'  Hi '.trim().lowerAscii() == 'hi' && 'hello'.indexOf('l') == 2 && 'hello'.substring(1, 3) == 'el'",
        True,
    ),
    ("string-replace", "'aaa'.replace('a', 'b', 2) == 'bba' && 'abc'.charAt(1) == 'b' && 'abc'.endsWith('bc')", True),
    ("regex", f"{GPU}.productName.matches('^NVIDIA H[0-9]+') && 'a1b2'.find('[0-9]') == '1'", True),
    (
        "lists-library",
        "[1, 2, 3].isSorted() && [1, 2, 3].sum() == 6 && [3, 1].min() == 1 && [1, 2, 1].lastIndexOf(1) == 2",
        True,
    ),
    ("includes-scalar", f"{GPU}.architecture.includes('Hopper')", True),
    (
        "quantity-library",
        "quantity('1.5Gi').add(quantity('512Mi')).compareTo(quantity('2Gi')) == 0 && sign(quantity('2').sub(3)) == -1",
        True,
    ),
    (
        "quantity-integer",
        "quantity('1k').isInteger() && quantity('1k').asInteger() == 1000 && quantity('500m').asApproximateFloat() == 0.5",
        True,
    ),
    ("is-quantity", "isQuantity('10Gi') && !isQuantity('10 Gi')", True),
    ("sets", "sets.contains([1, 2, 3], [2]) && sets.intersects([1], [1, 5])", True),
    ("heterogeneous-equality", "dyn(1) == 1.0 && dyn('1') != 1", True),
    ("list-in", "'Hopper' in ['Ampere', 'Hopper']", True),
]


@pytest.mark.parametrize(("expression", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_selector_result(expression: str, expected: bool) -> None:
    assert compile_selector(expression).matches(h100()) is expected


def test_numa_node_distinguishes_devices() -> None:
    selector = compile_selector('device.attributes["resource.kubernetes.io"].numaNode == 1')
    assert [selector.matches(h100(numa_node=n)) for n in (0, 1)] == [False, True]


def test_same_expression_gives_same_selector_object() -> None:
    expression = "device.driver == 'gpu.nvidia.com'"
    assert compile_selector(expression) is compile_selector(expression)
    assert compile_selector(expression).expression == expression


def test_includes_works_on_list_attributes_when_the_gate_is_on() -> None:
    selector = compile_selector(f"{GPU}.partitions.includes(4)", Features(list_type_attributes=True))
    assert selector.matches(h100(list_attributes=True)) is True


def test_a_list_attribute_fails_every_selector_when_the_gate_is_off() -> None:
    view = device_view(
        "gpu.nvidia.com",
        {"type": DeviceAttribute(string="gpu"), "partitions": DeviceAttribute(ints=[1])},
        {},
        False,
        list_attributes=False,
    )
    with pytest.raises(CelError, match="attribute partitions: unsupported attribute value"):
        compile_selector(f"{GPU}.type == 'gpu'").matches(view)
