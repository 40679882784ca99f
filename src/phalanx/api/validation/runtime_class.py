"""RuntimeClass validation: the handler is a DNS label; overhead quantities are valid resources; the scheduling
node selector and tolerations follow the pod rules."""

from __future__ import annotations

from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.names import check_dns_label
from phalanx.api.validation.meta import validate_labels, validate_object_meta
from phalanx.api.validation.resources import validate_overhead

__all__ = ["validate_runtime_class"]


def validate_runtime_class(rc: m.RuntimeClass) -> list[FieldError]:
    errs = validate_object_meta(rc.metadata, namespaced=False)
    if not rc.handler:
        errs.append(FieldError.required("handler"))
    else:
        errs += [FieldError.invalid("handler", rc.handler, msg) for msg in check_dns_label(rc.handler)]
    if rc.overhead is not None:
        errs += validate_overhead(rc.overhead.pod_fixed, "overhead.podFixed")
    if rc.scheduling is not None:
        errs += validate_labels(rc.scheduling.node_selector, "scheduling.nodeSelector")
    return errs
