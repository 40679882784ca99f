"""Mutations of a valid input: a hostile value in place of a field, a field removed or misspelt, a list item
dropped or doubled, and damage to the bytes (truncated, not UTF-8, a byte-order mark, NUL). Each mutation knows
whether it makes the input invalid by the documented rules (``must_reject``), so an exit 0 on it is a wrong answer
accepted silently, not a leniency.

Every mutation of a seed is enumerated up front (``mutations_of``): the pytest targets draw from the list with
hypothesis, the campaign samples it with a seeded ``random.Random``.
"""

from __future__ import annotations

import copy
import csv
import io
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

# Values that break parsers: signs, limits, non-finite numbers, quotes, backslashes, CEL operators, unicode, wrong
# types. None stands for null (an empty cell in CSV).
HOSTILE: tuple[Any, ...] = (
    -1,
    0,
    2**31,
    2**63,
    10**30,
    1.5,
    -0.5,
    math.nan,
    math.inf,
    1e300,
    "",
    "abc",
    "-8",
    "1e18",
    "10Gx",
    "nan",
    "1_000",
    "UPPER",
    "a' || true || 'b",
    'q"uote',
    "back\\slash",
    "ünïcödé-名前",
    "x" * 300,
    "1e400",
    None,
    True,
    [1, 2],
    {"a": 1},
)
MISSPELT = "colour"  # an unknown field: strict formats refuse it, Kubernetes objects ignore it


@dataclass(frozen=True)
class Mutation:
    label: str  # what was done, for reports: "pools[0].count = -1"
    apply: Callable[[bytes], bytes]
    must_reject: bool


# --- field rules: which values a field accepts --------------------------------------------------------------------

_INT = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_QUANTITY = re.compile(r"\+?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_DNS = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class Rule:
    """What a field accepts. ``check(value)`` is True when the value is certainly invalid; values it cannot judge
    (a quantity that may exceed a limit elsewhere) count as valid, so ``must_reject`` is never wrong."""

    check: Callable[[Any], bool]
    required: bool = False  # removing the field is invalid
    nullable: bool = True  # null (an empty CSV cell) means "absent"; otherwise it is checked as a value

    def rejects(self, value: Any) -> bool:
        if value is None and not self.nullable:
            return True
        if value is None or (isinstance(value, str) and not value.strip() and self.nullable):
            return self.required
        return self.check(value)


def _number(value: Any, integer: bool, strict: bool) -> float | None:
    """The number ``value`` denotes, or None. ``strict`` (Kubernetes objects): only a JSON number of the type."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return None if integer or not math.isfinite(value) else value
    if strict or not isinstance(value, str):
        return None
    text = value.strip()
    if integer:
        return int(text) if _INT.fullmatch(text) else None
    number = float(text) if _DECIMAL.fullmatch(text) else math.nan
    return number if math.isfinite(number) else None


def integer(low: int, high: int, required: bool = False, strict: bool = False) -> Rule:
    def bad(v: Any) -> bool:
        n = _number(v, True, strict)
        return n is None or not low <= n <= high

    return Rule(bad, required)


def number(low: float, high: float, required: bool = False, above: bool = False) -> Rule:
    def bad(v: Any) -> bool:
        n = _number(v, False, False)
        return n is None or n < low or (above and n == low) or n > high

    return Rule(bad, required)


def quantity(required: bool = False, nullable: bool = False, negative: bool = False) -> Rule:
    def bad(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            return True
        if isinstance(v, int | float):
            return not math.isfinite(v) or (v < 0 and not negative)
        return not _QUANTITY.fullmatch(v.strip().removeprefix("-") if negative else v.strip())

    return Rule(bad, required, nullable)


def dns_name(max_len: int = 253, required: bool = True, strict: bool = True) -> Rule:
    def bad(v: Any) -> bool:
        if isinstance(v, int | float) and not isinstance(v, bool) and not strict:
            v = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)  # a YAML number, as written
        return not isinstance(v, str) or len(v) > max_len or not _DNS.fullmatch(v)

    return Rule(bad, required)


def one_of(*allowed: Any, required: bool = True) -> Rule:
    return Rule(lambda v: v not in allowed, required)


def text(max_len: int) -> Rule:
    return Rule(lambda v: isinstance(v, bool) or not isinstance(v, str | int | float) or len(str(v)) > max_len)


ALWAYS = Rule(lambda v: True, required=True)  # a reference no hostile value can satisfy (a node name, a selector)
OPTIONAL_REFERENCE = Rule(lambda v: True)
ANY = Rule(lambda v: False)


@dataclass(frozen=True)
class Schema:
    """Field rules by path pattern (``pools[*].count``), whether unknown fields are refused, and the fields
    (mapping paths) where any key is allowed (``allocatable`` takes resource names)."""

    rules: tuple[tuple[str, Rule], ...]
    strict: bool
    open_maps: tuple[str, ...] = ()

    def rule(self, path: str) -> Rule:
        """The first rule whose pattern matches ``path`` as it is (``pools[0].name``) or with any index."""
        generic = re.sub(r"\[[0-9]+\]", "[*]", path)
        for pattern, rule in self.rules:
            if re.fullmatch(pattern, path) or re.fullmatch(pattern, generic):
                return rule
        return ANY

    def misspelling_rejected(self, path: str) -> bool:
        generic = re.sub(r"\[[0-9]+\]", "[*]", path)
        return self.strict and not any(re.fullmatch(p, generic) for p in self.open_maps)


# --- YAML documents -----------------------------------------------------------------------------------------------


def _dump(docs: list[Any]) -> bytes:
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True, width=1000).encode()


def _leaves(node: Any, path: str = "") -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(dotted path, key path) of every field and list item below ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        sub = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))
        yield sub, (key,)
        for deeper, keys in _leaves(child, sub):
            yield deeper, (key, *keys)


def _edit(docs: list[Any], doc: int, keys: tuple[Any, ...], change: Callable[[Any, Any], None]) -> bytes:
    out = copy.deepcopy(docs)
    parent = out[doc]
    for key in keys[:-1]:
        parent = parent[key]
    change(parent, keys[-1])
    return _dump(out)


def _replace(value: Any) -> Callable[[Any, Any], None]:
    def change(parent: Any, key: Any) -> None:
        parent[key] = copy.deepcopy(value)

    return change


def _delete(parent: Any, key: Any) -> None:
    del parent[key]


def _double(parent: Any, key: Any) -> None:
    parent.insert(key, copy.deepcopy(parent[key]))


def _misspell(parent: Any, key: Any) -> None:
    parent[key][MISSPELT] = 1


def yaml_mutations(seed: bytes, schema: Schema) -> list[Mutation]:
    docs = [d for d in yaml.safe_load_all(seed) if d is not None]
    out: list[Mutation] = []
    for doc, root in enumerate(docs):
        where = f"document {doc + 1}: " if len(docs) > 1 else ""
        top = copy.deepcopy(docs)
        top[doc][MISSPELT] = 1
        out.append(Mutation(f"{where}{MISSPELT} = 1", _const(_dump(top)), schema.strict))
        for path, keys in _leaves(root):
            rule = schema.rule(path)
            parent = _parent(root, keys)
            for value in HOSTILE:
                label = f"{where}{path} = {value!r:.40}"
                out.append(_yaml_mutation(docs, doc, keys, label, _replace(value), rule.rejects(value)))
            if isinstance(parent, dict):
                out.append(_yaml_mutation(docs, doc, keys, f"{where}del {path}", _delete, rule.required))
            else:
                out.append(_yaml_mutation(docs, doc, keys, f"{where}double {path}", _double, False))
            if isinstance(_parent(root, (*keys, None)), dict):
                reject = schema.misspelling_rejected(path)
                out.append(_yaml_mutation(docs, doc, keys, f"{where}{path}.{MISSPELT} = 1", _misspell, reject))
    return out


def _parent(root: Any, keys: tuple[Any, ...]) -> Any:
    node = root
    for key in keys[:-1]:
        node = node[key]
    return node


def _yaml_mutation(
    docs: list[Any], doc: int, keys: tuple[Any, ...], label: str, change: Callable[[Any, Any], None], reject: bool
) -> Mutation:
    return Mutation(label, lambda _seed: _edit(docs, doc, keys, change), reject)


# --- CSV tables ---------------------------------------------------------------------------------------------------


def _csv_text(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode()


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def csv_mutations(seed: bytes, schema: Schema) -> list[Mutation]:
    rows = list(csv.reader(io.StringIO(seed.decode())))
    header, out = rows[0], []
    for r in range(1, len(rows)):
        for c, column in enumerate(header):
            rule = schema.rule(column)
            for value in HOSTILE:
                cell = _cell(value)
                edited = [row[:] for row in rows]
                edited[r][c] = cell
                out.append(Mutation(f"row {r} {column} = {cell!r:.40}", _const(_csv_text(edited)), rule.rejects(cell)))
    for c, column in enumerate(header):
        dropped = [[cell for i, cell in enumerate(row) if i != c] for row in rows]
        out.append(Mutation(f"drop column {column}", _const(_csv_text(dropped)), schema.rule(column).required))
    added = [[*rows[0], MISSPELT], *[[*row, "1"] for row in rows[1:]]]
    out.append(Mutation(f"column {MISSPELT}", _const(_csv_text(added)), schema.strict))
    longer = [row[:] for row in rows]
    longer[1] = [*longer[1], "extra"]
    out.append(Mutation("a row with more values than columns", _const(_csv_text(longer)), True))
    return out


def _const(data: bytes) -> Callable[[bytes], bytes]:
    return lambda _seed: data


# --- bytes --------------------------------------------------------------------------------------------------------


def byte_mutations(seed: bytes) -> list[Mutation]:
    """Damage that no format survives (not UTF-8, NUL) must be refused; a truncation or a BOM may be valid."""
    out = [Mutation("UTF-8 byte-order mark", lambda s: b"\xef\xbb\xbf" + s, False)]
    out.append(Mutation("empty file", lambda s: b"", False))
    for tenth in range(1, 10):
        at = len(seed) * tenth // 10
        out.append(Mutation(f"truncated at {at}", lambda s, at=at: s[:at], False))
        out.append(Mutation(f"latin-1 byte at {at}", lambda s, at=at: s[:at] + b"caf\xe9" + s[at:], True))
        out.append(Mutation(f"NUL byte at {at}", lambda s, at=at: s[:at] + b"\x00" + s[at:], True))
    out.append(Mutation("binary garbage", lambda s: bytes(range(256)) * 4, True))
    return out


def mutations_of(seed: bytes, fmt: str, schema: Schema) -> list[Mutation]:
    """Every mutation of ``seed`` (``fmt`` is ``yaml`` or ``csv``)."""
    fields = yaml_mutations(seed, schema) if fmt == "yaml" else csv_mutations(seed, schema)
    return fields + byte_mutations(seed)
