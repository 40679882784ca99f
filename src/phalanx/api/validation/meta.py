"""ObjectMeta and label selectors, validated as apimachinery does for every kind phalanx reads.

Name formats differ by kind (the caller passes the check); namespaces are DNS labels; label and annotation keys are
qualified names; annotations share a 256 KiB budget.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.api import models as m
from phalanx.api import names
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f

__all__ = ["ANNOTATIONS_SIZE_LIMIT", "validate_label_selector", "validate_labels", "validate_object_meta"]

ANNOTATIONS_SIZE_LIMIT = 256 * 1024
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

NameCheck = Callable[[str], list[str]]


def validate_object_meta(
    meta: m.ObjectMeta, namespaced: bool, name_check: NameCheck = names.check_dns_subdomain
) -> list[FieldError]:
    """``ValidateObjectMeta``: name (or generateName), namespace, labels, annotations, owners and finalizers."""
    errs: list[FieldError] = []
    if meta.generate_name:
        # generateName is a prefix: a trailing '-' is fine because a random suffix follows it.
        prefix = meta.generate_name[:-1] + "a" if meta.generate_name.endswith("-") else meta.generate_name
        errs += [FieldError.invalid("metadata.generateName", meta.generate_name, msg) for msg in name_check(prefix)]
    if meta.name:
        errs += [FieldError.invalid("metadata.name", meta.name, msg) for msg in name_check(meta.name)]
    elif not meta.generate_name:
        errs.append(FieldError.required("metadata.name", "name or generateName is required"))
    errs += _validate_namespace(meta.namespace, namespaced)
    errs += validate_labels(meta.labels, "metadata.labels")
    errs += _validate_annotations(meta.annotations)
    errs += _validate_owner_references(meta.owner_references)
    for i, finalizer in enumerate(meta.finalizers):
        errs += f.qualified_name(f"metadata.finalizers[{i}]", finalizer)
    return errs


def _validate_namespace(namespace: str, namespaced: bool) -> list[FieldError]:
    if not namespaced:
        return [FieldError.forbidden("metadata.namespace", "not allowed on this type")] if namespace else []
    if not namespace:
        return [FieldError.required("metadata.namespace")]
    return f.dns_label("metadata.namespace", namespace)


def validate_labels(labels: dict[str, str], path: str) -> list[FieldError]:
    """``ValidateLabels``: keys are qualified names, values label values; both reported on the map's path."""
    errs: list[FieldError] = []
    for k, v in labels.items():
        errs += f.qualified_name(path, k)
        errs += f.label_value(path, v)
    return errs


def _validate_annotations(annotations: dict[str, str]) -> list[FieldError]:
    errs: list[FieldError] = []
    for k in annotations:
        # Keys are checked lower-cased but reported as written.
        errs += [FieldError.invalid("metadata.annotations", k, msg) for msg in names.check_qualified_name(k.lower())]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_SIZE_LIMIT:
        errs.append(
            FieldError("metadata.annotations", f"Too long: may not be more than {ANNOTATIONS_SIZE_LIMIT} bytes")
        )
    return errs


def _validate_owner_references(refs: list[m.OwnerReference]) -> list[FieldError]:
    # kube-apiserver reports owner reference fields without the list index.
    path = "metadata.ownerReferences"
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        errs += _validate_owner_reference(ref, path)
        if ref.controller:
            controller = f"{ref.kind}/{ref.name}"
            if first_controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in references for '
                    f"{first_controller} and {controller}"
                )
                errs.append(FieldError.invalid(path, f.shown(refs), detail))
            else:
                first_controller = controller
    return errs


def _validate_owner_reference(ref: m.OwnerReference, path: str) -> list[FieldError]:
    # apiVersion is GROUP/VERSION or VERSION; anything with more slashes has no version.
    parts = ref.api_version.split("/")
    version = parts[-1] if len(parts) <= 2 else ""
    errs = []
    if not version:
        errs.append(FieldError.invalid(f"{path}.apiVersion", ref.api_version, "version must not be empty"))
    if not ref.kind:
        errs.append(FieldError.invalid(f"{path}.kind", ref.kind, "kind must not be empty"))
    if not ref.name:
        errs.append(FieldError.invalid(f"{path}.name", ref.name, "name must not be empty"))
    if not ref.uid:
        errs.append(FieldError.invalid(f"{path}.uid", ref.uid, "uid must not be empty"))
    if ref.api_version == "v1" and ref.kind == "Event":
        errs.append(FieldError.invalid(path, f.shown(ref), "/v1, Kind=Event is disallowed from being an owner"))
    return errs


def validate_label_selector(selector: m.LabelSelector | None, path: str) -> list[FieldError]:
    """``ValidateLabelSelector``: matchLabels like labels, matchExpressions with the operator/values rules."""
    if selector is None:
        return []
    errs = validate_labels(selector.match_labels, f"{path}.matchLabels")
    for i, req in enumerate(selector.match_expressions):
        at = f"{path}.matchExpressions[{i}]"
        if req.operator in ("In", "NotIn"):
            if not req.values:
                errs.append(FieldError.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif req.operator in ("Exists", "DoesNotExist"):
            if req.values:
                errs.append(
                    FieldError.forbidden(
                        f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    )
                )
        else:
            errs.append(FieldError.invalid(f"{at}.operator", req.operator, "not a valid selector operator"))
        errs += f.qualified_name(f"{at}.key", req.key)
        for j, value in enumerate(req.values):
            errs += f.label_value(f"{at}.values[{j}]", value)
    return errs
