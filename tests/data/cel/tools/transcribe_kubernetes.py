"""Transcribe Kubernetes' CEL library and DRA environment tests into phalanx's JSON cases.

    python tests/data/cel/tools/transcribe_kubernetes.py

Needs Go and the pinned modules in the Go module cache (``go mod download`` in ``go/oracle`` fetches them).
Nothing upstream is copied into the repository: the test tables are read by running the upstream test files
themselves, with their table helpers (``testQuantity``, ``testSemver``, ``testIP``, ``testCIDR``, ``testCost``)
swapped for recorders through ``go test -overlay``, and compile_test.go's ``testcases`` dumped by an added test.
Writes ``tests/data/cel/kubernetes/*.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
MODULE = TOOLS / "go" / "oracle"
OUT = TOOLS.parent / "kubernetes"
APISERVER = ("k8s.io/apiserver", "v0.36.3", "kubernetes/apiserver", "72f5171bff564be05f1011ccef0233a2ea76ebb4")
DRA = ("k8s.io/dynamic-resource-allocation", "v0.36.3", "kubernetes/dynamic-resource-allocation", None)
LIBRARY_HELPERS = {
    "quantity_test.go": "testQuantity",
    "semver_test.go": "testSemver",
    "ip_test.go": "testIP",
    "cidr_test.go": "testCIDR",
}
AUTHZ = (
    "the authorization library works on the `authorizer` variable of admission environments; device selectors "
    "have none, so these calls do not compile there"
)
# Which upstream test function feeds which data file.
LIBRARY_FILES = {
    "TestQuantity": "quantity",
    "TestSemver": "semver",
    "TestIP": "ip",
    "TestCIDR": "cidr",
    "TestFormat": "format",
}


def module_dir(module: str, version: str) -> Path:
    cache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
    return Path(cache) / f"{module}@{version}"


def go_test(module: tuple[str, str, str, str | None], files: dict[str, str], package: str, run: str, out: Path) -> None:
    """Run upstream tests from a writable copy of ``module`` (Go refuses to overlay the module cache), with
    ``files`` (path inside the module -> content) replaced or added."""
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        copy = tmp / "upstream"
        shutil.copytree(module_dir(module[0], module[1]), copy)
        for path in copy.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        for relative, content in files.items():
            (copy / relative).write_text(content)
        work = tmp / "work"
        shutil.copytree(MODULE, work)
        with (work / "go.mod").open("a") as go_mod:
            go_mod.write(f"\nreplace {module[0]} => {copy}\n")
        env = {**os.environ, "CEL_TRANSCRIBE_OUT": str(out), "GOFLAGS": "-mod=mod"}
        subprocess.run(["go", "test", "-count=1", "-run", run, f"{module[0]}/{package}"], cwd=work, env=env, check=True)


def patched(path: Path, helper: str) -> str:
    """An upstream test file whose helper is renamed, so that the recorder takes its name."""
    source = path.read_text()
    renamed = re.sub(rf"^func {helper}\(", f"func upstream_{helper}(", source, count=1, flags=re.M)
    assert renamed != source, f"{helper} not found in {path}"
    return renamed


def record_library(out: Path) -> None:
    library = module_dir(APISERVER[0], APISERVER[1]) / "pkg" / "cel" / "library"
    helpers = {**LIBRARY_HELPERS, "cost_test.go": "testCost"}
    files = {f"pkg/cel/library/{f}": patched(library / f, h) for f, h in helpers.items()}
    encode = (TOOLS / "go" / "record" / "encode.go.txt").read_text()
    files["pkg/cel/library/zz_record_test.go"] = (TOOLS / "go" / "record" / "library_test.go.txt").read_text() + encode
    files["pkg/cel/library/zz_record_internal_test.go"] = (TOOLS / "go" / "record" / "cost_test.go.txt").read_text()
    tests = "^(" + "|".join([*LIBRARY_FILES, r"Test\w+Cost", "TestStringLibrary", "TestAuthzLibrary"]) + ")$"
    go_test(APISERVER, files, "pkg/cel/library", tests, out)


def record_dra(out: Path) -> None:
    dump = (TOOLS / "go" / "record" / "dra_test.go.txt").read_text()
    go_test(DRA, {"cel/zz_transcribe_test.go": dump}, "cel", "^TestTranscribe$", out)


def source(module: tuple[str, str, str, str | None], file: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"repo": module[2], "tag": module[1], "file": file, "license": "Apache-2.0"}
    if module[3]:
        entry["commit"] = module[3]
    return entry


def library_case(entry: dict[str, Any]) -> dict[str, Any]:
    case: dict[str, Any] = {"id": entry["test"], "expr": entry["expr"]}
    if entry["compileErrors"]:
        case["expect"] = {"compile_errors": entry["compileErrors"]}
    elif entry["runtimeError"]:
        exact = entry["helper"] in ("testIP", "testCIDR")
        case["expect"] = {"error": entry["runtimeError"], "match": "exact" if exact else "regex"}
    else:
        case["expect"] = {"value": entry["expect"]}
    if entry["helper"] == "testSemver":
        case["semver_version"] = entry["version"]
    return case


def _attribute(raw: dict[str, Any]) -> dict[str, Any]:
    (kind, value), *_ = ((k, v) for k, v in raw.items() if v is not None)
    return {kind: value}


def dra_cases(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """One case per list-type-attributes setting, as TestCEL runs it (both when the table leaves it unset)."""
    gates = [entry["listTypeAttributes"]] if entry["listTypeAttributes"] is not None else [False, True]
    out = []
    for gate in gates:
        if entry["expectCompileError"]:
            expect: dict[str, Any] = {"compile_error": entry["expectCompileError"]}
        elif entry["expectMatchError"]:
            expect = {"match_error": entry["expectMatchError"], "cost": entry["expectCost"]}
        else:
            expect = {"match": entry["expectMatch"], "cost": entry["expectCost"]}
        out.append(
            {
                "id": f"TestCEL/{entry['name']}-list-type-attributes-{str(gate).lower()}",
                "expr": entry["expression"],
                "env": "new" if entry["env"] == "NewExpressions" else "stored",
                "features": {"consumableCapacity": entry["consumableCapacity"], "listTypeAttributes": gate},
                "device": {
                    "driver": entry["driver"],
                    "allowMultipleAllocations": entry["allowMultipleAllocations"],
                    "attributes": {k: _attribute(v) for k, v in sorted(entry["attributes"].items())},
                    "capacity": dict(sorted(entry["capacity"].items())),
                },
                "expect": expect,
            }
        )
    return out


def write(
    name: str, src: dict[str, Any], mode: str, cases: list[dict[str, Any]], skipped: list[dict[str, Any]] | None = None
) -> None:
    document = {"source": src, "mode": mode, "cases": cases, "skipped": skipped or []}
    (OUT / f"{name}.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"{name:10} {len(cases):4} cases")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        library_out, dra_out = Path(name) / "library.jsonl", Path(name) / "dra.jsonl"
        record_library(library_out)
        record_dra(dra_out)
        entries = [json.loads(line) for line in library_out.read_text().splitlines()]
        dra_entries = [json.loads(line) for line in dra_out.read_text().splitlines()]
    for test, file in LIBRARY_FILES.items():
        upstream = "quantity_test.go" if test == "TestFormat" else None
        cases = [library_case(e) for e in entries if e["test"].split("/")[0] == test and e["helper"] != "testCost"]
        src = source(APISERVER, f"pkg/cel/library/{upstream or (file + '_test.go')}")
        if test == "TestFormat":
            src["file"] = "pkg/cel/library/format_test.go"
        write(file, src, "expr", cases)
    costs = [
        {"id": e["test"], "expr": e["expr"], "expect": {"estimated": e["estimated"], "runtime": e["runtime"]}}
        for e in entries
        if e["helper"] == "testCost"
    ]
    authz = [{**c, "reason": AUTHZ} for c in costs if c["id"].startswith("TestAuthzLibrary/")]
    costs = [c for c in costs if not c["id"].startswith("TestAuthzLibrary/")]
    write("cost", source(APISERVER, "pkg/cel/library/cost_test.go"), "cost", costs, authz)
    dra = [case for e in dra_entries for case in dra_cases(e)]
    write("dra", source(DRA, "cel/compile_test.go"), "dra", dra)


if __name__ == "__main__":
    main()
