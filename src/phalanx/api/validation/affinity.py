"""Node affinity and node selector terms, as in ``ValidateNodeSelector`` and ``ValidatePreferredSchedulingTerms``.

Inter-pod affinity is kept undecoded by the models and is not validated here.
"""

from __future__ import annotations

import re

from phalanx.api import models as m
from phalanx.api import names
from phalanx.api.errors import FieldError
from phalanx.api.validation import fields as f

__all__ = ["validate_node_affinity"]

_IN_NOT_IN = ("In", "NotIn")
_EXISTS = ("Exists", "DoesNotExist")
_GT_LT = ("Gt", "Lt")
_NODE_FIELDS = {"metadata.name": names.check_dns_subdomain}
_INTEGER = re.compile(r"[+-]?[0-9]+")


def validate_node_affinity(affinity: m.NodeAffinity, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    required = affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        errs += _validate_node_selector(required, f"{path}.requiredDuringSchedulingIgnoredDuringExecution")
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        at = f"{preferred_path}[{i}]"
        if not 1 <= term.weight <= 100:
            errs.append(FieldError.invalid(f"{at}.weight", term.weight, "must be in the range 1-100"))
        errs += _validate_term(term.preference, f"{at}.preference", required=False)
    return errs


def _validate_node_selector(selector: m.NodeSelector, path: str) -> list[FieldError]:
    terms_path = f"{path}.nodeSelectorTerms"
    if not selector.node_selector_terms:
        return [FieldError.required(terms_path, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(selector.node_selector_terms):
        errs += _validate_term(term, f"{terms_path}[{i}]", required=True)
    return errs


def _validate_term(term: m.NodeSelectorTerm, path: str, required: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(term.match_expressions):
        errs += _validate_expression(req, f"{path}.matchExpressions[{j}]", required)
    for j, req in enumerate(term.match_fields):
        errs += _validate_field(req, f"{path}.matchFields[{j}]")
    return errs


def _validate_expression(req: m.NodeSelectorRequirement, path: str, required: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    values = f"{path}.values"
    if req.operator in _IN_NOT_IN:
        if not req.values:
            errs.append(FieldError.required(values, "must be specified when `operator` is 'In' or 'NotIn'"))
    elif req.operator in _EXISTS:
        if req.values:
            errs.append(
                FieldError.forbidden(values, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
    elif req.operator in _GT_LT:
        if len(req.values) != 1:
            errs.append(FieldError.required(values, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
        elif not _is_integer(req.values[0]):
            errs.append(FieldError.invalid(f"{values}[0]", req.values[0], "must be an integer"))
    else:
        errs.append(FieldError.invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
    errs += f.qualified_name(f"{path}.key", req.key)
    # Required terms check every value as a label value (preferred terms tolerate any value).
    if required:
        for i, value in enumerate(req.values):
            errs += f.label_value(f"{values}[{i}]", value)
    return errs


def _is_integer(text: str) -> bool:
    """What ``strconv.ParseInt(text, 10, 64)`` accepts: an optional sign, decimal digits, within int64."""
    return _INTEGER.fullmatch(text) is not None and len(text) <= 20 and not f.int64("", int(text))


def _validate_field(req: m.NodeSelectorRequirement, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if req.operator in _IN_NOT_IN:
        if len(req.values) != 1:
            detail = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            errs.append(FieldError.required(f"{path}.values", detail))
    else:
        errs.append(FieldError.invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
    check = _NODE_FIELDS.get(req.key)
    if check is None:
        errs.append(FieldError.invalid(f"{path}.key", req.key, "not a valid field selector key"))
        return errs
    for i, value in enumerate(req.values):
        errs += [FieldError.invalid(f"{path}.values[{i}]", value, msg) for msg in check(value)]
    return errs
