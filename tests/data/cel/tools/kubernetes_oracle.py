"""Record what the real Kubernetes CEL environment does with every case: the oracle annotation.

    python tests/data/cel/tools/kubernetes_oracle.py            # annotate tests/data/cel/**/*.json in place

Builds ``go/oracle`` (cel-go v0.26.0, k8s.io/apiserver v0.36.3, k8s.io/dynamic-resource-allocation v0.36.3, the
versions kube-apiserver and kube-scheduler v1.36.3 are built from), runs each case through it and stores the
outcome under ``kubernetes``: the value or error, the estimated cost range and the actual runtime cost. Where
Kubernetes' outcome does not meet the source's expectation, a reason from REASONS decides: the case either follows
Kubernetes (``kubernetes.expect`` replaces ``expect`` for the runner) or moves to ``skipped``. An unexplained
difference stops the script, so every difference in the data has a written reason.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
DATA = TOOLS.parent
MATCHING = DATA.parent.parent.parent / "src" / "phalanx" / "api" / "cel" / "conformance" / "matching.py"


def _load_matching() -> Any:
    """The runner's own matching rules, loaded by path so that a half-built CEL package cannot break this tool."""
    sys.path.insert(0, str(MATCHING.parents[4]))
    spec = importlib.util.spec_from_file_location("cel_matching", MATCHING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


meets = _load_matching().meets

TYPE_CHECKED = "Kubernetes type-checks every expression; cel-spec runs this test without the checker (disable_check)"
HOMOGENEOUS = (
    "HomogeneousAggregateLiterals: Kubernetes rejects list and map literals with mixed element, key or "
    "value types at compile time"
)
EQUALITY = (
    "the type checker requires both operands of == and != to have the same static type; cel-spec's "
    "heterogeneous equality applies only to dyn operands"
)
FORMAT = (
    "strings extension version 2 (Kubernetes): format() uses cel-go's original formatter (locale-style %e, "
    "quoted %s of lists and maps, %f/%e/%d stricter about types) and checks constant calls at compile time"
)
# (case-id pattern, pattern on the observed outcome, action, reason). First match wins. "kubernetes": the runner
# expects what Kubernetes does; "skip": outside the Kubernetes environment, counted with the reason.
REASONS: list[tuple[str, str, str, str]] = [
    (r"^string_ext/reverse/", "", "skip", "strings extension version 3 (reverse): Kubernetes enables version 2"),
    (
        r"^namespace/namespace_shadowing/",
        "",
        "skip",
        "qualified (dotted) variable names shadowing comprehension variables: Kubernetes declares none",
    ),
    (r"^string_ext/format", "", "kubernetes", FORMAT),
    (
        r"^string_ext/value_errors/(last)?indexof_out_of_range",
        "",
        "kubernetes",
        "cel-go v0.26.0 (Kubernetes v1.36) returns -1 for an offset past the end instead of an error",
    ),
    (
        r"^timestamps/duration_converters/get_milliseconds",
        "",
        "kubernetes",
        "cel-go v0.26.0: getMilliseconds() on a duration returns the whole duration in milliseconds",
    ),
    (
        r"^timestamps/(timestamp|duration)_range/",
        "invalid (timestamp|duration) argument",
        "kubernetes",
        "Kubernetes validates constant timestamp() and duration() arguments at compile time",
    ),
    (
        r"^fields/quoted_map_fields/",
        "unsupported syntax: '`'",
        "kubernetes",
        "backtick-quoted identifiers are not enabled in the Kubernetes parser",
    ),
    (
        r"^fields/qualified_identifier_resolution/map_value_repeat_key$",
        "",
        "kubernetes",
        "cel-go v0.26.0 folds a constant map literal with a repeated key to its last value instead of an error",
    ),
    (
        r"^fields/map_fields/map_bad_key_type_",
        "invalid qualifier type",
        "kubernetes",
        "cel-go v0.26.0 rejects a constant bytes map key when the program is planned, before evaluation",
    ),
    (
        r"^optionals/optionals/(map_null_entry_no_such_key|map_present_key_invalid_field)$",
        "",
        "kubernetes",
        "cel-go v0.26.0: a field selection on an optional value that is not a map yields optional.none()",
    ),
    (r"", "no matching overload for '_[!=]=_'", "kubernetes", EQUALITY),
]
# Tried after the disable_check rule: a literal with mixed types is the remaining cause of "expected type".
GENERIC = [(r"", "expected type '[^']*' but found", "kubernetes", HOMOGENEOUS)]


def build_oracle(directory: Path) -> Path:
    binary = directory / "celoracle"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=TOOLS / "go" / "oracle", check=True)
    return binary


def request(mode: str, case: dict[str, Any]) -> dict[str, Any]:
    if mode == "dra":
        return {
            "id": case["id"],
            "mode": "dra",
            "expr": case["expr"],
            "env": case["env"],
            "features": case["features"],
            "device": case["device"],
        }
    if mode == "cost":
        return {"id": case["id"], "mode": "cost", "expr": case["expr"]}
    return {
        "id": case["id"],
        "mode": "expr",
        "expr": case["expr"],
        "decls": case.get("decls", {}),
        "bindings": case.get("bindings", {}),
        "env": "new",
    }


def outcome(response: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if response.get("compileError") is not None:
        out["compile_error"] = response["compileError"]
    elif response.get("evalError") is not None:
        out["error"] = response["evalError"]
    elif "result" in response:
        out["value"] = response["result"]
    if response.get("estimatedCost") is not None:
        out["estimated"] = response["estimatedCost"]
    if response.get("actualCost") is not None:
        out["actual"] = response["actualCost"]
    if response.get("outputType"):
        out["type"] = response["outputType"]
    return out


def as_expectation(observed: dict[str, Any]) -> dict[str, Any]:
    if "compile_error" in observed:
        return {"compile_error": observed["compile_error"], "match": "any"}
    if "error" in observed:
        return {"error": observed["error"], "match": "any"}
    return {"value": observed["value"]}


def reason_for(case: dict[str, Any], observed: dict[str, Any]) -> tuple[str, str] | None:
    text = json.dumps(observed)
    for id_pattern, observed_pattern, action, reason in REASONS:
        if re.search(id_pattern, case["id"]) and re.search(observed_pattern, text):
            return action, reason
    if case.get("disable_check") and "compile_error" in observed:
        return "kubernetes", TYPE_CHECKED
    for id_pattern, observed_pattern, action, reason in GENERIC:
        if re.search(id_pattern, case["id"]) and re.search(observed_pattern, text):
            return action, reason
    return None


def annotate(path: Path, binary: Path) -> list[str]:
    document = json.loads(path.read_text())
    mode = document.get("mode", "expr")
    cases = document["cases"] + [s for s in document["skipped"] if s.get("oracle_skipped")]
    lines = "".join(json.dumps(request(mode, c)) + "\n" for c in cases)
    result = subprocess.run([str(binary)], input=lines, capture_output=True, text=True, check=True)
    responses = {r["id"]: r for r in map(json.loads, result.stdout.splitlines())}
    kept, skipped, unexplained = [], [s for s in document["skipped"] if not s.get("oracle_skipped")], []
    for case in cases:
        case.pop("oracle_skipped", None)
        case.pop("reason", None) if "expect" in case else None
        observed = outcome(responses[case["id"]])
        kubernetes: dict[str, Any] = {"observed": observed}
        if "expect" in case and not meets(case["expect"], observed):
            why = reason_for(case, observed)
            if why is None:
                unexplained.append(
                    f"{path.name}: {case['id']}: {case['expr']!r}\n    expect {case['expect']}\n"
                    f"    kubernetes {observed}"
                )
                why = ("kubernetes", "UNEXPLAINED")
            action, reason = why
            kubernetes.update(expect=as_expectation(observed), reason=reason)
            if action == "skip":
                skipped.append({**case, "kubernetes": kubernetes, "reason": reason, "oracle_skipped": True})
                continue
        case["kubernetes"] = kubernetes
        kept.append(case)
    document["cases"], document["skipped"] = kept, skipped
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return unexplained


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        binary = build_oracle(Path(name))
        unexplained = []
        for path in sorted(DATA.glob("*/*.json")):
            unexplained += annotate(path, binary)
    print("\n".join(unexplained))
    print(f"{len(unexplained)} unexplained differences")
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
