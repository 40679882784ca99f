"""Kubernetes name and label syntax (``k8s.io/apimachinery/pkg/util/validation``), with kube-apiserver's messages.

Each ``check_*`` function returns the list of problems (empty when the value is valid), so callers can attach the
field path and collect every problem instead of stopping at the first.
"""

from __future__ import annotations

import re

__all__ = [
    "check_dns_label",
    "check_dns_subdomain",
    "check_label_value",
    "check_path_segment_name",
    "check_qualified_name",
]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def check_dns_label(value: str) -> list[str]:
    """RFC 1123 label: at most 63 characters of ``[a-z0-9-]``."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _DNS1123_LABEL.match(value):
        errs.append(_DNS_LABEL_MSG)
    return errs


def check_dns_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain: at most 253 characters, dot-separated labels."""
    errs = []
    if len(value) > 253:
        errs.append(_max_len(253))
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(_DNS_SUBDOMAIN_MSG)
    return errs


def check_path_segment_name(value: str) -> list[str]:
    """A name usable as one URL path segment."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    for bad in ("/", "%"):
        if bad in value:
            return [f"may not contain '{bad}'"]
    return []


def check_qualified_name(value: str) -> list[str]:
    """A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of at most 63 characters."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in check_dns_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + _QUALIFIED_NAME_MSG.replace("name part must", "must", 1)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _QUALIFIED_NAME.match(name):  # an empty name fails the pattern too, as upstream reports it
        errs.append(_QUALIFIED_NAME_MSG)
    return errs


def check_label_value(value: str) -> list[str]:
    """A label value: empty, or at most 63 characters of ``[A-Za-z0-9-_.]`` starting and ending alphanumeric."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _LABEL_VALUE.match(value):
        errs.append(_LABEL_VALUE_MSG)
    return errs
