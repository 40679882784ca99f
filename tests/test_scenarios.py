"""Scenario tests: each ``tests/scenarios/*.yaml`` is one cluster snapshot and what kube-scheduler v1.36 (plus
phalanx's documented improvements) must decide for it. The files are meant to be read without Python.

Scenario file format (one YAML document)::

    name: <one line>                      required
    why: <the rule or user report it pins> required
    objects: [<Kubernetes objects>]        required, written to a snapshot file as a YAML List
    config: {<KubeSchedulerConfiguration>} optional
    schedulerName: <name>                  optional, like --scheduler-name
    xfail: <why the engine is wrong>       optional; the test is then xfail(strict=True)
    compat: v1.37                          optional: the compatibility mode the scenario pins (default v1.36)
    rules: [<rule>, ...]                   optional: the beyond-v1.36 rules (kebab-case) ``expect`` depends on
    expectCompat: {<as expect>}            required with ``rules``: the outcome under ``--compat`` (``compat``)
    expect:                                required, at least one of:
      pods:        {<name or ns/name>: {phase, node, reason, message}}   only the given fields are compared
      podGroups:   {<name or ns/name>: {minCount, scheduledPods, condition}}   condition: null or a sub-dict
      compositePodGroups: {<name or ns/name>: {minGroupCount, children, satisfiedChildren, condition}}
      counts:      {<phase>: <n>}          the whole phase histogram (phases with 0 pods are left out)
      exactlyOneOf: [[pods...], [pods...]] exactly one list has every pod Scheduled, the others have none
      evictions:   {<victim>: <Pod/name or PodGroup/name>}   the whole set of preemption victims and their preemptors

Every scenario runs through ``schedule_snapshot`` + ``build_result`` with several tie-break seeds (an expectation
must not depend on which of two equal nodes the hash picks); every scenario also runs through the CLI
(``phalanx schedule -o json``) and must give the same pods and PodGroups. Every scenario also runs with
``--compat v1.36`` (or the scenario's ``compat``): one without ``rules`` pins that version's semantics and must meet ``expect`` there too; one with
``rules`` must meet ``expectCompat``, and, when it names one rule, so must phalanx with that rule alone off.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from phalanx.cli import cli
from phalanx.scheduling.config import SchedulerConfig, parse_config, with_mode
from phalanx.scheduling.rules import RULES, Rules
from phalanx.snapshot.result import build_result
from phalanx.snapshot.schedule import schedule_snapshot

from schedule_cli import RESULT_SCHEMA

SCENARIO_DIR = Path(__file__).parent / "scenarios"

_TOP_KEYS = {"name", "why", "objects", "config", "schedulerName", "xfail", "rules", "expect", "expectCompat", "compat"}
_COMPAT_VERSIONS = {"v1.36", "v1.37"}
_REQUIRED = {"name", "why", "objects", "expect"}
_EXPECT_KEYS = {"pods", "podGroups", "compositePodGroups", "counts", "exactlyOneOf", "nodesUsed", "evictions", "claims"}
_CLAIM_FIELDS = {"allocated", "devices", "node", "reservedFor", "generatedFrom", "results"}
_POD_FIELDS = {"phase", "node", "reason", "message", "nominatedNode", "rules", "candidateNodes"}
_GROUP_FIELDS = {"minCount", "scheduledPods", "condition", "disruptionTarget", "rules", "candidatePlacements", "parent"}
_COMPOSITE_FIELDS = {"minGroupCount", "parent", "children", "satisfiedChildren", "condition", "rules"}
_CONDITION_FIELDS = {"type", "status", "reason", "message"}
_PHASES = {"Scheduled", "Running", "Unschedulable", "Waiting", "Succeeded", "Failed", "Evicted"}


class ScenarioError(Exception):
    """A scenario file is malformed: the test must fail, never pass vacuously."""


@dataclass(frozen=True)
class Scenario:
    path: Path
    name: str
    why: str
    objects: list[dict[str, Any]]
    config: dict[str, Any] | None
    scheduler_name: str | None
    xfail: str | None
    expect: dict[str, Any]
    rules: tuple[str, ...] = ()
    expect_compat: dict[str, Any] | None = None
    compat: str = "v1.36"


def _fail(path: Path, msg: str) -> ScenarioError:
    return ScenarioError(f"{path.name}: {msg}")


def _check_fields(path: Path, where: str, given: Any, allowed: set[str]) -> None:
    if not isinstance(given, dict):
        raise _fail(path, f"{where}: must be a mapping, got {type(given).__name__}")
    unknown = set(given) - allowed
    if unknown:
        raise _fail(path, f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def load_scenario(path: Path) -> Scenario:
    """Parse and check the shape of one scenario file. Raises ScenarioError on anything unexpected."""
    try:
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except yaml.YAMLError as exc:
        raise _fail(path, f"not valid YAML: {exc}") from exc
    if len(docs) != 1:
        raise _fail(path, f"must hold exactly one YAML document, found {len(docs)}")
    raw = docs[0]
    _check_fields(path, "top level", raw, _TOP_KEYS)
    missing = _REQUIRED - set(raw)
    if missing:
        raise _fail(path, f"missing required field(s) {sorted(missing)}")
    for key in ("name", "why"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise _fail(path, f"{key}: must be a non-empty string")
    objects = raw["objects"]
    if not isinstance(objects, list) or not objects:
        raise _fail(path, "objects: must be a non-empty list")
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict) or not obj.get("kind") or not obj.get("apiVersion"):
            raise _fail(path, f"objects[{i}]: needs apiVersion and kind")
    config = raw.get("config")
    if config is not None and not isinstance(config, dict):
        raise _fail(path, "config: must be a KubeSchedulerConfiguration mapping")
    xfail = raw.get("xfail")
    if xfail is not None and (not isinstance(xfail, str) or not xfail.strip()):
        raise _fail(path, "xfail: must be a non-empty reason")
    rules = raw.get("rules") or []
    unknown_rules = sorted(set(rules) - set(Rules.all_names())) if isinstance(rules, list) else rules
    if unknown_rules:
        raise _fail(path, f"rules: unknown rule(s) {unknown_rules}; known: {Rules.all_names()}")
    if bool(rules) != ("expectCompat" in raw):
        raise _fail(path, "rules and expectCompat go together: the outcome under --compat v1.36 of what rules change")
    compat = raw.get("compat", "v1.36")
    if compat not in _COMPAT_VERSIONS:
        raise _fail(path, f"compat: must be one of {sorted(_COMPAT_VERSIONS)}, got {compat!r}")
    for key in ("expect", "expectCompat") if "expectCompat" in raw else ("expect",):
        _check_expect(path, raw[key], key)
    return Scenario(
        path,
        raw["name"],
        raw["why"],
        objects,
        config,
        raw.get("schedulerName"),
        xfail,
        raw["expect"],
        tuple(rules),
        raw.get("expectCompat"),
        compat,
    )


def _check_expect(path: Path, expect: Any, where: str) -> None:
    _check_fields(path, where, expect, _EXPECT_KEYS)
    if not expect:
        raise _fail(path, f"{where}: states nothing")
    for pod, fields in (expect.get("pods") or {}).items():
        _check_fields(path, f"expect.pods[{pod}]", fields, _POD_FIELDS)
        if "phase" in fields and fields["phase"] not in _PHASES:
            raise _fail(path, f"expect.pods[{pod}].phase: unknown phase {fields['phase']!r}")
    for group, fields in (expect.get("podGroups") or {}).items():
        _check_fields(path, f"expect.podGroups[{group}]", fields, _GROUP_FIELDS)
        cond = fields.get("condition")
        if cond is not None:
            _check_fields(path, f"expect.podGroups[{group}].condition", cond, _CONDITION_FIELDS)
    for group, fields in (expect.get("compositePodGroups") or {}).items():
        _check_fields(path, f"expect.compositePodGroups[{group}]", fields, _COMPOSITE_FIELDS)
        cond = fields.get("condition")
        if cond is not None:
            _check_fields(path, f"expect.compositePodGroups[{group}].condition", cond, _CONDITION_FIELDS)
    counts = expect.get("counts")
    if counts is not None:
        _check_fields(path, "expect.counts", counts, _PHASES)
    one_of = expect.get("exactlyOneOf")
    if one_of is not None and (
        not isinstance(one_of, list) or len(one_of) < 2 or not all(isinstance(s, list) and s for s in one_of)
    ):
        raise _fail(path, "expect.exactlyOneOf: must be a list of at least two non-empty lists of pod names")
    evictions = expect.get("evictions")
    if evictions is not None and not isinstance(evictions, dict):
        raise _fail(path, "expect.evictions: must map each victim to its preemptor (Pod/name or PodGroup/name)")
    for claim, fields in (expect.get("claims") or {}).items():
        _check_fields(path, f"expect.claims[{claim}]", fields, _CLAIM_FIELDS)
    used = expect.get("nodesUsed")
    if used is not None:
        _check_fields(path, "expect.nodesUsed", used, {"pods", "nodes"})
        if not used.get("pods") or not isinstance(used.get("nodes"), list):
            raise _fail(path, "expect.nodesUsed: needs a non-empty list of pods and a list of nodes")


def _key(name: str) -> str:
    return name if "/" in name else f"default/{name}"


def check_result(
    scenario: Scenario, result: dict[str, Any], run: str = "", expect: dict[str, Any] | None = None
) -> None:
    """Compare a ScheduleResult with the scenario's expectations (``expect``, or the given ones); every mismatch
    is listed."""
    pods = {f"{p['namespace']}/{p['name']}": p for p in result["pods"]}
    groups = {f"{g['namespace']}/{g['name']}": g for g in result["podGroups"]}
    composites = {f"{g['namespace']}/{g['name']}": g for g in result.get("compositePodGroups", [])}
    expect = scenario.expect if expect is None else expect
    problems: list[str] = []
    problems += _check_groups(scenario, "compositePodGroups", composites, expect.get("compositePodGroups") or {})
    for name, fields in (expect.get("pods") or {}).items():
        actual = pods.get(_key(name))
        if actual is None:
            raise _fail(scenario.path, f"expect.pods names {name!r}, which is not a pod of the snapshot")
        for field, want in fields.items():
            if actual.get(field) != want:
                problems.append(f"pod {name}: {field} is {actual.get(field)!r}, expected {want!r}")
    for name, fields in (expect.get("podGroups") or {}).items():
        actual = groups.get(_key(name))
        if actual is None:
            raise _fail(scenario.path, f"expect.podGroups names {name!r}, which is not a PodGroup of the snapshot")
        for field, want in fields.items():
            got = actual.get(field)
            if field in ("condition", "disruptionTarget") and isinstance(want, dict) and isinstance(got, dict):
                for cf, cwant in want.items():
                    if got.get(cf) != cwant:
                        problems.append(f"podGroup {name}: {field}.{cf} is {got.get(cf)!r}, expected {cwant!r}")
            elif got != want:
                problems.append(f"podGroup {name}: {field} is {got!r}, expected {want!r}")
    if "counts" in expect:
        histogram = dict(Counter(p["phase"] for p in result["pods"]))
        if histogram != expect["counts"]:
            problems.append(f"phase counts are {histogram}, expected {expect['counts']}")
    for sets in [expect["exactlyOneOf"]] if "exactlyOneOf" in expect else []:
        full = []
        for members in sets:
            for m in members:
                if _key(m) not in pods:
                    raise _fail(scenario.path, f"expect.exactlyOneOf names {m!r}, which is not a pod of the snapshot")
            scheduled = [m for m in members if pods[_key(m)]["phase"] == "Scheduled"]
            if len(scheduled) == len(members):
                full.append(members)
            elif scheduled:
                problems.append(f"partial placement: {scheduled} of {members} are Scheduled")
        if len(full) != 1:
            problems.append(f"exactly one of {sets} should be fully Scheduled, got {full}")
    if "evictions" in expect:
        got_evictions = {
            f"{e['namespace']}/{e['name']}": f"{e['preemptor']['kind']}/{e['preemptor']['namespace']}/{e['preemptor']['name']}"
            for e in result["evictions"]
        }
        want_evictions = {}
        for victim, preemptor in expect["evictions"].items():
            kind, _, name = str(preemptor).partition("/")
            want_evictions[_key(victim)] = f"{kind}/{_key(name)}"
        if got_evictions != want_evictions:
            problems.append(f"evictions are {got_evictions}, expected {want_evictions}")
    for name, fields in (expect.get("claims") or {}).items():
        problems += _check_claim(scenario, result, name, fields)
    if "nodesUsed" in expect:
        used = expect["nodesUsed"]
        for m in used["pods"]:
            if _key(m) not in pods:
                raise _fail(scenario.path, f"expect.nodesUsed names {m!r}, which is not a pod of the snapshot")
        got = sorted({pods[_key(m)]["node"] for m in used["pods"]}, key=str)
        if got != sorted(used["nodes"]):
            problems.append(f"pods {used['pods']} are on nodes {got}, expected exactly {sorted(used['nodes'])}")
    if problems:
        where = f" [{run}]" if run else ""
        pytest.fail(f"{scenario.path.name} ({scenario.name}){where}:\n  " + "\n  ".join(problems), pytrace=False)


def _check_groups(scenario: Scenario, kind: str, actual_groups: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    problems = []
    for name, fields in expected.items():
        actual = actual_groups.get(_key(name))
        if actual is None:
            raise _fail(scenario.path, f"expect.{kind} names {name!r}, which is not one of the result")
        for field, want in fields.items():
            got = actual.get(field)
            if field == "condition" and isinstance(want, dict) and isinstance(got, dict):
                problems += [
                    f"{kind} {name}: condition.{cf} is {got.get(cf)!r}, expected {cw!r}"
                    for cf, cw in want.items()
                    if got.get(cf) != cw
                ]
            elif got != want:
                problems.append(f"{kind} {name}: {field} is {got!r}, expected {want!r}")
    return problems


def _find_claim(scenario: Scenario, result: dict[str, Any], name: str) -> dict[str, Any]:
    """``ns/name`` or ``name`` of a claim; ``pod:<pod>:<entry>`` is the claim generated for that pod's entry."""
    claims = {f"{c['namespace']}/{c['name']}": c for c in result["resourceClaims"]}
    if name.startswith(("pod:", "podgroup:")):
        _, owner, entry = name.split(":")
        prefix = f"{_key(owner)}-{entry}-"
        found = [c for k, c in claims.items() if k.startswith(prefix) and "generatedFrom" in c]
        if len(found) != 1:
            raise _fail(scenario.path, f"expect.claims names {name!r}, but {len(found)} generated claims match")
        return found[0]
    if _key(name) not in claims:
        raise _fail(scenario.path, f"expect.claims names {name!r}, which is not a claim of the result")
    return claims[_key(name)]


def _check_claim(scenario: Scenario, result: dict[str, Any], name: str, fields: dict[str, Any]) -> list[str]:
    """allocated: bool; devices: [driver/pool/device] in result order; node: the node a node-local allocation is
    pinned to; reservedFor: consumer names; generatedFrom; results: sub-mappings compared field by field."""
    claim = _find_claim(scenario, result, name)
    allocation = claim["allocation"]
    results = (allocation or {}).get("devices", {}).get("results", [])
    problems = []
    got: dict[str, Any] = {
        "allocated": allocation is not None,
        "devices": [f"{r['driver']}/{r['pool']}/{r['device']}" for r in results],
        "reservedFor": [r["name"] for r in claim["reservedFor"]],
        "generatedFrom": claim.get("generatedFrom"),
    }
    terms = ((allocation or {}).get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    fields_ = [f for t in terms for f in t.get("matchFields", []) if f.get("key") == "metadata.name"]
    got["node"] = fields_[0]["values"][0] if len(fields_) == 1 and len(fields_[0]["values"]) == 1 else None
    for field, want in fields.items():
        if field == "results":
            for i, sub in enumerate(want):
                have = results[i] if i < len(results) else {}
                for k, v in sub.items():
                    if have.get(k) != v:
                        problems.append(f"claim {name}: results[{i}].{k} is {have.get(k)!r}, expected {v!r}")
            if len(want) != len(results):
                problems.append(f"claim {name}: {len(results)} results, expected {len(want)}")
        elif got[field] != want:
            problems.append(f"claim {name}: {field} is {got[field]!r}, expected {want!r}")
    return problems


def _write_snapshot(scenario: Scenario, tmp_path: Path) -> Path:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": scenario.objects}), encoding="utf-8")
    return path


def run_engine(
    scenario: Scenario, tmp_path: Path, seed: int = 0, compat: str | None = None, rules: Rules | None = None
) -> dict[str, Any]:
    """The scenario through the engine; ``compat`` as ``--compat``, or ``rules`` to run with some rules off."""
    snapshot = _write_snapshot(scenario, tmp_path)
    config = parse_config(scenario.config, scenario.path.name) if scenario.config is not None else SchedulerConfig()
    config = with_mode(config, compat)
    if rules is not None:
        config = replace(config, rules=rules)
    sched, _, timings = schedule_snapshot([str(snapshot)], config, scenario.scheduler_name, seed=seed)
    result = build_result(sched, timings)
    jsonschema.validate(result, RESULT_SCHEMA)  # every result the scenarios produce obeys the documented schema
    if compat is not None:
        # Nothing beyond upstream may act in compatibility mode: no rule on, none named on any pod or group.
        assert result["mode"]["rules"] == [] and result["mode"]["compat"] == compat
        groups = (*result["podGroups"], *result.get("compositePodGroups", []))
        leaked = [o["name"] for o in (*result["pods"], *groups) if o.get("rules")]
        assert not leaked, f"rules acted in --compat {compat} on {leaked}"
    return result


def run_cli(scenario: Scenario, tmp_path: Path) -> dict[str, Any]:
    snapshot = _write_snapshot(scenario, tmp_path)
    args = ["schedule", "-f", str(snapshot), "-o", "json"]
    if scenario.config is not None:
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(scenario.config), encoding="utf-8")
        args += ["--config", str(config)]
    if scenario.scheduler_name:
        args += ["--scheduler-name", scenario.scheduler_name]
    out = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _params() -> list[Any]:
    files = sorted(SCENARIO_DIR.glob("*.yaml"))
    assert len(files) >= 20, f"expected at least 20 scenarios in {SCENARIO_DIR}, found {len(files)}"
    params = []
    for path in files:
        marks = []
        try:
            xfail = load_scenario(path).xfail
        except ScenarioError:
            xfail = None  # the test itself reports the malformed file
        if xfail:
            # Only a failed expectation counts as the expected failure: a malformed file (ScenarioError) or a CLI
            # that disagrees with the engine still fails the test.
            marks.append(pytest.mark.xfail(strict=True, reason=xfail, raises=pytest.fail.Exception))
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


PARAMS = _params()


# Ties between equally scored nodes are broken by a seeded hash; an expectation must hold whatever the seed, so a
# scenario never passes by luck of the tie-break.
SEEDS = (0, 1, 2, 3)


@pytest.mark.parametrize("path", PARAMS)
def test_scenario(path: Path, tmp_path: Path) -> None:
    scenario = load_scenario(path)
    for seed in SEEDS:
        check_result(scenario, run_engine(scenario, tmp_path, seed), f"seed {seed}")


@pytest.mark.parametrize("path", PARAMS)
def test_scenario_compat(path: Path, tmp_path: Path) -> None:
    """``--compat v1.36`` (or the scenario's ``compat``): a scenario of upstream semantics meets ``expect``, one
    that depends on phalanx's rules meets ``expectCompat``, and so does phalanx with the scenario's one rule alone
    turned off."""
    scenario = load_scenario(path)
    expect = scenario.expect_compat if scenario.rules else scenario.expect
    for seed in SEEDS[:2]:
        result = run_engine(scenario, tmp_path, seed, compat=scenario.compat)
        check_result(scenario, result, f"compat {scenario.compat}, seed {seed}", expect)
    if len(scenario.rules) == 1:
        without = replace(RULES, **{scenario.rules[0].replace("-", "_"): False})
        check_result(scenario, run_engine(scenario, tmp_path, rules=without), f"without {scenario.rules[0]}", expect)


@pytest.mark.parametrize("path", PARAMS)
def test_scenario_through_cli(path: Path, tmp_path: Path) -> None:
    """The CLI gives the same decisions as the engine called directly, and so meets the same expectations."""
    scenario = load_scenario(path)
    (tmp_path / "cli").mkdir()
    via_cli = run_cli(scenario, tmp_path / "cli")
    direct = run_engine(scenario, tmp_path)
    assert via_cli["pods"] == direct["pods"]
    assert via_cli["podGroups"] == direct["podGroups"]
    assert via_cli.get("compositePodGroups") == direct.get("compositePodGroups")
    check_result(scenario, via_cli, "phalanx schedule -o json")


# --- the runner itself: malformed files must fail loudly -------------------------------------------------------

_GOOD = {
    "name": "one pod",
    "why": "runner self-test",
    "objects": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"pods": "1"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}},
    ],
    "expect": {"pods": {"p": {"phase": "Scheduled", "node": "n"}}},
}


def _variant(**changes: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(_GOOD))
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        pytest.param(_variant(why=None), "missing required field(s) ['why']", id="missing-why"),
        pytest.param(_variant(expected={}), "unknown field(s) ['expected']", id="typo-top-level"),
        pytest.param(_variant(expect={}), "expect: states nothing", id="empty-expect"),
        pytest.param(_variant(expect={"pods": {"p": {"phse": "Scheduled"}}}), "unknown field(s) ['phse']", id="typo"),
        pytest.param(_variant(expect={"pods": {"p": {"phase": "Bound"}}}), "unknown phase 'Bound'", id="bad-phase"),
        pytest.param(_variant(objects=[{"kind": "Pod"}]), "needs apiVersion and kind", id="object-no-api"),
        pytest.param(_variant(expect={"exactlyOneOf": [["p"]]}), "at least two", id="one-of-single"),
        pytest.param("- a\n---\n- b\n", "exactly one YAML document", id="two-documents"),
        pytest.param("name: [unclosed\n", "not valid YAML", id="bad-yaml"),
        pytest.param(_variant(rules=["no-such-rule"]), "unknown rule(s) ['no-such-rule']", id="unknown-rule"),
        pytest.param(_variant(rules=["largest-first-retry"]), "rules and expectCompat go together", id="no-compat"),
        pytest.param(
            _variant(rules=["largest-first-retry"], expectCompat={"pods": {"p": {"phse": 1}}}),
            "unknown field(s) ['phse']",
            id="typo-in-compat",
        ),
    ],
)
def test_malformed_scenario_fails_loudly(tmp_path: Path, doc: Any, error: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path)
    assert error in str(exc.value)


def test_expectation_on_unknown_pod_fails_loudly(tmp_path: Path) -> None:
    path = tmp_path / "ghost.yaml"
    path.write_text(yaml.safe_dump(_variant(expect={"pods": {"ghost": {"phase": "Scheduled"}}})), encoding="utf-8")
    scenario = load_scenario(path)
    with pytest.raises(ScenarioError, match="not a pod of the snapshot"):
        check_result(scenario, run_engine(scenario, tmp_path))


def test_wrong_expectation_fails(tmp_path: Path) -> None:
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(_variant(expect={"pods": {"p": {"node": "elsewhere"}}})), encoding="utf-8")
    scenario = load_scenario(path)
    with pytest.raises(pytest.fail.Exception, match="node is 'n', expected 'elsewhere'"):
        check_result(scenario, run_engine(scenario, tmp_path))


def test_readme_indexes_every_scenario() -> None:
    """tests/scenarios/README.md lists each scenario file once, so a reader can browse them without Python."""
    readme = (SCENARIO_DIR / "README.md").read_text(encoding="utf-8")
    listed = sorted(line.split("](", 1)[1].split(")", 1)[0] for line in readme.splitlines() if line.startswith("| ["))
    assert listed == sorted(p.name for p in SCENARIO_DIR.glob("*.yaml"))
