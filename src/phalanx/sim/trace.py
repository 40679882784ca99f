"""A job trace for ``phalanx simulate --workload``: a CSV with a header row, or YAML (a list of jobs, or
``{jobs: [...], nodeEvents: [...]}``) with the same fields; docs/simulate.md lists them.

Each row is read field by field (``sim.inputs``), then the objects the job becomes (its batch/v1 Job and pods,
its PodGroup, its ResourceClaimTemplate) are checked by the validation ``phalanx validate`` runs, and each problem
is reported at the column it comes from: ``jobs.csv:4: cpu: Invalid value: "-1": must be greater than or equal
to 0``. Nothing is simulated unless every row is valid.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from phalanx.api.errors import FieldError, InputError
from phalanx.api.files import read_text
from phalanx.api.loader import check_aliasing
from phalanx.api.models import Node
from phalanx.api.validation import fields as f
from phalanx.api.validation import validate_job, validate_pod_group, validate_resource_claim_template
from phalanx.api.validation.job import MAX_INDEXED_PARALLELISM
from phalanx.sim.cluster_spec import POOL
from phalanx.sim.device_claims import CLAIM_FIELDS, GpuClaim, parse_claim
from phalanx.sim.elastic import MinCountEvent, parse_job_events
from phalanx.sim.faults import NodeEvent, parse_node_events
from phalanx.sim.inputs import INT32_MAX, REQUIRED, Fields, yaml_lines
from phalanx.sim.jobs import GPU, JobRecord, batch_job, claim_template_of, trace_pod_group
from phalanx.sim.tree_jobs import TREE_FIELDS, check_tree, parse_tree

__all__ = ["COLUMNS", "load_trace", "load_workload"]

COLUMNS = (
    "name",
    "submit",
    "duration",
    "pods",
    "cpu",
    "memory",
    "gpus",
    "minCount",
    "priority",
    "topology",
    "failureProbability",
    "backoffLimit",
    *sorted(CLAIM_FIELDS),
)
_TOPOLOGY_MODES = ("required", "preferred")
_RESTART = re.compile(r"(.+)-r[0-9]+")
_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Problems = tuple[tuple[str, str], ...]  # (column, message)


@dataclass(frozen=True)
class _Row:
    """One job's fields, the prefix of their paths (``jobs[3].`` in YAML, none in CSV) and, in CSV, its line."""

    values: Mapping[str, Any]
    prefix: str
    line: int | None

    def at(self, column: str) -> str:
        return self.prefix + column


def load_trace(path: str) -> list[JobRecord]:
    """Read a CSV (header row with the columns of docs/simulate.md) or a YAML list of the same fields."""
    return load_workload(path)[0]


def load_workload(
    path: str, nodes: Collection[Node] | None = None
) -> tuple[list[JobRecord], list[NodeEvent], list[MinCountEvent]]:
    """The jobs of a trace file, its ``nodeEvents`` and its ``jobEvents`` (YAML ``{jobs: [...], nodeEvents: [...],
    jobEvents: [...]}`` only). With ``nodes`` (the cluster), an event naming a node or pool the cluster lacks is an
    error. Raises InputError with every problem of the file."""
    text = read_text(path, "workload")
    events: list[NodeEvent] = []
    job_events: list[MinCountEvent] = []
    raw: Any = None
    if path.lower().endswith(".csv"):
        fields = Fields(path)
        rows = list(_csv_rows(text, fields))
    else:
        fields = Fields(path, yaml_lines(path, text))
        raw = _yaml(path, text)
        rows = list(_yaml_rows(raw, fields))
        if isinstance(raw, dict):
            events = parse_node_events(raw.get("nodeEvents"), fields, targets=_targets(nodes))
    jobs = [_job(row, i, fields) for i, row in enumerate(rows)]
    _check_names(jobs, rows, fields)
    if isinstance(raw, dict):
        job_events = parse_job_events(raw.get("jobEvents"), fields, {j.name: j.pods for j in jobs})
    if not rows and not fields.problems:
        fields.add(FieldError.required("jobs", "the trace has no jobs"))
    fields.check()
    return jobs, events, job_events


def _targets(nodes: Collection[Node] | None) -> tuple[set[str], set[str]] | None:
    if nodes is None:
        return None
    return {n.metadata.name for n in nodes}, {n.metadata.labels[POOL] for n in nodes if POOL in n.metadata.labels}


# --- reading rows --------------------------------------------------------------------------------------------------


def _csv_rows(text: str, fields: Fields) -> Iterator[_Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [cell.strip() for cell in next(reader, [])]
        _check_header(header, fields)
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue  # a blank line
            if len(cells) > len(header):
                detail = f"has {len(cells)} values, the header {len(header)} columns"
                fields.add(FieldError("", f"Invalid value: {detail}"), reader.line_num)
                continue
            yield _Row(dict(zip(header, cells, strict=False)), "", reader.line_num)
    except csv.Error as exc:
        fields.add(FieldError("", f"cannot parse: {exc}"), reader.line_num)


def _check_header(header: list[str], fields: Fields) -> None:
    for i, column in enumerate(header):
        if column not in COLUMNS:
            fields.add(FieldError("", f'unknown column "{column}"'), 1)
        elif column in header[:i]:
            fields.add(FieldError.duplicate("", column), 1)


def _yaml(path: str, text: str) -> Any:
    try:
        docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
        for doc in docs:
            check_aliasing(doc)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InputError([f"{path}{line}: cannot parse: {getattr(exc, 'problem', None) or exc}"]) from exc
    except ValueError as exc:
        raise InputError([f"{path}: cannot parse: {exc}"]) from exc
    if len(docs) > 1:
        raise InputError([f"{path}: a trace is one YAML document, this file has {len(docs)}"])
    return docs[0] if docs else None


def _yaml_rows(raw: Any, fields: Fields) -> Iterator[_Row]:
    if isinstance(raw, dict):
        fields.mapping(raw, "", ("jobs", "nodeEvents", "jobEvents"))
        items, prefix = fields.items(raw.get("jobs"), "jobs"), "jobs"
    elif isinstance(raw, list):
        items, prefix = raw, ""
    else:
        fields.add(FieldError("", "Invalid value: must be a list of jobs, or an object with `jobs`"))
        return
    for i, item in enumerate(items):
        if isinstance(item, dict):
            fields.mapping(item, f"{prefix}[{i}]", (*COLUMNS, *TREE_FIELDS))  # a tree job: YAML only
            yield _Row(item, f"{prefix}[{i}].", None)
        else:
            fields.mapping(item, f"{prefix}[{i}]", COLUMNS)  # the error


# --- one job -------------------------------------------------------------------------------------------------------


def _job(row: _Row, index: int, fields: Fields) -> JobRecord:
    if "groups" in row.values:
        return _tree_job(row, index, fields)
    v, line, before = row.values, row.line, len(fields.problems)
    pods = fields.integer(v.get("pods"), row.at("pods"), REQUIRED, low=1, high=MAX_INDEXED_PARALLELISM, line=line)
    job = JobRecord(
        name=fields.text(v.get("name"), row.at("name"), f"job-{index}", line),
        submit=fields.number(v.get("submit"), row.at("submit"), REQUIRED, line=line),
        duration=fields.number(v.get("duration"), row.at("duration"), REQUIRED, line=line),
        pods=pods,
        cpu=fields.text(v.get("cpu"), row.at("cpu"), "1", line),
        memory=fields.text(v.get("memory"), row.at("memory"), "4Gi", line),
        gpus=fields.integer(v.get("gpus"), row.at("gpus"), 0, high=INT32_MAX, line=line),
        min_count=fields.integer(v.get("minCount"), row.at("minCount"), 0, high=pods, line=line),
        priority=fields.integer(v.get("priority"), row.at("priority"), 0, low=-INT32_MAX - 1, line=line),
        topology=_topology(v.get("topology"), row, fields),
        failure_probability=fields.number(
            v.get("failureProbability"), row.at("failureProbability"), 0.0, high=1.0, line=line
        ),
        backoff_limit=fields.integer(v.get("backoffLimit"), row.at("backoffLimit"), 6, line=line),
        claim=parse_claim(v, fields, row.prefix, line),
    )
    if job.claim is not None and not job.gpus:
        fields.invalid(row.at("gpus"), job.gpus, "must be greater than 0 for a DRA claim", line)
    if len(fields.problems) == before:  # the objects of a row with bad fields would only repeat its problems
        for column, message in _object_problems(job):
            fields.add(FieldError(row.at(column) if column else row.prefix.rstrip("."), message), line)
    return job


def _tree_job(row: _Row, index: int, fields: Fields) -> JobRecord:
    """A job with ``groups``: a CompositePodGroup tree (``sim.tree_jobs``); its pods are its groups'."""
    v, before = row.values, len(fields.problems)
    cpu = fields.text(v.get("cpu"), row.at("cpu"), "1")
    memory = fields.text(v.get("memory"), row.at("memory"), "4Gi")
    gpus = fields.integer(v.get("gpus"), row.at("gpus"), 0, high=INT32_MAX)
    topology = fields.text(v.get("topology"), row.at("topology"), "")
    tree = parse_tree(v, row.prefix, fields, (cpu, memory, gpus), topology)
    job = JobRecord(
        name=fields.text(v.get("name"), row.at("name"), f"job-{index}"),
        submit=fields.number(v.get("submit"), row.at("submit"), REQUIRED),
        duration=fields.number(v.get("duration"), row.at("duration"), REQUIRED),
        pods=sum(g.pods for g in tree.groups) or 1,
        cpu=cpu,
        memory=memory,
        gpus=tree.groups[0].gpus if tree.groups else gpus,
        priority=fields.integer(v.get("priority"), row.at("priority"), 0, low=-INT32_MAX - 1),
        failure_probability=fields.number(v.get("failureProbability"), row.at("failureProbability"), 0.0, high=1.0),
        backoff_limit=fields.integer(v.get("backoffLimit"), row.at("backoffLimit"), 6),
        tree=tree,
    )
    if len(fields.problems) == before:
        for err in _name_problems(job.name):
            fields.add(FieldError(row.at("name"), err.message))
        check_tree(job.name, tree, job.priority, row.prefix, fields)
    return job


def _topology(raw: Any, row: _Row, fields: Fields) -> str:
    topology = fields.text(raw, row.at("topology"), "", row.line)
    mode, sep, key = topology.partition(":")
    if topology and (not sep or mode not in _TOPOLOGY_MODES or not key):
        detail = "must be required:<label key> or preferred:<label key>"
        fields.invalid(row.at("topology"), topology, detail, row.line)
        return ""
    return topology


def _object_problems(job: JobRecord) -> list[tuple[str, str]]:
    """(column, message) for every problem the job's Kubernetes objects have. The check of everything but the
    name is shared by rows that differ only in name and times (most of a trace)."""
    problems = [(_job_column(err.path), err.message) for err in _name_problems(job.name)]
    shape = (job.pods, job.cpu, job.memory, job.gpus, job.min_count, job.priority, job.topology, job.backoff_limit)
    return problems + list(_shape_problems(shape, job.claim))


def _name_problems(name: str) -> list[FieldError]:
    """The Job name rules of ``validate_job`` (a DNS subdomain, and a label value for the pods' job-name label),
    without building the Job: a trace has as many names as rows."""
    return f.dns_subdomain("metadata.name", name) + f.label_value("spec.template.labels", name)


@lru_cache(maxsize=1024)
def _shape_problems(shape: tuple[int, str, str, int, int, int, str, int], claim: GpuClaim | None) -> _Problems:
    pods, cpu, memory, gpus, min_count, priority, topology, backoff_limit = shape
    job = JobRecord("job", 0.0, 0.0, pods, cpu, memory, gpus, min_count, priority, topology, 0.0, backoff_limit, claim)
    named = ("metadata.name", "spec.template.labels")  # checked per row (_name_problems)
    errs = [(_job_column(e.path), e.message) for e in validate_job(batch_job(job, 0)) if e.path not in named]
    group = trace_pod_group(job)
    if group is not None:
        errs += [(_group_column(e.path, job), e.message) for e in validate_pod_group(group)]
    template = claim_template_of(job, 0)
    if template is not None:
        errs += [(_claim_column(e.path, job), e.message) for e in validate_resource_claim_template(template)]
    return tuple(dict.fromkeys(errs))


_RESOURCE_COLUMNS = {"cpu": "cpu", "memory": "memory", GPU: "gpus"}


def _job_column(path: str) -> str:
    if path in ("metadata.name", "spec.template.labels") or path.startswith("spec.template.spec.resourceClaims"):
        return "name"
    if path.startswith(("spec.parallelism", "spec.completions")):
        return "pods"
    if path.startswith("spec.backoffLimit"):
        return "backoffLimit"
    if path.startswith("spec.template.spec.priority"):
        return "priority"
    resource = re.search(r"\.resources\.(?:requests|limits)\[([^\]]+)\]", path)
    return _RESOURCE_COLUMNS.get(resource[1], "") if resource else ""


def _group_column(path: str, job: JobRecord) -> str:
    if path.startswith("spec.schedulingPolicy"):
        return "minCount" if job.min_count else "pods"
    if path.startswith("spec.priority"):
        return "priority"
    if path.startswith("metadata.annotations"):
        return "topology"
    return "name"


def _claim_column(path: str, job: JobRecord) -> str:
    assert job.claim is not None
    selector = re.search(r"\.selectors\[([0-9]+)\]", path)
    if selector:
        return "gpuProduct" if job.claim.product and selector[1] == "0" else "gpuSelector"
    if ".deviceClassName" in path:
        return "deviceClass"
    if ".count" in path:
        return "gpus"
    if ".constraints" in path:
        return "matchAttribute"
    return "name"


def _check_names(jobs: list[JobRecord], rows: list[_Row], fields: Fields) -> None:
    """Job names are unique, and no name is the one a restart of another job gets (``<name>-r<n>``)."""
    seen: set[str] = set()
    names = {job.name for job in jobs}
    for job, row in zip(jobs, rows, strict=True):
        if job.name in seen:
            fields.add(FieldError.duplicate(row.at("name"), job.name), row.line)
        seen.add(job.name)
        restart = _RESTART.fullmatch(job.name)
        if restart and restart[1] in names:
            detail = f'the simulator names the restarts of job "{restart[1]}" so'
            fields.invalid(row.at("name"), job.name, detail, row.line)
