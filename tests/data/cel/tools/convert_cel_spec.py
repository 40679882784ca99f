"""Convert cel-spec's simple conformance tests (``tests/simple/testdata/*.textproto``) into phalanx's JSON cases.

    python tests/data/cel/tools/convert_cel_spec.py CEL_SPEC_GIT_DIR [COMMIT]

Reads each file with ``git show COMMIT:path`` (default: the pinned commit below) and writes
``tests/data/cel/cel-spec/<file>.json``: the cases in scope, and the skipped ones with the reason. A case keeps
cel-spec's expectation in ``expect``; ``kubernetes_oracle.py`` later adds what the Kubernetes environment does
where that differs. See ``tests/data/cel/README.md`` for the format.
"""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from textproto import Message, parse

PINNED = "508bd98efda47d85bcf1b9930dd5f35fa37e9a18"
REPO = "google/cel-spec"
OUT = Path(__file__).resolve().parent.parent / "cel-spec"

# Whole files outside the Kubernetes CEL environment.
SKIPPED_FILES = {
    "block_ext": "cel.@block / cel.index: an optimizer-internal extension, not in the Kubernetes environment",
    "math_ext": "ext.Math (math.*) is not enabled in the Kubernetes environment",
    "encoders_ext": "ext.Encoders (base64.*) is not enabled in the Kubernetes environment",
    "network_ext": "cel-go's ext.Network is not enabled; Kubernetes has its own IP/CIDR library (covered by "
    "the Kubernetes ip/cidr tests)",
    "unknowns": "unknown values and partial evaluation: not used by Kubernetes",
    "proto2": "protobuf messages (Kubernetes declares no protobuf message types)",
    "proto3": "protobuf messages (Kubernetes declares no protobuf message types)",
    "proto2_ext": "protobuf extensions (Kubernetes declares no protobuf message types)",
    "enums": "protobuf enums (Kubernetes declares no protobuf types)",
    "wrappers": "protobuf wrapper types (Kubernetes declares no protobuf types)",
    "dynamic": "protobuf well-known types (Struct, Value, Any, wrappers): Kubernetes declares none",
}
PROTO = "protobuf messages, enums or well-known types (Kubernetes declares no protobuf types)"
_PRIMITIVES = {
    "BOOL": "bool",
    "INT64": "int",
    "UINT64": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
}
_WELL_KNOWN = {"TIMESTAMP": "timestamp", "DURATION": "duration", "ANY": "any"}
_MESSAGE_TYPES = {"google.protobuf.Timestamp": "timestamp", "google.protobuf.Duration": "duration"}


class Skip(Exception):
    """This test is outside the Kubernetes environment; str() is the reason."""


def one(message: Message, field: str) -> Any:
    values = message.get(field, [])
    return values[0] if values else None


def text(message: Message, field: str) -> str:
    value = one(message, field)
    return value.decode() if isinstance(value, bytes) else (value or "")


def cel_type(t: Message) -> str:
    """cel.expr.Type as phalanx's type notation: int, list(int), map(string, dyn), optional_type(int)."""
    if "primitive" in t:
        return _PRIMITIVES[str(one(t, "primitive"))]
    if "well_known" in t:
        return _WELL_KNOWN[str(one(t, "well_known"))]
    if "dyn" in t:
        return "dyn"
    if "null" in t:
        return "null_type"
    if "list_type" in t:
        return f"list({cel_type(one(one(t, 'list_type'), 'elem_type'))})"
    if "map_type" in t:
        m = one(t, "map_type")
        return f"map({cel_type(one(m, 'key_type'))}, {cel_type(one(m, 'value_type'))})"
    if "message_type" in t:
        name = text(t, "message_type")
        if name in _MESSAGE_TYPES:
            return _MESSAGE_TYPES[name]
        raise Skip(PROTO)
    if "abstract_type" in t:
        a = one(t, "abstract_type")
        params = ", ".join(cel_type(p) for p in a.get("parameter_types", []))
        return f"{text(a, 'name')}({params})" if params else text(a, "name")
    if "type_param" in t:
        return "~" + text(t, "type_param")
    if "type" in t:
        return "type"
    raise Skip(PROTO)


def _double(token: str) -> str:
    value = float(token)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _object(any_value: Message) -> dict[str, Any]:
    (name, bodies), *_ = any_value.items()
    body = bodies[0]
    assert isinstance(body, dict)
    seconds, nanos = int(str(one(body, "seconds") or 0)), int(str(one(body, "nanos") or 0))
    if name == "[type.googleapis.com/google.protobuf.Duration]":
        return {"duration": f"{seconds * 10**9 + nanos}ns"}
    if name == "[type.googleapis.com/google.protobuf.Timestamp]":
        return {"timestamp_ns": str(seconds * 10**9 + nanos)}
    raise Skip(PROTO)


def value(v: Message) -> dict[str, Any]:
    """cel.expr.Value as a tagged JSON value."""
    (field, items), *_ = v.items() if v else [("map_value", [{}])]  # an empty message is an empty map here
    item = items[0]
    if field == "null_value":
        return {"null": None}
    if field == "bool_value":
        return {"bool": item == "true"}
    if field in ("int64_value", "uint64_value"):
        return {"int" if field == "int64_value" else "uint": str(int(str(item), 0))}
    if field == "double_value":
        return {"double": _double(str(item))}
    if field == "string_value":
        return {"string": bytes(item).decode()}  # type: ignore[call-overload]
    if field == "bytes_value":
        return {"bytes_b64": base64.b64encode(bytes(item)).decode()}  # type: ignore[call-overload]
    if field == "list_value":
        return {"list": [value(x) for x in item.get("values", [])]}  # type: ignore[union-attr]
    if field == "map_value":
        entries = item.get("entries", [])  # type: ignore[union-attr]
        return {"map": [[value(one(e, "key")), value(one(e, "value"))] for e in entries]}
    if field == "type_value":
        return {"type": bytes(item).decode()}  # type: ignore[call-overload]
    if field == "object_value":
        return _object(item)  # type: ignore[arg-type]
    raise Skip(PROTO)


def expectation(test: Message) -> dict[str, Any]:
    if "value" in test:
        return {"value": value(one(test, "value"))}
    if "typed_result" in test:
        return {"value": value(one(one(test, "typed_result"), "result"))}
    if "eval_error" in test:
        errors = one(one(test, "eval_error"), "errors") or {}
        return {"error": text(errors, "message") or None}
    if "any_eval_errors" in test:
        return {"error": None}
    if "unknown" in test or "any_unknowns" in test:
        raise Skip("unknown values and partial evaluation: not used by Kubernetes")
    return {"value": {"bool": True}}


def convert_test(test: Message) -> dict[str, Any]:
    expr = text(test, "expr")
    if one(test, "check_only") == "true":
        raise Skip("check-only: compares deduced types, has no evaluation result")
    if one(test, "disable_macros") == "true":
        raise Skip("macros disabled: Kubernetes always enables the standard macros")
    if text(test, "container"):
        raise Skip("container (namespace) resolution: Kubernetes declares no container")
    if "TestAllTypes" in expr or "google.protobuf." in expr or "NestedTestAllTypes" in expr:
        raise Skip(PROTO)
    decls: dict[str, str] = {}
    for decl in test.get("type_env", []):
        assert isinstance(decl, dict)
        if "function" in decl:
            raise Skip("custom function declarations: the Kubernetes environment has a fixed function set")
        decls[text(decl, "name")] = cel_type(one(one(decl, "ident"), "type"))
    bindings: dict[str, Any] = {}
    for binding in test.get("bindings", []):
        assert isinstance(binding, dict)
        expr_value = one(binding, "value")
        if "value" not in expr_value:
            raise Skip("error or unknown bindings: not used by Kubernetes")
        bindings[text(binding, "key")] = value(one(expr_value, "value"))
    case: dict[str, Any] = {"expr": expr}
    if decls:
        case["decls"] = decls
    if bindings:
        case["bindings"] = bindings
    if one(test, "disable_check") == "true":
        case["disable_check"] = True
    case["expect"] = expectation(test)
    return case


def convert_file(name: str, source: str, commit: str) -> dict[str, Any]:
    document = parse(source)
    cases: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for section in document.get("section", []):
        assert isinstance(section, dict)
        for test in section.get("test", []):
            assert isinstance(test, dict)
            case_id = f"{name}/{text(section, 'name')}/{text(test, 'name')}"
            seen[case_id] = seen.get(case_id, 0) + 1
            if seen[case_id] > 1:  # cel-spec repeats a few test names within a section
                case_id += f"#{seen[case_id]}"
            try:
                if name in SKIPPED_FILES:
                    raise Skip(SKIPPED_FILES[name])
                cases.append({"id": case_id, **convert_test(test)})
            except Skip as reason:
                skipped.append({"id": case_id, "expr": text(test, "expr"), "reason": str(reason)})
    return {
        "source": {
            "repo": REPO,
            "commit": commit,
            "file": f"tests/simple/testdata/{name}.textproto",
            "license": "Apache-2.0",
        },
        "cases": cases,
        "skipped": skipped,
    }


def main() -> None:
    git_dir, commit = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else PINNED
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "--name-only", commit, "tests/simple/testdata/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    OUT.mkdir(parents=True, exist_ok=True)
    for path in sorted(p for p in listing.split() if p.endswith(".textproto")):
        name = Path(path).stem
        source = subprocess.run(
            ["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
        ).stdout
        converted = convert_file(name, source, commit)
        (OUT / f"{name}.json").write_text(json.dumps(converted, indent=1, ensure_ascii=False) + "\n")
        print(f"{name:16} {len(converted['cases']):4} cases, {len(converted['skipped']):4} skipped")


if __name__ == "__main__":
    main()
