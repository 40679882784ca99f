"""Just enough of the DNS wire format (RFC 1035) for the proxy's hot path: read the question, read the A/AAAA
records of an answer, rewrite the id, and build NXDOMAIN/SERVFAIL replies that keep the query's EDNS OPT record.
Hand-written rather than a full library so that a query costs microseconds."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "RCODE_NXDOMAIN",
    "RCODE_SERVFAIL",
    "TYPE_A",
    "TYPE_AAAA",
    "TYPE_CNAME",
    "TYPE_DNAME",
    "TYPE_NAMES",
    "Answer",
    "Question",
    "WireError",
    "answer",
    "answer_addresses",
    "error_reply",
    "parse_question",
    "read_name",
    "with_id",
]

__all__ = [
    "RCODE_NXDOMAIN",
    "RCODE_SERVFAIL",
    "TYPE_A",
    "TYPE_AAAA",
    "TYPE_NAMES",
    "TYPE_OPT",
    "Question",
    "WireError",
    "answer_addresses",
    "error_reply",
    "parse_question",
    "with_id",
]

TYPE_A = 1
TYPE_CNAME = 5
TYPE_DNAME = 39
TYPE_SVCB = 64
TYPE_HTTPS = 65
TYPE_AAAA = 28
TYPE_OPT = 41
RCODE_SERVFAIL = 2
RCODE_NXDOMAIN = 3
_HEADER = struct.Struct("!HHHHHH")
_RR = struct.Struct("!HHIH")
TYPE_NAMES = {
    1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV", 39: "DNAME",
    64: "SVCB", 65: "HTTPS",
}  # fmt: skip


class WireError(ValueError):
    """A message we cannot parse."""


@dataclass(frozen=True)
class Question:
    qid: int
    name: str  # lower case, no trailing dot
    qtype: int
    end: int  # offset just past the question


def _skip_name(data: bytes, off: int) -> int:
    while True:
        if off >= len(data):
            raise WireError("name runs past the end")
        n = data[off]
        if n == 0:
            return off + 1
        if n & 0xC0 == 0xC0:
            return off + 2
        off += n + 1


def parse_question(data: bytes) -> Question:
    if len(data) < 12:
        raise WireError("shorter than a DNS header")
    qid, _flags, qdcount = _HEADER.unpack_from(data)[:3]
    if qdcount != 1:
        raise WireError(f"{qdcount} questions")
    labels = []
    off = 12
    while True:
        if off >= len(data):
            raise WireError("question runs past the end")
        n = data[off]
        if n == 0:
            off += 1
            break
        if n & 0xC0:
            raise WireError("compressed question name")
        labels.append(data[off + 1 : off + 1 + n])
        off += n + 1
    if off + 4 > len(data):
        raise WireError("question without type and class")
    qtype = (data[off] << 8) | data[off + 1]
    name = b".".join(labels).decode("ascii", errors="replace").lower()
    return Question(qid, name, qtype, off + 4)


def read_name(data: bytes, off: int) -> str:
    """The (possibly compressed) name at `off`, lower case, without the trailing dot."""
    labels: list[bytes] = []
    for _ in range(128):  # bounds a pointer loop, and names have at most 127 labels
        if off >= len(data):
            raise WireError("name runs past the end")
        n = data[off]
        if n == 0:
            return b".".join(labels).decode("ascii", errors="replace").lower()
        if n & 0xC0 == 0xC0:
            if off + 1 >= len(data):
                raise WireError("pointer runs past the end")
            off = ((n & 0x3F) << 8) | data[off + 1]
            continue
        if n & 0xC0:
            raise WireError("unknown label type")
        labels.append(data[off + 1 : off + 1 + n])
        off += n + 1
    raise WireError("name too long or a pointer loop")


class Answer(NamedTuple):
    addresses: list[tuple[str, int]]  # (address as text, ttl) of every A and AAAA record
    names: tuple[str, ...]  # other names in the answer: CNAME and DNAME targets, owners other than the question


_NAMED = (TYPE_CNAME, TYPE_DNAME)
_SERVICE = (TYPE_SVCB, TYPE_HTTPS)


def answer(data: bytes, qname: str | None = None, qend: int = 0) -> Answer:
    """The answer section's addresses and the other names it mentions (a CNAME chain, a DNAME, an SVCB/HTTPS
    target). `qname` and `qend` (the offset just past the question) are the question's when the caller knows
    them. Reading stops at the first malformed record, keeping what was read. On the proxy's hot path: names are
    only decoded when a record is not the usual "A/AAAA owned by the question's name" (owner pointer 0xc00c)."""
    size = len(data)
    if size < 12:
        return _EMPTY
    _id, _flags, qdcount, ancount = _HEADER.unpack_from(data)[:4]
    out: list[tuple[str, int]] = []
    names: dict[str, None] | None = None
    try:
        if qend and qname is not None and qdcount == 1:
            off = qend
        else:
            off = 12
            for i in range(qdcount):
                if i == 0 and qname is None:
                    qname = read_name(data, off)
                off = _skip_name(data, off) + 4
        for _ in range(ancount):
            if data[off] == 0xC0 and data[off + 1] == 0x0C:
                off += 2
            else:
                owner = read_name(data, off)
                if owner != qname:
                    names = names or {}
                    names[owner] = None
                off = _skip_name(data, off)
            rtype, _cls, ttl, rdlen = _RR.unpack_from(data, off)
            off += 10
            if off + rdlen > size:
                break  # truncated: keep what we read
            if rtype == TYPE_A and rdlen == 4:
                out.append((socket.inet_ntop(socket.AF_INET, data[off : off + 4]), ttl))
            elif rtype == TYPE_AAAA and rdlen == 16:
                out.append((socket.inet_ntop(socket.AF_INET6, data[off : off + 16]), ttl))
            elif rtype in _NAMED:
                names = names or {}
                names[read_name(data, off)] = None
            elif rtype in _SERVICE and rdlen > 3:
                names = names or {}
                names[read_name(data, off + 2)] = None  # after SvcPriority: the TargetName ('' for "here")
            off += rdlen
    except (struct.error, WireError, IndexError):
        pass  # keep what we read; a truncated answer still taught us those addresses
    if names is None:
        return Answer(out, ())
    names.pop(qname or "", None)
    names.pop("", None)
    return Answer(out, tuple(names))


_EMPTY = Answer([], ())


def answer_addresses(data: bytes) -> list[tuple[str, int]]:
    """(address as text, ttl) of every A and AAAA record in the answer section (CNAME targets' included)."""
    return answer(data).addresses


def with_id(data: bytes, qid: int) -> bytes:
    return qid.to_bytes(2, "big") + data[2:]


def _has_opt(query: bytes, end: int) -> int | None:
    """The UDP size of the query's OPT record, if it has one (it is the only additional record we look for)."""
    arcount = _HEADER.unpack_from(query)[5]
    off = end
    try:
        for _ in range(arcount):
            name_end = _skip_name(query, off)
            rtype, cls, _ttl, rdlen = _RR.unpack_from(query, name_end)
            if rtype == TYPE_OPT:
                return int(cls)
            off = name_end + 10 + rdlen
    except (struct.error, WireError):
        return None
    return None


def error_reply(query: bytes, q: Question, rcode: int) -> bytes:
    """A reply with `rcode`, the query's question and, if the query spoke EDNS, an OPT record of our own."""
    flags = _HEADER.unpack_from(query)[1]
    rd = flags & 0x0100
    udp_size = _has_opt(query, q.end)
    header = _HEADER.pack(q.qid, 0x8000 | 0x0080 | rd | rcode, 1, 0, 0, 1 if udp_size is not None else 0)
    out = header + query[12 : q.end]
    if udp_size is not None:
        out += b"\x00" + struct.pack("!HHIH", TYPE_OPT, 1232, 0, 0)
    return out
