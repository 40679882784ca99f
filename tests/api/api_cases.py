"""Shared helpers for the api tests: a case table row, deep-merged object builders and kube-apiserver's messages."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from phalanx.api.validation import validate_object

DELETE = object()  # a patch value that removes the key from the base object


@dataclass(frozen=True)
class Replace:
    """A patch value that replaces the base's map instead of merging into it."""

    value: Any


DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
QUANTITY = "must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@dataclass(frozen=True)
class Case:
    """One row of a table: a patch over the base object and the exact ``path: message`` lines expected."""

    id: str
    patch: dict[str, Any]
    want: list[str] = field(default_factory=list)


def merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``patch`` merged in: maps merge recursively, everything else (lists too) replaces."""
    out = copy.deepcopy(base)
    for k, v in patch.items():
        if v is DELETE:
            out.pop(k, None)
        elif isinstance(v, Replace):
            out[k] = copy.deepcopy(v.value)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merged(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def errors_of(model: type[msgspec.Struct], base: dict[str, Any], patch: dict[str, Any]) -> list[str]:
    obj = msgspec.convert(merged(base, patch), model)
    return [f"{e.path}: {e.message}" for e in validate_object(obj)]


def params(cases: list[Case]) -> list[Any]:
    return [pytest.param(c, id=c.id) for c in cases]
