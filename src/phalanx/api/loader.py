"""Reading Kubernetes objects: multi-document YAML and JSON files, directories, ``kind: List`` and stdin.

Objects are decoded leniently into the typed models of :mod:`phalanx.api.models`; kinds phalanx does not use are
skipped. Workload API objects of every served version become the internal model (:mod:`phalanx.api.scheduling`);
an object that came in an older version keeps its decoded original in ``Inventory.versioned`` so that validation
reports that version's paths. Line numbers are found only when a problem is reported (``locate``), so the fast
path never builds a node tree.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import msgspec
import yaml

from phalanx.api import dra
from phalanx.api import models as m
from phalanx.api.dra_convert import CONVERTERS
from phalanx.api.errors import FieldError, InputError, Problem, Source
from phalanx.api.files import read_text
from phalanx.api.gcpause import paused_gc
from phalanx.api.scheduling_convert import SCHEDULING_KINDS

__all__ = [
    "KINDS",
    "MAX_EXPANDED_NODES",
    "NAMESPACED",
    "Inventory",
    "RawObject",
    "check_aliasing",
    "decode",
    "json_type",
    "load",
    "locate",
    "problem_at",
    "read",
    "type_error",
]

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# (apiVersion, kind) -> model. Other kinds are not needed by the scheduler and are ignored.
KINDS: dict[tuple[str, str], type[msgspec.Struct]] = {
    ("v1", "Node"): m.Node,
    ("v1", "Pod"): m.Pod,
    ("v1", "Namespace"): m.Namespace,
    ("scheduling.k8s.io/v1", "PriorityClass"): m.PriorityClass,
    ("policy/v1", "PodDisruptionBudget"): m.PodDisruptionBudget,
    # scheduling.k8s.io v1alpha2 (v1.36), v1beta1 and v1alpha3 (v1.37): decoded per version, then converted.
    **{key: model for key, (model, _) in SCHEDULING_KINDS.items()},
    ("node.k8s.io/v1", "RuntimeClass"): m.RuntimeClass,
    ("batch/v1", "Job"): m.Job,
    **{
        (f"resource.k8s.io/{version}", kind): model
        for version in ("v1", "v1beta2", "v1beta1")  # v1beta1 through CONVERTERS
        for kind, model in (
            ("DeviceClass", dra.DeviceClass),
            ("ResourceSlice", dra.ResourceSlice),
            ("ResourceClaim", dra.ResourceClaim),
            ("ResourceClaimTemplate", dra.ResourceClaimTemplate),
        )
    },
    # DeviceTaintRule: v1 since v1.37 (DRADeviceTaintRules GA); v1beta2 has the same shape.
    **{(f"resource.k8s.io/{v}", "DeviceTaintRule"): dra.DeviceTaintRule for v in ("v1", "v1beta2")},
}
NAMESPACED = {
    "Pod",
    "PodDisruptionBudget",
    "Workload",
    "PodGroup",
    "CompositePodGroup",
    "Job",
    "ResourceClaim",
    "ResourceClaimTemplate",
}
_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(slots=True)
class RawObject:
    source: Source
    data: dict[str, Any]


@dataclass
class Inventory:
    """The decoded objects, by kind, each with the place it came from."""

    nodes: list[m.Node] = field(default_factory=list)
    pods: list[m.Pod] = field(default_factory=list)
    priority_classes: list[m.PriorityClass] = field(default_factory=list)
    pdbs: list[m.PodDisruptionBudget] = field(default_factory=list)
    workloads: list[m.Workload] = field(default_factory=list)
    pod_groups: list[m.PodGroup] = field(default_factory=list)
    composite_pod_groups: list[m.CompositePodGroup] = field(default_factory=list)
    runtime_classes: list[m.RuntimeClass] = field(default_factory=list)
    jobs: list[m.Job] = field(default_factory=list)
    namespaces: list[m.Namespace] = field(default_factory=list)
    device_classes: list[dra.DeviceClass] = field(default_factory=list)
    resource_slices: list[dra.ResourceSlice] = field(default_factory=list)
    resource_claims: list[dra.ResourceClaim] = field(default_factory=list)
    resource_claim_templates: list[dra.ResourceClaimTemplate] = field(default_factory=list)
    device_taint_rules: list[dra.DeviceTaintRule] = field(default_factory=list)
    generated_claims: dict[str, str] = field(default_factory=dict)  # claim ns/name -> template (controllers)
    sources: dict[int, Source] = field(default_factory=dict)
    # id(internal object) -> the object as decoded in its own version, for objects of an older version (v1alpha2)
    versioned: dict[int, msgspec.Struct] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # stdin's text, kept to locate lines
    trees: dict[str, list[yaml.Node]] = field(default_factory=dict)  # parsed once per file, only to locate lines
    warnings: list[str] = field(default_factory=list)  # objects skipped, one line each, like problems

    def source_of(self, obj: object) -> Source:
        return self.sources.get(id(obj), Source("<generated>"))

    def all_objects(self) -> Iterator[msgspec.Struct]:
        for attribute in _LISTS.values():
            yield from getattr(self, attribute)


_LISTS = {
    m.Node: "nodes",
    m.Pod: "pods",
    m.PriorityClass: "priority_classes",
    m.PodDisruptionBudget: "pdbs",
    m.Workload: "workloads",
    m.PodGroup: "pod_groups",
    m.CompositePodGroup: "composite_pod_groups",
    m.RuntimeClass: "runtime_classes",
    m.Job: "jobs",
    m.Namespace: "namespaces",
    dra.DeviceClass: "device_classes",
    dra.ResourceSlice: "resource_slices",
    dra.ResourceClaim: "resource_claims",
    dra.ResourceClaimTemplate: "resource_claim_templates",
    dra.DeviceTaintRule: "device_taint_rules",
}


def load(paths: Sequence[str], stdin: TextIO | None = None) -> Inventory:
    """Read and decode every object under ``paths``. Raises :class:`InputError` listing every problem."""
    texts: dict[str, str] = {}
    empty: list[str] = []
    with paused_gc():
        raws = read(paths, stdin, texts, empty)
        inv = decode(raws, texts)
    inv.warnings[:0] = empty
    return inv


def read(
    paths: Sequence[str], stdin: TextIO | None, texts: dict[str, str], empty: list[str] | None = None
) -> list[RawObject]:
    """Parse the files into raw objects, flattening Lists. Unparseable files are errors; a file holding no
    document is noted in ``empty`` (a warning: kubectl refuses to apply it)."""
    problems: list[str] = []
    out: list[RawObject] = []
    for path in _expand(paths, problems, empty):
        try:
            text = _read_one(path, stdin, texts)
        except InputError as exc:
            problems += exc.lines
            continue
        try:
            docs = _parse(path, text)
        except (yaml.YAMLError, ValueError) as exc:
            problems.append(_parse_problem(path, exc))
            continue
        except RecursionError:  # JSON nested deeper than Python's stack (libyaml stops such YAML itself)
            problems.append(f"{path}: cannot parse: exceeded maximum nesting depth")
            continue
        if not docs and empty is not None:
            empty.append(f"{path}: no objects in this file")
        for index, doc in enumerate(docs):
            _flatten(out, path, index, doc, problems)
    if problems:
        raise InputError(problems)
    return out


def _read_one(path: str, stdin: TextIO | None, texts: dict[str, str]) -> str:
    if path != "-":
        return read_text(path)
    try:
        text = (stdin or sys.stdin).read()
    except UnicodeDecodeError as exc:
        raise InputError([f"-: cannot read: not UTF-8 text ({exc.reason})"]) from exc
    text = text.removeprefix("\ufeff")
    texts["-"] = text
    return text


def _expand(paths: Sequence[str], problems: list[str], empty: list[str] | None = None) -> Iterator[str]:
    for path in paths:
        if path == "-":
            yield path
        elif os.path.isdir(path):
            found = sorted(str(p) for p in Path(path).rglob("*") if p.suffix in _SUFFIXES and p.is_file())
            if not found and empty is not None:
                empty.append(f"{path}: no *.yaml, *.yml or *.json files in this directory")
            yield from found
        elif os.path.exists(path):
            yield path
        else:
            problems.append(f"{path}: no such file or directory")


def _parse(path: str, text: str) -> list[Any]:
    if path.endswith(".json"):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError:
            pass  # a stream of JSON documents is still YAML
    docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    if "*" in text:  # aliases are written *name; without one no node can be shared
        for doc in docs:
            check_aliasing(doc)
    return docs


MAX_EXPANDED_NODES = 1_000_000


def check_aliasing(doc: Any) -> None:
    """Refuse a document whose aliases expand it far beyond its size (a "billion laughs" YAML bomb): decoding
    walks every expanded node, so a few hundred bytes could take hours. Raises ValueError in go-yaml's words,
    as kubectl reports it."""
    sizes: dict[int, int] = {}  # id of a list or mapping -> its nodes, aliases expanded
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:  # post-order without recursion: a document may nest a thousand levels deep
        node, done = stack.pop()
        if not isinstance(node, dict | list) or (id(node) in sizes and not done):
            continue
        children = list(node.values() if isinstance(node, dict) else node)
        if done:
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) if isinstance(c, dict | list) else 1 for c in children)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if isinstance(c, dict | list) and id(c) not in sizes)
    total = sizes.get(id(doc), 1)
    if total > MAX_EXPANDED_NODES and total > 100 * len(sizes):
        raise ValueError("document contains excessive aliasing")


def _parse_problem(path: str, exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    digits = _TOO_MANY_DIGITS.search(problem)
    if digits:  # Python's own guard against quadratic int() parsing, in words for the file's author
        problem = f"an integer of {digits[1]} digits (at most {sys.get_int_max_str_digits()} are read)"
    return f"{path}{line}: cannot parse: {problem}"


_TOO_MANY_DIGITS = re.compile(r"Exceeds the limit .* value has (\d+) digits")


def _flatten(out: list[RawObject], path: str, index: int, doc: Any, problems: list[str]) -> None:
    if not isinstance(doc, dict):
        problems.append(f"{path}: document {index + 1}: expected an object, got {json_type(doc)}")
        return
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item_index, item in enumerate(doc["items"]):
            if isinstance(item, dict):
                out.append(RawObject(Source(path, index, item_index), item))
            else:
                problems.append(f"{path}: items[{item_index}]: expected an object, got {json_type(item)}")
        return
    out.append(RawObject(Source(path, index), doc))


def _without_null_templates(data: dict[str, Any]) -> dict[str, Any]:
    """A Workload as kube-apiserver v1.37 returns it: a template list it holds none of is ``null`` (Go's nil slice,
    no omitempty), which means empty. Dropped here, at every level of composite templates, so it is read as
    absent; a list of the wrong type is still an error."""

    def clean(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out = {k: v for k, v in node.items() if not (k in _TEMPLATE_LISTS and v is None)}
        for k in _TEMPLATE_LISTS:
            if isinstance(out.get(k), list):
                out[k] = [clean(x) for x in out[k]]
        return out

    spec = data.get("spec")
    return {**data, "spec": clean(spec)} if isinstance(spec, dict) else data


_TEMPLATE_LISTS = ("podGroupTemplates", "compositePodGroupTemplates")


def decode(raws: list[RawObject], texts: dict[str, str] | None = None) -> Inventory:
    """Decode raw objects into typed models; known kinds only. Type errors carry their field path. Objects that
    are skipped (a kind phalanx does not read, no ``apiVersion``) become warnings in ``inv.warnings``."""
    inv = Inventory(texts=texts or {})
    problems: list[Problem] = []
    seen: dict[tuple[str, str, str], Source] = {}
    skipped: dict[tuple[str, str, str], list[RawObject]] = {}
    for raw in raws:
        version_kind = (_text(raw.data.get("apiVersion")), _text(raw.data.get("kind")))
        model = KINDS.get(version_kind)
        if model is None:
            skipped.setdefault((raw.source.path, *version_kind), []).append(raw)
            continue
        convert = CONVERTERS.get(version_kind)
        data = raw.data
        if version_kind[1] == "Workload":
            data = _without_null_templates(data)
        try:
            obj = msgspec.convert(convert(data) if convert else data, model)
        except msgspec.ValidationError as exc:
            problems.append(_type_problem(raw, exc, inv.texts, inv.trees))
            continue
        versioned = None
        if version_kind in SCHEDULING_KINDS:
            versioned, obj = obj, SCHEDULING_KINDS[version_kind][1](obj)
        meta: m.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
        kind: str = obj.kind  # type: ignore[attr-defined]
        if kind in NAMESPACED and not meta.namespace:
            meta.namespace = "default"
        key = (kind, meta.namespace, meta.name)
        if meta.name and key in seen:
            err = FieldError.duplicate("metadata.name", meta.name)
            problems.append(_problem(raw.source, kind, meta.namespace, meta.name, err, inv.texts))
            continue
        seen[key] = raw.source
        getattr(inv, _LISTS[type(obj)]).append(obj)
        inv.sources[id(obj)] = raw.source
        if versioned is not None and type(versioned) is not type(obj):
            inv.versioned[id(obj)] = versioned
    if problems:
        raise InputError(problems)
    inv.warnings = _skip_warnings(skipped, inv)
    return inv


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


_VERSIONS: dict[str, list[str]] = {}
for _version, _kind in KINDS:
    _VERSIONS.setdefault(_kind, []).append(_version)


def _skip_warnings(skipped: dict[tuple[str, str, str], list[RawObject]], inv: Inventory) -> list[str]:
    """One warning per object skipped as malformed (no ``apiVersion`` or ``kind``, or a version of a kind phalanx
    reads that it does not know), and one per file and kind phalanx does not read, at its first object."""
    warnings: list[str] = []
    for (_, version, kind), raws in skipped.items():
        if version and kind and kind not in _VERSIONS:
            more = f" ({len(raws) - 1} more in this file)" if len(raws) > 1 else ""
            err = FieldError("", f"skipped: phalanx does not read {version} {kind}{more}")
            warnings.append(_raw_problem(raws[0], err, inv).render())
            continue
        for raw in raws:
            if not kind:
                err = FieldError.required("kind", "the object is skipped")
            elif not version:
                err = FieldError.required("apiVersion", "the object is skipped")
            else:
                supported = ", ".join(f'"{v}"' for v in _VERSIONS[kind])
                detail = f"supported values: {supported}: the object is skipped"
                err = FieldError("apiVersion", f'Unsupported value: "{version}": {detail}')
            warnings.append(_raw_problem(raw, err, inv).render())
    return warnings


def _raw_problem(raw: RawObject, err: FieldError, inv: Inventory) -> Problem:
    meta = raw.data.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind = _text(raw.data.get("kind")) or "object"
    return _problem(raw.source, kind, _text(meta.get("namespace")), _text(meta.get("name")), err, inv.texts, inv.trees)


def _type_problem(
    raw: RawObject, exc: msgspec.ValidationError, texts: dict[str, str], trees: dict[str, list[yaml.Node]]
) -> Problem:
    meta = raw.data.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    err = type_error(raw.data, str(exc))
    return _problem(
        raw.source,
        _text(raw.data.get("kind")),
        _text(meta.get("namespace")),
        _text(meta.get("name")),
        err,
        texts,
        trees,
    )


_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "null": "null"}
_JSON_TYPES |= {"object": "object", "array": "array", "dict": "object", "list": "array", "NoneType": "null"}
_EXPECTED = re.compile(r"^Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`")


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type (``string``, ``integer``, ``array`` ...), as Kubernetes says it."""
    return _JSON_TYPES.get(type(value).__name__, type(value).__name__)


def type_error(data: Any, message: str) -> FieldError:
    """A msgspec decoding error in Kubernetes' words: ``spec.priority: Invalid value: "high": must be of type
    integer``. ``data`` is the raw object, to show the value and to name a map key msgspec leaves as ``[...]``."""
    text, _, where = message.partition(" - at `")
    path = where.rstrip("`").removeprefix("$").lstrip(".")
    if path.startswith("key` in `"):  # a map key that is not a string
        path = path.removeprefix("key` in `").removeprefix("$").lstrip(".")
        return FieldError(path, "Invalid value: map keys must be of type string")
    missing = _MISSING.match(text)
    if missing:
        return FieldError.required(f"{path}.{missing['field']}".lstrip("."))
    expected = _EXPECTED.match(text)
    if expected is None:
        return FieldError(path, f"Invalid value: {text}")
    want = [_JSON_TYPES.get(t, t) for t in expected["want"].split(" | ") if t != "null"]
    if "number" in want and "integer" in want:
        want.remove("integer")
    path, value = _resolve(data, path, expected["got"])
    return FieldError(path, f"Invalid value: {_shown(value)}: must be of type {' or '.join(dict.fromkeys(want))}")


def _resolve(data: Any, path: str, got: str) -> tuple[str, Any]:
    """The value at ``path``; a ``[...]`` step (msgspec does not name map keys) becomes the first key whose value
    has the type msgspec got."""
    node, out = data, ""
    for step in _split_path(path.replace("[...]", "[\0]")):
        if step == "\0" and isinstance(node, dict):
            step = next((k for k, v in node.items() if json_type(v) == _JSON_TYPES.get(got, got)), "...")
            out += f"[{step}]"
        elif isinstance(step, int):
            out += f"[{step}]"
        else:
            out += f".{step}" if out else str(step)
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return out, None
    return out, node


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 80 else text[:77] + "..."


def problem_at(inv: Inventory, obj: msgspec.Struct, err: FieldError) -> Problem:
    """A problem with ``obj`` (an object of ``inv``), located at the line of the field ``err`` names."""
    meta: m.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    kind: str = obj.kind  # type: ignore[attr-defined]
    return _problem(inv.source_of(obj), kind, meta.namespace, meta.name, err, inv.texts, inv.trees)


def _problem(
    source: Source,
    kind: str,
    ns: str,
    name: str,
    err: FieldError,
    texts: dict[str, str],
    trees: dict[str, list[yaml.Node]] | None = None,
) -> Problem:
    line = locate(source, err.path, texts, trees)
    return Problem(Source(source.path, source.doc, source.item, line), kind, ns, name, err)


def locate(
    source: Source, path: str, texts: dict[str, str] | None = None, trees: dict[str, list[yaml.Node]] | None = None
) -> int:
    """The 1-based line of ``path`` (``spec.containers[0].resources.requests[nvidia.com/gpu]``) in the object at
    ``source``, or of its closest existing parent; 0 when the file cannot be read again. ``trees`` caches each
    file's node tree, so reporting many problems parses each file once."""
    docs = _trees(source.path, texts or {}, trees if trees is not None else {})
    if source.doc >= len(docs):
        return 0
    node: yaml.Node = docs[source.doc]
    steps: list[str | int] = ["items", source.item] if source.item is not None else []
    steps += _split_path(path)
    line = int(node.start_mark.line)
    i = 0
    while i < len(steps):
        child, key, used = _child(node, steps, i)
        if child is None:
            break
        # The line of a field is its key's line (a list item's own line); a missing field gets its parent's.
        line = int((key or child).start_mark.line)
        node, i = child, i + used
    return line + 1


def _trees(path: str, texts: dict[str, str], trees: dict[str, list[yaml.Node]]) -> list[yaml.Node]:
    if path not in trees:
        try:
            text = texts.get(path) if path == "-" else Path(path).read_text("utf-8")
            nodes = list(yaml.compose_all(text, Loader=_Loader)) if text is not None else []
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            nodes = []
        trees[path] = [n for n in nodes if n is not None]
    return trees[path]


_PATH_TOKEN = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


def _split_path(path: str) -> list[str | int]:
    """Field names split on dots; bracketed keys and indexes kept whole (``requests[nvidia.com/gpu]``)."""
    steps: list[str | int] = []
    for bracket, name in _PATH_TOKEN.findall(path):
        if name:
            steps.append(name)
        else:
            steps.append(int(bracket) if bracket.isdigit() else bracket)
    return steps


def _child(node: yaml.Node, steps: list[str | int], i: int) -> tuple[yaml.Node | None, yaml.Node | None, int]:
    """The child ``steps[i]`` names, and how many steps it used: a key with dots written as a dotted path
    (``capacity.nvidia.com/gpu``) joins the following names until a key matches."""
    step = steps[i]
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
        return node.value[step], None, 1
    if not isinstance(node, yaml.MappingNode):
        return None, None, 0
    keys = {str(getattr(k, "value", None)): (k, v) for k, v in node.value}
    name = str(step)
    for j in range(i, len(steps)):
        if j > i:
            if not isinstance(steps[j], str):
                break
            name += "." + str(steps[j])
        if name in keys:
            key, value = keys[name]
            return value, key, j - i + 1
    return None, None, 0
