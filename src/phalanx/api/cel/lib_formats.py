"""Kubernetes' named formats: ``format.dns1123Label()`` ... ``format.named("uuid")`` and ``f.validate(s)``, which
returns ``optional.none()`` for a valid string, else the validation messages (apimachinery's wording)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.lib_urls import _request_uri_error
from phalanx.api.cel.values import NONE, Optional

__all__ = ["FORMATS", "NamedFormat", "functions"]

FORMAT_TYPE = t.struct("kubernetes.NamedFormat")
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QUALIFIED + ")?"
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    f"'{_LABEL}')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    f"is '{_SUBDOMAIN}')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    f"validation is '{_DNS1035}')"
)
_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    f"alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    f"'{_QUALIFIED}')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    f"'12345', regex used for validation is '{_LABEL_VALUE}')"
)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def _matches(pattern: str, text: str) -> bool:
    return re.fullmatch(pattern, text) is not None


def _too_long(text: str, limit: int) -> list[str]:
    return [f"must be no more than {limit} characters"] if len(text) > limit else []


def _label(text: str) -> list[str]:
    return _too_long(text, 63) + ([] if _matches(_LABEL, text) else [_LABEL_MSG])


def _subdomain(text: str) -> list[str]:
    return _too_long(text, 253) + ([] if _matches(_SUBDOMAIN, text) else [_SUBDOMAIN_MSG])


def _dns1035(text: str) -> list[str]:
    return _too_long(text, 63) + ([] if _matches(_DNS1035, text) else [_DNS1035_MSG])


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda text: check(text[:-1] + "a" if text.endswith("-") else text)


def _qualified(text: str) -> list[str]:
    parts = text.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            f"with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            f"validation is '{_QUALIFIED}') with an optional DNS subdomain prefix and '/' (e.g. "
            "'example.com/MyName')"
        ]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + e for e in _subdomain(parts[0])]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if name and not _matches(_QUALIFIED, name):
        errors.append(_NAME_MSG)
    return errors


def _label_value(text: str) -> list[str]:
    return _too_long(text, 63) + ([] if _matches(_LABEL_VALUE, text) else [_LABEL_VALUE_MSG])


def _uri(text: str) -> list[str]:
    problem = _request_uri_error(text)
    return [problem] if problem else []


def _byte(text: str) -> list[str]:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date(text: str) -> list[str]:
    try:
        datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        return ["invalid date"]
    return []


def _datetime(text: str) -> list[str]:
    from phalanx.api.cel.errors import CelError
    from phalanx.api.cel.lib_time import parse_timestamp

    try:
        parse_timestamp(text)
    except CelError:
        return ["invalid datetime"]
    return []


@dataclass(frozen=True, slots=True)
class NamedFormat:
    CEL_TYPE: ClassVar[t.CelType] = FORMAT_TYPE
    name: str
    check: Callable[[str], list[str]] = field(compare=False)
    max_regex_size: int = field(compare=False)


FORMATS = {
    "dns1123Label": NamedFormat("DNS1123Label", _label, 30),
    "dns1123Subdomain": NamedFormat("DNS1123Subdomain", _subdomain, 60),
    "dns1035Label": NamedFormat("DNS1035Label", _dns1035, 30),
    "qualifiedName": NamedFormat("QualifiedName", _qualified, 60),
    "dns1123LabelPrefix": NamedFormat("DNS1123LabelPrefix", _prefix(_label), 30),
    "dns1123SubdomainPrefix": NamedFormat("DNS1123SubdomainPrefix", _prefix(_subdomain), 60),
    "dns1035LabelPrefix": NamedFormat("DNS1035LabelPrefix", _prefix(_dns1035), 30),
    "labelValue": NamedFormat("LabelValue", _label_value, 40),
    "uri": NamedFormat("URI", _uri, 2048),
    "uuid": NamedFormat("uuid", lambda s: [] if _UUID.match(s) else ["does not match the UUID format"], 98),
    "byte": NamedFormat("byte", _byte, 2048),
    "date": NamedFormat("date", _date, 54),
    "datetime": NamedFormat("datetime", _datetime, 54),
}


def _validate(fmt: NamedFormat, text: str) -> Optional:
    errors = fmt.check(text)
    return Optional(True, errors) if errors else NONE


def functions() -> Iterator[Function]:
    for name, fmt in FORMATS.items():
        yield Function(f"format.{name}", (Overload(f"format.{name}", (), FORMAT_TYPE, lambda f=fmt: f),))
    yield Function(
        "validate",
        (Overload("format-validate", (FORMAT_TYPE, t.STRING), t.optional_of(t.list_of(t.STRING)), _validate, True),),
    )
    yield Function(
        "format.named",
        (
            Overload(
                "format-named",
                (t.STRING,),
                t.optional_of(FORMAT_TYPE),
                lambda n: Optional(True, FORMATS[n]) if n in FORMATS else NONE,
            ),
        ),
    )
