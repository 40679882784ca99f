"""The ``device`` variable of a selector, built from a ResourceSlice device the way kube-scheduler builds it.

Qualified names are grouped by domain: a bare name belongs to the driver's domain, ``resource.kubernetes.io/x``
to ``resource.kubernetes.io``. Versions become :class:`Semver` values and capacities :class:`Quantity` values.
A list attribute is a list only with DRAListTypeAttributes; without it (the v1.36 default) it is an
"unsupported attribute value", which, as in kube-scheduler, fails every selector evaluated on the device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from phalanx.api.cel.errors import CelError
from phalanx.api.cel.semver import parse_semver
from phalanx.api.cel.values import DomainMap, Quantity, Semver
from phalanx.api.dra import DeviceAttribute, DeviceCapacity
from phalanx.api.quantity import QuantityError, parse_quantity

__all__ = ["DeviceView", "device_view"]


@dataclass(frozen=True, slots=True)
class DeviceView:
    """One device as a selector sees it; attribute values are int, bool, str, Semver or lists of those.
    ``error`` is the error every evaluation on this device reports (an attribute kube-scheduler cannot convert)."""

    driver: str
    attributes: Mapping[str, Mapping[str, object]]
    capacity: Mapping[str, Mapping[str, Quantity]]
    allow_multiple_allocations: bool = False
    error: CelError | None = None
    _variables: dict[str, object] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def variables(self) -> dict[str, object]:
        """The activation ``{"device": ...}``; built once per view since views are shared across selectors."""
        if not self._variables:
            self._variables["device"] = {
                "driver": self.driver,
                "attributes": DomainMap(self.attributes),
                "capacity": DomainMap(self.capacity),
                "allowMultipleAllocations": self.allow_multiple_allocations,
            }
        return self._variables


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, slash, identifier = name.partition("/")
    return (domain, identifier) if slash else (driver, name)


def _version(name: str, text: str) -> Semver:
    try:
        return parse_semver(text)
    except ValueError as error:
        raise CelError(f"attribute {name}: parse semantic version: {error}") from None


def _attribute_value(name: str, attribute: DeviceAttribute, lists: bool | None) -> object:
    if lists or lists is None:
        if attribute.ints is not None:
            return list(attribute.ints)
        if attribute.bools is not None:
            return list(attribute.bools)
        if attribute.strings is not None:
            return list(attribute.strings)
        if attribute.versions is not None:
            return [_version(name, v) for v in attribute.versions]
    for scalar in (attribute.int_, attribute.bool_, attribute.string):
        if scalar is not None:
            return scalar
    if attribute.version is not None:
        return _version(name, attribute.version)
    raise CelError(f"attribute {name}: unsupported attribute value")


def device_view(
    driver: str,
    attributes: Mapping[str, DeviceAttribute],
    capacity: Mapping[str, DeviceCapacity],
    allow_multiple_allocations: bool,
    list_attributes: bool | None = None,
) -> DeviceView:
    """Group qualified names by domain as Kubernetes does. Raises CelError for a capacity that is not a quantity;
    an attribute that cannot be converted is kept as the view's ``error``. ``list_attributes`` is the
    DRAListTypeAttributes gate: False makes a list attribute an "unsupported attribute value" as in kube-scheduler;
    None (a caller that does not know the gate) keeps lists as lists."""
    grouped: dict[str, dict[str, object]] = {}
    error: CelError | None = None
    for name, attribute in attributes.items():
        domain, identifier = _split(name, driver)
        try:
            grouped.setdefault(domain, {})[identifier] = _attribute_value(name, attribute, list_attributes)
        except CelError as problem:
            error = error or problem
    quantities: dict[str, dict[str, Quantity]] = {}
    for name, entry in capacity.items():
        domain, identifier = _split(name, driver)
        try:
            quantities.setdefault(domain, {})[identifier] = Quantity(parse_quantity(entry.value))
        except QuantityError as problem:
            raise CelError(f"capacity {name}: quantities {problem}") from None
    return DeviceView(driver, grouped, quantities, allow_multiple_allocations, error)
