"""Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library): quantity, semver, URLs, IP and CIDR, named formats,
and DRA's ``includes``.

Quantities are exact (:mod:`phalanx.api.quantity`); semantic versions parse as blang/semver does (``semver(s,
true)`` normalises ``v1.2`` first); IPs and CIDRs use :mod:`ipaddress` with Go's rules (no zones, no IPv4-mapped
IPv6 addresses, a CIDR keeps its host bits until ``masked()``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.lib_core import INT64_MAX, INT64_MIN
from phalanx.api.cel.runtime import cel_equals
from phalanx.api.cel.semver import parse_semver
from phalanx.api.cel.values import Quantity
from phalanx.api.quantity import QuantityError, parse_quantity

__all__ = ["CIDR", "CIDR_TYPE", "IP", "IP_TYPE", "MAX_INCLUDES_LIST", "QUANTITY", "SEMVER", "functions", "includes"]

QUANTITY, SEMVER = t.struct("kubernetes.Quantity"), t.struct("kubernetes.Semver")
IP_TYPE, CIDR_TYPE = t.opaque("net.IP"), t.opaque("net.CIDR")
URL_TYPE, FORMAT_TYPE = t.struct("kubernetes.URL"), t.struct("kubernetes.NamedFormat")
MAX_INCLUDES_LIST = 48


@dataclass(frozen=True, slots=True)
class IP:
    CEL_TYPE: ClassVar[t.CelType] = IP_TYPE
    address: ipaddress.IPv4Address | ipaddress.IPv6Address

    def cel_size(self) -> int:
        return (self.address.max_prefixlen + 7) // 8

    def __str__(self) -> str:
        return str(self.address)


@dataclass(frozen=True, slots=True)
class CIDR:
    CEL_TYPE: ClassVar[t.CelType] = CIDR_TYPE
    interface: ipaddress.IPv4Interface | ipaddress.IPv6Interface

    def cel_size(self) -> int:
        return (self.interface.network.prefixlen + 7) // 8

    def __str__(self) -> str:
        return f"{self.interface.ip}/{self.interface.network.prefixlen}"


_PERMISSIVE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")


def _quantity(text: str) -> Quantity:
    try:
        return Quantity(parse_quantity(text))
    except QuantityError as error:
        if _PERMISSIVE.match(text):
            raise CelError("unable to parse quantity's suffix") from None
        raise CelError(f"quantities {error}") from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _operand(value: object) -> Fraction:
    if isinstance(value, Quantity):
        return value.value
    assert isinstance(value, int)
    return Fraction(value)


def _fits(q: Quantity) -> bool:
    return q.value.denominator == 1 and INT64_MIN <= q.value <= INT64_MAX


def _as_integer(q: Quantity) -> int:
    if not _fits(q):
        raise CelError("cannot convert value to integer")
    return int(q.value)


def _sign(value: Fraction) -> int:
    return (value > 0) - (value < 0)


def _quantities() -> Iterator[Function]:
    q = QUANTITY
    yield Function("quantity", (Overload("string_to_quantity", (t.STRING,), q, _quantity),))
    yield Function("isQuantity", (Overload("is_quantity_string", (t.STRING,), t.BOOL, _is_quantity),))
    yield Function("sign", (Overload("quantity_sign", (q,), t.INT, lambda a: _sign(a.value)),))
    yield Function(
        "isGreaterThan", (Overload("quantity_is_greater_than", (q, q), t.BOOL, lambda a, b: a.value > b.value, True),)
    )
    yield Function(
        "isLessThan", (Overload("quantity_is_less_than", (q, q), t.BOOL, lambda a, b: a.value < b.value, True),)
    )
    yield Function(
        "compareTo", (Overload("quantity_compare_to", (q, q), t.INT, lambda a, b: _sign(a.value - b.value), True),)
    )
    yield Function(
        "asApproximateFloat", (Overload("quantity_get_float", (q,), t.DOUBLE, lambda a: float(a.value), True),)
    )
    yield Function("asInteger", (Overload("quantity_get_int", (q,), t.INT, _as_integer, True),))
    yield Function("isInteger", (Overload("quantity_is_integer", (q,), t.BOOL, _fits, True),))
    add = lambda a, b: Quantity(a.value + _operand(b))  # noqa: E731
    sub = lambda a, b: Quantity(a.value - _operand(b))  # noqa: E731
    yield Function(
        "add", (Overload("quantity_add", (q, q), q, add, True), Overload("quantity_add_int", (q, t.INT), q, add, True))
    )
    yield Function(
        "sub", (Overload("quantity_sub", (q, q), q, sub, True), Overload("quantity_sub_int", (q, t.INT), q, sub, True))
    )


def _semver(text: str, normalize: bool = False) -> object:
    try:
        return parse_semver(text, normalize)
    except ValueError as error:
        raise CelError(str(error)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _compare_semver(a: object, b: object) -> int:
    x, y = a.key(), b.key()  # type: ignore[attr-defined]
    return int((x > y) - (x < y))


def _semvers() -> Iterator[Function]:
    v = SEMVER
    yield Function(
        "semver",
        (
            Overload("string_to_semver", (t.STRING,), v, _semver),
            Overload("string_bool_to_semver", (t.STRING, t.BOOL), v, _semver),
        ),
    )
    yield Function(
        "isSemver",
        (
            Overload("is_semver_string", (t.STRING,), t.BOOL, _is_semver),
            Overload("is_semver_string_bool", (t.STRING, t.BOOL), t.BOOL, _is_semver),
        ),
    )
    yield Function(
        "isGreaterThan",
        (Overload("semver_is_greater_than", (v, v), t.BOOL, lambda a, b: _compare_semver(a, b) > 0, True),),
    )
    yield Function(
        "isLessThan", (Overload("semver_is_less_than", (v, v), t.BOOL, lambda a, b: _compare_semver(a, b) < 0, True),)
    )
    yield Function("compareTo", (Overload("semver_compare_to", (v, v), t.INT, _compare_semver, True),))
    yield Function("major", (Overload("semver_major", (v,), t.INT, lambda a: a.major, True),))
    yield Function("minor", (Overload("semver_minor", (v,), t.INT, lambda a: a.minor, True),))
    yield Function("patch", (Overload("semver_patch", (v,), t.INT, lambda a: a.patch, True),))


def parse_ip(text: str) -> IP:
    try:
        if "%" in text:
            raise ValueError("IPv6 zones are not supported")
        address = ipaddress.ip_address(text)
    except ValueError:
        raise CelError(
            f'IP Address "{text}" parse error during conversion from string: ParseAddr("{text}"): {_addr_problem(text)}'
        ) from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelError("IPv4-mapped IPv6 addresses are not allowed")
    return IP(address)


def _addr_problem(text: str) -> str:
    """Go's netip.ParseAddr wording for the common mistakes."""
    if ":" not in text:
        return "IPv4 address too long" if text.count(".") > 3 else "unable to parse IP"
    if ":::" in text:
        at = text[text.index(":::") + 2 :]
        return f'each colon-separated field must have at least one digit (at "{at}")'
    return "unable to parse IP"


def _prefix_problem(text: str) -> str:
    _address, slash, bits = text.rpartition("/")
    if not slash:
        return "no '/'"
    if not bits.isdigit():
        return f'bad bits after slash: "{bits}"'
    return "invalid prefix"


def parse_cidr(text: str) -> CIDR:
    try:
        interface = ipaddress.ip_interface(text)
        if "/" not in text:
            raise ValueError("no mask")
    except ValueError:
        raise CelError(
            f"network address parse error during conversion from string: network address parse error "
            f'during conversion from string: netip.ParsePrefix("{text}"): {_prefix_problem(text)}'
        ) from None
    return CIDR(interface)


def _is_ip(text: str) -> bool:
    try:
        parse_ip(text)
    except CelError:
        return False
    return True


def _is_cidr(text: str) -> bool:
    try:
        parse_cidr(text)
    except CelError:
        return False
    return True


def _contains_ip(cidr: CIDR, other: object) -> bool:
    address = parse_ip(other) if isinstance(other, str) else other
    assert isinstance(address, IP)
    return address.address in cidr.interface.network


def _contains_cidr(cidr: CIDR, other: object) -> bool:
    inner = parse_cidr(other) if isinstance(other, str) else other
    assert isinstance(inner, CIDR)
    return inner.interface.network.subnet_of(cidr.interface.network)  # type: ignore[arg-type]


def _global_unicast(ip: IP) -> bool:
    a = ip.address
    return not (
        a.is_unspecified
        or a.is_loopback
        or a.is_multicast
        or a.is_link_local
        or (isinstance(a, ipaddress.IPv4Address) and a == ipaddress.IPv4Address("255.255.255.255"))
    )


def _link_local_multicast(ip: IP) -> bool:
    a = ip.address
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return a.is_multicast and (int(a) >> 112) & 0xF == 2


def _networks() -> Iterator[Function]:
    s, b = t.STRING, t.BOOL
    yield Function(
        "ip",
        (
            Overload("string_to_ip", (s,), IP_TYPE, parse_ip),
            Overload("cidr_ip", (CIDR_TYPE,), IP_TYPE, lambda c: IP(c.interface.ip), True),
        ),
    )
    yield Function("family", (Overload("ip_family", (IP_TYPE,), t.INT, lambda i: i.address.version, True),))
    yield Function("ip.isCanonical", (Overload("ip_is_canonical", (s,), b, lambda x: str(parse_ip(x)) == x),))
    checks = {
        "isUnspecified": ("ip_is_unspecified", lambda i: i.address.is_unspecified),
        "isLoopback": ("ip_is_loopback", lambda i: i.address.is_loopback),
        "isLinkLocalMulticast": ("ip_is_link_local_multicast", _link_local_multicast),
        "isLinkLocalUnicast": ("ip_is_link_local_unicast", lambda i: i.address.is_link_local),
        "isGlobalUnicast": ("ip_is_global_unicast", _global_unicast),
    }
    for name, (oid, impl) in checks.items():
        yield Function(name, (Overload(oid, (IP_TYPE,), b, impl, True),))
    yield Function("isIP", (Overload("is_ip", (s,), b, _is_ip),))
    yield Function("cidr", (Overload("string_to_cidr", (s,), CIDR_TYPE, parse_cidr),))
    yield Function(
        "containsIP",
        (
            Overload("cidr_contains_ip_string", (CIDR_TYPE, s), b, _contains_ip, True),
            Overload("cidr_contains_ip_ip", (CIDR_TYPE, IP_TYPE), b, _contains_ip, True),
        ),
    )
    yield Function(
        "containsCIDR",
        (
            Overload("cidr_contains_cidr_string", (CIDR_TYPE, s), b, _contains_cidr, True),
            Overload("cidr_contains_cidr", (CIDR_TYPE, CIDR_TYPE), b, _contains_cidr, True),
        ),
    )
    yield Function(
        "prefixLength",
        (Overload("cidr_prefix_length", (CIDR_TYPE,), t.INT, lambda c: c.interface.network.prefixlen, True),),
    )
    yield Function(
        "masked",
        (
            Overload(
                "cidr_masked",
                (CIDR_TYPE,),
                CIDR_TYPE,
                lambda c: CIDR(ipaddress.ip_interface(str(c.interface.network))),
                True,
            ),
        ),
    )
    yield Function("isCIDR", (Overload("is_cidr", (s,), b, _is_cidr),))
    yield Function(
        "string", (Overload("ip_to_string", (IP_TYPE,), s, str), Overload("cidr_to_string", (CIDR_TYPE,), s, str))
    )


def _includes(container: object, value: object) -> bool:
    if isinstance(container, list | tuple):
        for i, item in enumerate(container):
            if i >= MAX_INCLUDES_LIST:
                raise CelError(f"'includes' function cannot be applied to lists longer than {MAX_INCLUDES_LIST} values")
            if cel_equals(item, value):
                return True
        return False
    return cel_equals(container, value)


def includes() -> Function:
    """DRA's ``includes`` (DRAListTypeAttributes): membership for a list, equality for a scalar."""
    return Function("includes", (Overload("dra_includes_dyn_dyn", (t.DYN, t.DYN), t.BOOL, _includes, True),))


def functions() -> Iterator[Function]:
    from phalanx.api.cel import lib_formats, lib_urls

    yield from _quantities()
    yield from _semvers()
    yield from _networks()
    yield from lib_urls.functions()
    yield from lib_formats.functions()
