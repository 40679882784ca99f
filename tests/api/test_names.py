"""Name and label syntax: each check returns kube-apiserver's messages, empty when the value is valid."""

from __future__ import annotations

import pytest

from phalanx.api.names import (
    check_dns_label,
    check_dns_subdomain,
    check_label_value,
    check_path_segment_name,
    check_qualified_name,
)

from api_cases import DNS_LABEL, DNS_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME

TOO_LONG_63 = "must be no more than 63 characters"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("worker-0", [], id="valid"),
        pytest.param("0", [], id="single digit"),
        pytest.param("a" * 63, [], id="63 characters"),
        pytest.param("a" * 64, [TOO_LONG_63], id="64 characters"),
        pytest.param("Worker", [DNS_LABEL], id="uppercase"),
        pytest.param("a.b", [DNS_LABEL], id="dot"),
        pytest.param("-a", [DNS_LABEL], id="leading dash"),
        pytest.param("", [DNS_LABEL], id="empty"),
    ],
)
def test_dns_label(value: str, want: list[str]) -> None:
    assert check_dns_label(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("train.worker-0", [], id="valid"),
        pytest.param("a" * 253, [], id="253 characters"),
        pytest.param("a" * 254, ["must be no more than 253 characters"], id="254 characters"),
        pytest.param("a..b", [DNS_SUBDOMAIN], id="empty label"),
        pytest.param("a.", [DNS_SUBDOMAIN], id="trailing dot"),
        pytest.param("A.b", [DNS_SUBDOMAIN], id="uppercase"),
    ],
)
def test_dns_subdomain(value: str, want: list[str]) -> None:
    assert check_dns_subdomain(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("app", [], id="plain"),
        pytest.param("My_Key.v1", [], id="mixed case, underscore, dot"),
        pytest.param("topology.kubernetes.io/zone", [], id="prefixed"),
        pytest.param("/zone", ["prefix part must be non-empty"], id="empty prefix"),
        pytest.param("example.com/", ["name part must be non-empty", QUALIFIED_NAME], id="empty name"),
        pytest.param("Example.com/a", [f"prefix part {DNS_SUBDOMAIN}"], id="bad prefix"),
        pytest.param("a" * 64, ["name part must be no more than 63 characters"], id="name too long"),
        pytest.param("a b", [QUALIFIED_NAME], id="space"),
        pytest.param("_a", [QUALIFIED_NAME], id="leading underscore"),
        pytest.param(
            "a/b/c",
            [
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')"
            ],
            id="two slashes",
        ),
    ],
)
def test_qualified_name(value: str, want: list[str]) -> None:
    assert check_qualified_name(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("", [], id="empty is valid"),
        pytest.param("v1.2_beta-3", [], id="valid"),
        pytest.param("a" * 63, [], id="63 characters"),
        pytest.param("a" * 64, [TOO_LONG_63], id="64 characters"),
        pytest.param("a b", [LABEL_VALUE], id="space"),
        pytest.param("-x", [LABEL_VALUE], id="leading dash"),
        pytest.param("a/b", [LABEL_VALUE], id="slash"),
    ],
)
def test_label_value(value: str, want: list[str]) -> None:
    assert check_label_value(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("Job", [], id="valid"),
        pytest.param("..", ["may not be '..'"], id="dot dot"),
        pytest.param("a/b", ["may not contain '/'"], id="slash"),
        pytest.param("50%", ["may not contain '%'"], id="percent"),
    ],
)
def test_path_segment_name(value: str, want: list[str]) -> None:
    assert check_path_segment_name(value) == want
