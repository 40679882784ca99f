"""Runs conformance cases (tests/data/cel) through phalanx's CEL and reports what it did as an outcome.

An outcome has the shape the oracle records: ``{"value": tagged}``, ``{"error": msg}`` or ``{"compile_error": msg}``,
plus ``estimated`` (the cost range) and ``actual`` (the runtime cost). :func:`run_suite` checks every case of every
file against its expectation (Kubernetes' where it differs from the source's).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from phalanx.api.cel import lib_kubernetes
from phalanx.api.cel import types as t
from phalanx.api.cel.conformance.matching import meets, values_equal
from phalanx.api.cel.cost import AstNode, Estimate
from phalanx.api.cel.device import device_view
from phalanx.api.cel.dra import Features
from phalanx.api.cel.environment import Environment, kubernetes_environment
from phalanx.api.cel.errors import CelError
from phalanx.api.cel.interpreter import PlanningError
from phalanx.api.cel.lib_formats import NamedFormat
from phalanx.api.cel.lib_time import format_timestamp
from phalanx.api.cel.selector import COST_LIMIT, _compile, _result_error
from phalanx.api.cel.semver import parse_semver
from phalanx.api.cel.types import CelType
from phalanx.api.cel.values import Duration, Optional, Quantity, Semver, Timestamp, UInt
from phalanx.api.dra import DeviceAttribute, DeviceCapacity
from phalanx.api.quantity import parse_quantity

__all__ = ["DATA", "Result", "decode", "encode", "load", "parse_type", "run_case", "run_suite"]

DATA = Path(__file__).resolve().parents[5] / "tests" / "data" / "cel"
_SIMPLE = {
    "int": t.INT,
    "uint": t.UINT,
    "double": t.DOUBLE,
    "bool": t.BOOL,
    "string": t.STRING,
    "bytes": t.BYTES,
    "null_type": t.NULL,
    "dyn": t.DYN,
    "any": t.ANY,
    "timestamp": t.TIMESTAMP,
    "duration": t.DURATION,
    "type": t.TYPE,
}


@dataclass(frozen=True, slots=True)
class Result:
    file: str
    case_id: str
    passed: bool
    outcome: Mapping[str, Any]
    expect: Mapping[str, Any]


def parse_type(text: str) -> CelType:
    """The data's type notation: ``int``, ``list(int)``, ``map(string, dyn)``, ``optional_type(int)``, ``~A``."""
    text = text.replace(" ", "")
    name, _, rest = text.partition("(")
    if not rest:
        if name.startswith("~"):
            return t.type_param(name[1:])
        return _SIMPLE.get(name) or t.opaque(name)
    params, depth, start = [], 0, 0
    body = rest[:-1]
    for i, c in enumerate(body):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            params.append(parse_type(body[start:i]))
            start = i + 1
    params.append(parse_type(body[start:]))
    if name == "list":
        return t.list_of(params[0])
    if name == "map":
        return t.map_of(params[0], params[1])
    return t.opaque(name, *params)


def decode(value: Mapping[str, Any]) -> object:
    """A tagged value as a phalanx CEL value."""
    ((tag, body),) = value.items()
    simple = {
        "int": int,
        "uint": lambda s: UInt(int(s)),
        "string": str,
        "bool": bool,
        "null": lambda _: None,
        "bytes_b64": base64.b64decode,
        "quantity": lambda s: Quantity(parse_quantity(s)),
        "semver": parse_semver,
        "timestamp_ns": lambda s: Timestamp(int(s)),
        "duration": lambda s: Duration(int(s.removesuffix("ns"))),
    }
    if tag in simple:
        return simple[tag](body)  # type: ignore[operator]
    if tag == "double":
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(body) or float(body)
    if tag == "list":
        return [decode(v) for v in body]
    if tag == "map":
        return {decode(k): decode(v) for k, v in body}
    raise ValueError(f"unknown tag {tag}")


def _double(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def encode(value: object) -> dict[str, Any]:
    """A phalanx CEL value as a tagged value."""
    scalars: list[tuple[type | tuple[type, ...], Any]] = [
        (bool, lambda v: {"bool": v}),
        (UInt, lambda v: {"uint": str(int(v))}),
        (int, lambda v: {"int": str(v)}),
        (float, lambda v: {"double": _double(v)}),
        (str, lambda v: {"string": v}),
        (bytes, lambda v: {"bytes_b64": base64.b64encode(v).decode()}),
        (type(None), lambda v: {"null": None}),
        (Quantity, lambda v: {"quantity": str(v.value)}),
        (Semver, lambda v: {"semver": str(v)}),
        (Timestamp, lambda v: {"timestamp_ns": str(v.nanos)}),
        (Duration, lambda v: {"duration": f"{v.nanos}ns"}),
        (CelType, lambda v: {"type": v.display()}),
        (lib_kubernetes.IP, lambda v: {"ip": str(v)}),
        (lib_kubernetes.CIDR, lambda v: {"cidr": str(v)}),
        (NamedFormat, lambda v: {"format": v.name}),
    ]
    for kind, make in scalars:
        if isinstance(value, kind):
            return make(value)  # type: ignore[no-any-return]
    if isinstance(value, Optional):
        return {"optional": encode(value.value) if value.present else None}
    if isinstance(value, list | tuple):
        return {"list": [encode(v) for v in value]}
    if isinstance(value, Mapping):
        return {"map": [[encode(k), encode(v)] for k, v in value.items()]}
    return {"other": repr(value)}


def _test_sizes(node: AstNode) -> Estimate | None:
    """cost_test.go's size estimator: every string or bytes value is at most 12 long."""
    return (0, 12) if node.type.kind in (t.Kind.STRING, t.Kind.BYTES) else None


def _escape_key(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@cache
def _cost_environment() -> Environment:
    """cost_test.go's environment: no optimizer, no validators, strings at most 12 long, and its JSONPatch library."""
    from phalanx.api.cel.decls import Function, Overload

    escape = Function(
        "jsonpatch.escapeKey", (Overload("string_to_escaped_string", (t.STRING,), t.STRING, _escape_key),)
    )
    return kubernetes_environment({}, (escape,), optimize=False, validators=False, sizes=_test_sizes)


def _expr_environment(decls: tuple[tuple[str, str], ...]) -> Environment:
    return kubernetes_environment({name: parse_type(text) for name, text in decls})


def _run_program(environment: Environment, case: Mapping[str, Any], cost: bool) -> dict[str, Any]:
    try:
        program = environment.compile(case["expr"])
    except PlanningError as error:
        return {"error": f"program: {error}"}
    except CelError as error:
        return {"compile_error": str(error)}
    outcome: dict[str, Any] = {"estimated": list(program.estimate_cost())}
    try:
        bindings = {k: decode(v) for k, v in case.get("bindings", {}).items()}
        value, spent = program.evaluate(bindings, COST_LIMIT if not cost else 10**12)
        outcome.update(value=encode(value), actual=spent)
    except CelError as error:
        outcome["error"] = str(error)
    return outcome


def _attribute(raw: Mapping[str, Any]) -> DeviceAttribute:
    ((kind, value),) = raw.items()
    return DeviceAttribute(**{{"int": "int_", "bool": "bool_"}.get(kind, kind): value})


def _run_dra(case: Mapping[str, Any]) -> dict[str, Any]:
    features = Features(case["features"]["consumableCapacity"], case["features"]["listTypeAttributes"])
    try:
        program = _compile(case["expr"], features, stored=case["env"] == "stored")
    except CelError as error:
        return {"compile_error": str(error)}
    problem = _result_error(program, features)
    if problem is not None:
        return {"compile_error": problem}
    outcome: dict[str, Any] = {"estimated": [0, program.estimate_cost()[1]]}
    device = case["device"]
    view = device_view(
        device["driver"],
        {k: _attribute(v) for k, v in device["attributes"].items()},
        {k: DeviceCapacity(value=v) for k, v in device["capacity"].items()},
        bool(device.get("allowMultipleAllocations")),
        features.list_type_attributes,
    )
    from phalanx.api.cel.selector import Selector

    try:
        result, spent = Selector(case["expr"], program).evaluate(view, COST_LIMIT)
        outcome.update(value={"bool": result}, actual=spent)
    except CelError as error:
        outcome["error"] = str(error)
    return outcome


def run_case(mode: str, case: Mapping[str, Any]) -> dict[str, Any]:
    """What phalanx does with one case."""
    if mode == "dra":
        return _run_dra(case)
    if mode == "cost":
        return _run_program(_cost_environment(), case, cost=True)
    decls = tuple(sorted(case.get("decls", {}).items()))
    return _run_program(_expr_environment(decls), case, cost=False)


def _passes(mode: str, case: Mapping[str, Any], outcome: Mapping[str, Any]) -> bool:
    kubernetes = case.get("kubernetes", {})
    expect = kubernetes.get("expect", case["expect"])
    if not meets(expect, outcome):
        return False
    if mode == "cost":  # the value must be Kubernetes' too, not only the costs
        observed = kubernetes.get("observed", {})
        if "value" in observed:
            return "value" in outcome and values_equal(observed["value"], outcome["value"])
    return True


def load(directory: Path = DATA) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(directory.glob("*/*.json")):
        yield str(path.relative_to(directory).with_suffix("")), json.loads(path.read_text())


def run_suite(directory: Path = DATA) -> Iterator[Result]:
    for name, document in load(directory):
        mode = document.get("mode", "expr")
        for case in document["cases"]:
            outcome = run_case(mode, case)
            expect = case.get("kubernetes", {}).get("expect", case["expect"])
            yield Result(name, case["id"], _passes(mode, case, outcome), outcome, expect)


__all__ += ["format_timestamp"]
