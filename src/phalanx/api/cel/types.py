"""CEL static types: what the checker infers for every node and what function declarations are written in.

A :class:`CelType` is a kind plus a name and type parameters: ``list(int)`` is ``CelType(LIST, "list", (INT,))``.
Type parameters of generic overloads (``A`` in ``list(A) + list(A)``) are ``TYPE_PARAM`` types; the checker
instantiates them with fresh variables per call. :func:`format_type` prints a type the way cel-go's error
messages do, :meth:`CelType.display` the way cel-go's ``Type.String()`` does (used in "must evaluate to ...").
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ANY",
    "BOOL",
    "BYTES",
    "DOUBLE",
    "DURATION",
    "DYN",
    "ERROR",
    "INT",
    "NULL",
    "STRING",
    "TIMESTAMP",
    "TYPE",
    "UINT",
    "CelType",
    "Kind",
    "format_type",
    "list_of",
    "map_of",
    "opaque",
    "optional_of",
    "struct",
    "type_of",
    "type_param",
]


class Kind:
    """Type kinds, named as in cel-go's ``types.Kind``."""

    ANY = "any"
    BOOL = "bool"
    BYTES = "bytes"
    DOUBLE = "double"
    DURATION = "duration"
    DYN = "dyn"
    ERROR = "error"
    INT = "int"
    LIST = "list"
    MAP = "map"
    NULL = "null"
    OPAQUE = "opaque"
    STRING = "string"
    STRUCT = "struct"
    TIMESTAMP = "timestamp"
    TYPE = "type"
    TYPE_PARAM = "type_param"
    UINT = "uint"


@dataclass(frozen=True, slots=True)
class CelType:
    kind: str
    name: str
    params: tuple[CelType, ...] = ()

    def __str__(self) -> str:
        return format_type(self)

    def display(self) -> str:
        """cel-go's ``Type.String()``: well-known types by their protobuf names."""
        special = {
            Kind.ANY: "google.protobuf.Any",
            Kind.TIMESTAMP: "google.protobuf.Timestamp",
            Kind.DURATION: "google.protobuf.Duration",
            Kind.NULL: "null_type",
            Kind.ERROR: "*error*",
        }
        if self.kind in special:
            return special[self.kind]
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(p.display() for p in self.params)})"

    def is_dyn(self) -> bool:
        return self.kind in (Kind.DYN, Kind.ANY)

    def is_dyn_or_error(self) -> bool:
        return self.kind in (Kind.DYN, Kind.ANY, Kind.ERROR)

    def is_optional(self) -> bool:
        return self.kind == Kind.OPAQUE and self.name == "optional_type"


def format_type(t: CelType) -> str:
    """cel-go's ``FormatCELType``, the notation of checker errors: ``list(int)``, ``null``, ``!error!``."""
    names = {
        Kind.ANY: "any",
        Kind.DURATION: "duration",
        Kind.ERROR: "!error!",
        Kind.NULL: "null",
        Kind.TIMESTAMP: "timestamp",
    }
    if t.kind in names:
        return names[t.kind]
    if t.kind == Kind.TYPE_PARAM or not t.params:
        return t.name
    return f"{t.name}({', '.join(format_type(p) for p in t.params)})"


ANY = CelType(Kind.ANY, "google.protobuf.Any")
BOOL = CelType(Kind.BOOL, "bool")
BYTES = CelType(Kind.BYTES, "bytes")
DOUBLE = CelType(Kind.DOUBLE, "double")
DURATION = CelType(Kind.DURATION, "google.protobuf.Duration")
DYN = CelType(Kind.DYN, "dyn")
ERROR = CelType(Kind.ERROR, "error")
INT = CelType(Kind.INT, "int")
NULL = CelType(Kind.NULL, "null_type")
STRING = CelType(Kind.STRING, "string")
TIMESTAMP = CelType(Kind.TIMESTAMP, "google.protobuf.Timestamp")
TYPE = CelType(Kind.TYPE, "type")
UINT = CelType(Kind.UINT, "uint")


def list_of(element: CelType) -> CelType:
    return CelType(Kind.LIST, "list", (element,))


def map_of(key: CelType, value: CelType) -> CelType:
    return CelType(Kind.MAP, "map", (key, value))


def optional_of(value: CelType) -> CelType:
    return CelType(Kind.OPAQUE, "optional_type", (value,))


def type_of(value: CelType) -> CelType:
    """The type of a type value: ``type(int)`` is what the identifier ``int`` denotes."""
    return CelType(Kind.TYPE, "type", (value,))


def type_param(name: str) -> CelType:
    return CelType(Kind.TYPE_PARAM, name)


def opaque(name: str, *params: CelType) -> CelType:
    return CelType(Kind.OPAQUE, name, params)


def struct(name: str) -> CelType:
    return CelType(Kind.STRUCT, name)
