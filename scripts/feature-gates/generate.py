#!/usr/bin/env python3
"""Generate src/phalanx/scheduling/feature_gates_v1_MINOR.py: every feature gate kube-scheduler of one release (v1.36.3
or v1.37.2) accepts, with its stage, default and lock at that release's emulation version, and the gate dependencies.

It reads the Go sources of the gate registrations kube-scheduler links in (from the Go module cache, as the
testenv build fetched them): k8s.io/kubernetes pkg/features (which also relists the generic apiserver,
apiextensions, controller-manager and zpages gates), k8s.io/apiserver, k8s.io/apiextensions-apiserver,
k8s.io/controller-manager, k8s.io/component-base (logs, metrics, zpages) and k8s.io/client-go. When the built
kube-scheduler binary is present, its ``--help`` list of alpha and beta gates must equal the table's (the run
fails otherwise), so a missed registration cannot slip through.

    python3 scripts/feature-gates/generate.py [--version 1.36.3|1.37.2] [--modcache DIR] [--kube-scheduler PATH]

Only facts are taken (names, stages, defaults, locks, dependencies); the output is a Python table.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("1.36.3", "1.37.2")
# The first file wins where a gate is registered twice (kube_features.go relists some of the others, among them the
# two controller-manager gates kube-scheduler registers; the rest of that file it does not).
_SOURCES = (
    "kubernetes@v1.{minor}.{patch}/pkg/features/kube_features.go",
    "apiserver@v0.{minor}.{patch}/pkg/features/kube_features.go",
    "apiextensions-apiserver@v0.{minor}.{patch}/pkg/features/kube_features.go",
    "component-base@v0.{minor}.{patch}/zpages/features/kube_features.go",
    "component-base@v0.{minor}.{patch}/logs/api/v1/kube_features.go",
    "component-base@v0.{minor}.{patch}/metrics/features/kube_features.go",
    "client-go@v0.{minor}.{patch}/features/known_features.go",
)


def sources(version: str) -> list[str]:
    _, minor, patch = version.split(".")
    return [s.format(minor=minor, patch=patch) for s in _SOURCES]


def out_path(version: str) -> Path:
    return ROOT / f"src/phalanx/scheduling/feature_gates_v1_{version.split('.')[1]}.py"
_CONST = re.compile(r"^\s*(\w+)\s+(?:featuregate\.)?Feature\s*=\s*\"(\w+)\"", re.M)
_ENTRY = re.compile(r"^\s*(?:\w+\.)?(\w+):\s*\{\s*$")
_SPEC = re.compile(r"\{\s*Version:.*\}")
_VERSION = re.compile(r'Version:\s*version\.(?:MustParse\("(\d+)\.(\d+)"\)|MajorMinor\((\d+),\s*(\d+)\))')
_DEFAULT = re.compile(r"Default:\s*(true|false)")
_STAGE = re.compile(r"PreRelease:\s*(?:featuregate\.)?(\w+)")
_LOCK = re.compile(r"LockToDefault:\s*(true|false)")
_STAGES = {"Alpha": "ALPHA", "Beta": "BETA", "GA": "GA", "Deprecated": "DEPRECATED", "PreAlpha": "PREALPHA"}


def _spec_at(lines: list[str], emulation: tuple[int, int]) -> tuple[str, bool, bool] | None:
    """The spec in effect at the emulation version: the last one whose version is not newer."""
    chosen = None
    for line in lines:
        v = _VERSION.search(line)
        if v is None:
            raise SystemExit(f"cannot read a gate spec: {line.strip()}")
        major, minor = (int(v.group(1) or v.group(3)), int(v.group(2) or v.group(4)))
        if (major, minor) > emulation:
            continue
        d, s, lock = _DEFAULT.search(line), _STAGE.search(line), _LOCK.search(line)
        if d is None or s is None:
            raise SystemExit(f"cannot read a gate spec: {line.strip()}")
        chosen = (_STAGES[s.group(1)], d.group(1) == "true", lock is not None and lock.group(1) == "true")
    return chosen


def _versioned_blocks(text: str) -> dict[str, list[str]]:
    """``Name: { {Version: ...}, ... },`` entries of every VersionedSpecs map in one file."""
    out: dict[str, list[str]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _ENTRY.match(lines[i])
        if m is None:
            i += 1
            continue
        specs = []
        j = i + 1
        while j < len(lines) and (_SPEC.search(lines[j]) or lines[j].strip().startswith("//")):
            if _SPEC.search(lines[j]):
                specs.append(lines[j])
            j += 1
        if specs:
            out[m.group(1)] = specs
        i = j if specs else i + 1
    return out


def _dependencies(text: str) -> dict[str, list[str]]:
    start = text.index("defaultKubernetesFeatureGateDependencies = map")
    body = text[start : text.index("\n}\n", start)]
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"^\s*(?:\w+\.)?(\w+):\s*\{([^}]*)\}", body, re.M):
        deps = [re.sub(r"^.*\.", "", d.strip()).strip('")') for d in m.group(2).split(",") if d.strip()]
        deps = [re.sub(r"^featuregate\.Feature\(", "", d) for d in deps]
        if deps:
            out[m.group(1)] = [re.sub(r"^.*\.", "", d) for d in deps]
    return out


def _names(text: str) -> dict[str, str]:
    return {ident: value for ident, value in _CONST.findall(text)}


def collect(modcache: Path, version: str) -> tuple[dict[str, tuple[str, bool, bool]], dict[str, list[str]]]:
    emulation = (int(version.split(".")[0]), int(version.split(".")[1]))
    gates: dict[str, tuple[str, bool, bool]] = {"AllAlpha": ("ALPHA", False, False), "AllBeta": ("BETA", False, False)}
    names: dict[str, str] = {}
    texts = [(modcache / rel).read_text() for rel in sources(version)]
    for text in texts:
        names.update(_names(text))
    for text in texts:
        for ident, lines in _versioned_blocks(text).items():
            name = names.get(ident, ident)
            spec = _spec_at(lines, emulation)
            if spec is not None and name not in gates:
                gates[name] = spec
    deps = {names.get(k, k): [names.get(d, d) for d in v] for k, v in _dependencies(texts[0]).items()}
    unknown = sorted({d for v in deps.values() for d in v} - set(gates))
    if unknown:
        raise SystemExit(f"dependencies name gates that are not registered: {unknown}")
    return gates, deps


def check_against_binary(binary: Path, gates: dict[str, tuple[str, bool, bool]]) -> None:
    """kube-scheduler --help lists every alpha and beta gate with its default: they must be exactly ours."""
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, check=False).stdout
    listed = {
        m.group(1): (m.group(2), m.group(3) == "true")
        for m in re.finditer(r"kube:(\w+)=true\|false \((ALPHA|BETA) - default=(true|false)\)", text)
    }
    ours = {n: (s, d) for n, (s, d, _) in gates.items() if s in ("ALPHA", "BETA")}
    if listed != ours:
        missing, extra = sorted(set(listed) - set(ours)), sorted(set(ours) - set(listed))
        wrong = sorted(n for n in set(listed) & set(ours) if listed[n] != ours[n])
        raise SystemExit(f"kube-scheduler --help disagrees: missing {missing}, extra {extra}, different {wrong}")


def render(gates: dict[str, tuple[str, bool, bool]], deps: dict[str, list[str]], version: str) -> str:
    minor = ".".join(version.split(".")[:2])
    doc = (
        f'"""Every feature gate kube-scheduler v{version} accepts, as (stage, default, locked) at emulation version\n'
        f"{minor}, and the gate dependencies it checks. Generated by scripts/feature-gates/generate.py from the "
        f"Kubernetes\nv{version} sources (kube_features.go and the registrations kube-scheduler links in); do not "
        'edit by hand."""\n'
    )
    head = doc + '''
from __future__ import annotations

__all__ = ["DEPENDENCIES", "GATES"]

# name: (stage, default, locked to default)
GATES: dict[str, tuple[str, bool, bool]] = {
'''
    body = "".join(f'    "{n}": ("{s}", {d}, {lock}),\n' for n, (s, d, lock) in sorted(gates.items()))
    lines = []
    for n, v in sorted(deps.items()):
        items = ", ".join(f'"{x}"' for x in v) + ("," if len(v) == 1 else "")
        lines.append(f'    "{n}": ({items}),\n')
    dep = "".join(lines)

    return (
        head
        + body
        + "}\n\n# A gate that is on needs every gate listed for it on (only direct dependencies are checked).\n"
        + ("DEPENDENCIES: dict[str, tuple[str, ...]] = {\n" + dep + "}\n")
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", choices=VERSIONS, default=VERSIONS[0])
    ap.add_argument("--modcache", type=Path, default=Path.home() / "go/pkg/mod/k8s.io")
    ap.add_argument("--kube-scheduler", type=Path, help="default: the testenv cache's binary of --version")
    args = ap.parse_args()
    binary = args.kube_scheduler or Path.home() / f".cache/phalanx/k8s/v{args.version}/kube-scheduler"
    gates, deps = collect(args.modcache, args.version)
    if binary.exists():
        check_against_binary(binary, gates)
    else:
        print(f"note: {binary} not found; not checked against kube-scheduler --help", file=sys.stderr)
    out = out_path(args.version)
    out.write_text(render(gates, deps, args.version))
    subprocess.run(["ruff", "format", "--quiet", str(out)], check=False)  # the repository's formatting
    print(f"{out.relative_to(ROOT)}: {len(gates)} gates, {len(deps)} with dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
