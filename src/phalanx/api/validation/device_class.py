"""DeviceClass validation (``resource.k8s.io/v1``, spec dra.md §1.2): selectors, configuration and the extended
resource name pods may request instead of a claim.
"""

from __future__ import annotations

from phalanx.api import dra
from phalanx.api.errors import FieldError
from phalanx.api.validation import dra_fields as d
from phalanx.api.validation.meta import validate_object_meta
from phalanx.api.validation.resources import is_extended

__all__ = ["validate_device_class", "validate_device_config"]

MAX_CONFIG = 32


def validate_device_class(dc: dra.DeviceClass) -> list[FieldError]:
    """Every problem with a DeviceClass, as kube-apiserver reports them on create."""
    errs = validate_object_meta(dc.metadata, namespaced=False)
    spec = dc.spec
    errs += d.validate_selectors("spec.selectors", spec.selectors)
    errs += d.validate_set("spec.config", spec.config, MAX_CONFIG, validate_device_config)
    name = spec.extended_resource_name
    if name is not None and not is_extended(name):
        errs.append(FieldError.invalid("spec.extendedResourceName", name, "must be a valid extended resource name"))
    return errs


def validate_device_config(path: str, config: dra.DeviceClassConfiguration) -> list[FieldError]:
    return d.validate_opaque(path, config.opaque)
