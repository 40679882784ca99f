"""DeviceTaintRule validation (``resource.k8s.io/v1``, GA in v1.37): a device selector and one taint.

The selector's driver, pool and device name the devices the taint goes on; each is checked like the field it
matches. ``selectors`` (CEL) was removed from the API in v1.35: kube-apiserver's strict decoding rejects it, and so
does phalanx, because ignoring it would taint more devices than the rule's author meant.
"""

from __future__ import annotations

from phalanx.api import dra
from phalanx.api.errors import FieldError
from phalanx.api.validation import dra_fields as d
from phalanx.api.validation import fields as f
from phalanx.api.validation.meta import validate_object_meta

__all__ = ["validate_device_taint_rule"]


def validate_device_taint_rule(rule: dra.DeviceTaintRule) -> list[FieldError]:
    """Every problem with a DeviceTaintRule, as kube-apiserver v1.37 reports them on create."""
    errs = validate_object_meta(rule.metadata, namespaced=False)
    selector = rule.spec.device_selector
    if selector is not None:
        path = "spec.deviceSelector"
        if selector.selectors is not None:
            detail = 'unknown field "spec.deviceSelector.selectors" (removed in Kubernetes v1.35)'
            errs.append(FieldError(f"{path}.selectors", f"Forbidden: {detail}"))
        if selector.driver is not None:
            errs += d.validate_driver_name(f"{path}.driver", selector.driver)
        if selector.pool is not None:
            errs += d.validate_pool_name(f"{path}.pool", selector.pool)
        if selector.device is not None:
            errs += f.required(f"{path}.device", selector.device, f.dns_label)
    errs += d.validate_taint("spec.taint", rule.spec.taint)
    return errs
