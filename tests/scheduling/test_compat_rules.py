"""Every beyond-v1.36 rule is off in ``--compat v1.36`` and pinned by a test that fails if it leaks into that mode.

Most rules are pinned by a scenario of ``tests/scenarios/`` that names the rule alone (``rules: [name]``): the
scenario test runs it with phalanx's rules, with ``--compat v1.36`` and with that one rule off. The rules whose
effect a final snapshot outcome cannot show (how many preemption rounds, which nodes a sample could score, a
plugin in the profile, how ``serve`` removes victims) are pinned here. docs/compat.md lists them all.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path

import yaml

from phalanx.kube.serve import ServeOptions
from phalanx.scheduling.config import SchedulerConfig, parse_config, with_mode
from phalanx.scheduling.outcome import Eviction, OutcomeLog
from phalanx.scheduling.rules import COMPAT_V1_36, COMPAT_V1_37, RULES, Rules, kebab, rules_for
from phalanx.scheduling.scheduler import Scheduler

from builders import make_group, make_node, make_pod

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "scenarios"
# The rules this file pins (each test below names its rule).
PINNED_HERE = {"reprieve-keeps-placed-members", "all-nodes-scored", "gpu-share-scoring", "victims-by-eviction"}


def _single_rule_scenarios() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(SCENARIOS.glob("*.yaml")):
        rules = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("rules") or []
        if len(rules) == 1:
            out.setdefault(rules[0], []).append(path.name)
    return out


def test_every_rule_is_pinned_by_a_test_that_runs_it_off() -> None:
    """Each rule has a scenario naming it alone (run with it off and in compat mode) or a test in this file."""
    pinned = set(_single_rule_scenarios()) | PINNED_HERE
    assert sorted(set(Rules.all_names()) - pinned) == []
    assert sorted(PINNED_HERE - set(Rules.all_names())) == []


def test_compat_turns_every_rule_off_and_phalanx_turns_every_rule_on() -> None:
    assert COMPAT_V1_36.names() == []
    assert RULES.names() == Rules.all_names()
    assert rules_for("v1.36") is COMPAT_V1_36 and rules_for("1.36") is COMPAT_V1_36 and rules_for(None) is RULES
    assert all(not getattr(with_mode(None, "v1.36").rules, f.name) for f in fields(Rules))


def test_compat_v137_is_upstream_v137_with_every_rule_off_but_what_v137_does() -> None:
    assert rules_for("v1.37") is COMPAT_V1_37 and rules_for("1.37") is COMPAT_V1_37
    assert COMPAT_V1_37.names() == ["disruption-mode-in-pod-preemption", "leftover-members-preempt-at-once"]
    assert with_mode(None, "v1.37").compat == "v1.37"


def test_docs_name_every_rule_and_no_other() -> None:
    """docs/compat.md has one table row per rule (its name in backquotes first), and the engine docs name only
    rules that exist."""
    text = (ROOT / "docs" / "compat.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z-]+)` \|", text, flags=re.M)
    assert sorted(rows) == sorted(Rules.all_names())
    known = set(Rules.all_names()) | {f.name for f in fields(Rules)}
    for doc in ("scheduling.md", "topology.md", "preemption.md", "dra.md"):
        body = (ROOT / "docs" / doc).read_text(encoding="utf-8")
        for name in re.findall(r"`([a-z]+(?:[-_][a-z]+)+)` rule", body):
            assert name in known, f"docs/{doc} names an unknown rule {name}"


class _Order(OutcomeLog):
    """The outcome log, plus every eviction and bind in order."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[tuple[str, str]] = []

    def bound(self, key: str, node: str) -> None:
        super().bound(key, node)
        self.order.append(("bound", key))

    def evicted(self, eviction: Eviction) -> None:
        super().evicted(eviction)
        self.order.append(("evicted", f"{eviction.namespace}/{eviction.name}"))


def _basic_group_over_two_full_nodes(rules: Rules, compat: str | None = None) -> _Order:
    """web: a basic PodGroup of two 4-cpu members (priority 1000); node-a is full with batch-a (priority 1),
    node-b with batch-b (priority 2)."""
    log = _Order()
    s = Scheduler(with_mode(SchedulerConfig(), compat), recorder=log, rules=rules)
    group = make_group("web")
    assert group.spec is not None
    group.spec.priority = 1000
    s.load(
        [make_node(n).allocatable(cpu="4", memory="16Gi").obj() for n in ("node-a", "node-b")],
        [
            make_pod("batch-a").requests(cpu="4").node("node-a").priority(1).phase("Running").obj(),
            make_pod("batch-b").requests(cpu="4").node("node-b").priority(2).phase("Running").obj(),
            make_pod("web-0").requests(cpu="4").group("web").priority(1000).created("2026-01-01T10:00:00Z").obj(),
            make_pod("web-1").requests(cpu="4").group("web").priority(1000).created("2026-01-01T10:01:00Z").obj(),
        ],
        [group],
    )
    s.run()
    return log


def test_reprieve_keeps_placed_members_frees_room_for_every_member_at_once() -> None:
    """reprieve-keeps-placed-members: phalanx reprieves batch-b only if the group still places both members, so
    one round of workload-aware preemption evicts both batches and both members bind. v1.36 (and compat) keeps
    batch-b because the basic group still "fits" with one member: web-0 binds, and a second round is needed for
    web-1. The end state is the same; the first round's victims are not."""
    phalanx = _basic_group_over_two_full_nodes(RULES)
    assert sorted(phalanx.order[:2]) == [("evicted", "default/batch-a"), ("evicted", "default/batch-b")]
    assert sorted(phalanx.order[2:]) == [("bound", "default/web-0"), ("bound", "default/web-1")]
    assert "reprieve-keeps-placed-members" in phalanx.rules["default/web-0"]
    for rules, compat in ((COMPAT_V1_36, "v1.36"), (replace(RULES, reprieve_keeps_placed_members=False), None)):
        v136 = _basic_group_over_two_full_nodes(rules, compat)
        assert v136.order == [
            ("evicted", "default/batch-a"),
            ("bound", "default/web-0"),
            ("evicted", "default/batch-b"),
            ("bound", "default/web-1"),
        ]
        assert all("reprieve-keeps-placed-members" not in r for r in v136.rules.values())


def _one_pod_on_150_nodes(config: SchedulerConfig) -> OutcomeLog:
    log = OutcomeLog()
    s = Scheduler(config, recorder=log)
    # node-000 has 10 cpu, node-149 has 159: LeastAllocated prefers the larger nodes.
    nodes = [make_node(f"node-{i:03d}").allocatable(cpu=str(10 + i), memory="64Gi").obj() for i in range(150)]
    s.load(nodes, [make_pod("p").requests(cpu="1").obj()], [])
    s.run()
    return log


def test_all_nodes_scored_is_off_in_compat_so_a_sample_of_nodes_is_reported() -> None:
    """all-nodes-scored: phalanx scores every feasible node and names one. v1.36 scores a sample (adaptive
    percentageOfNodesToScore: 100 of 150 nodes here, from a rotating offset), so any node that is best in some
    sample may be chosen: compat mode reports them as candidateNodes (with the seeded tie-break on too, so the
    report is the sample's doing, not a tie's)."""
    phalanx = _one_pod_on_150_nodes(SchedulerConfig())
    best = phalanx.outcomes["default/p"].node
    assert best is not None and best >= "node-130"  # among the largest nodes (integer scores tie at the top)
    assert "default/p" not in phalanx.choices
    sampled = replace(with_mode(None, None), rules=replace(RULES, all_nodes_scored=False))
    for config in (with_mode(None, "v1.36"), sampled):
        choices = _one_pod_on_150_nodes(config).choices["default/p"]
        assert best in choices and "node-000" not in choices
        assert 1 < len(choices) < 150
    full = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100,
        }
    )
    full = replace(with_mode(full, None), rules=replace(RULES, all_nodes_scored=False))
    assert "default/p" not in _one_pod_on_150_nodes(full).choices  # 100 %: every node scored, one best node


def _score_plugins(config: SchedulerConfig) -> list[str]:
    s = Scheduler(config)
    return [plugin.name for plugin, _ in s.default_profile.scores]


def test_gpu_share_scoring_is_not_in_the_compat_profile_unless_configured() -> None:
    """gpu-share-scoring: phalanx's GpuShare score plugin is in its default profile, not in v1.36's; a
    configuration that enables it explicitly keeps it in compat mode."""
    assert "GpuShare" in _score_plugins(SchedulerConfig())
    assert "GpuShare" not in _score_plugins(with_mode(None, "v1.36"))
    assert "GpuShare" not in _score_plugins(replace(SchedulerConfig(), rules=replace(RULES, gpu_share_scoring=False)))
    enabled = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"schedulerName": "default-scheduler", "plugins": {"score": {"enabled": [{"name": "GpuShare"}]}}}
            ],
        }
    )
    assert "GpuShare" in _score_plugins(with_mode(enabled, "v1.36"))


def test_victims_by_eviction_is_off_in_compat_so_serve_deletes_victims() -> None:
    """victims-by-eviction: ``serve`` removes victims through the Eviction API; compat mode deletes them as
    kube-scheduler does, unless --victim-removal says otherwise (tests/kube/test_serve.py checks both requests)."""
    assert ServeOptions(config=with_mode(None, None)).victim_removal == "eviction"
    assert ServeOptions(config=None).victim_removal == "eviction"
    assert ServeOptions(config=with_mode(None, "v1.36")).victim_removal == "deletion"
    assert ServeOptions(config=with_mode(None, "v1.36"), victim_removal="eviction").victim_removal == "eviction"


def test_kebab_names_are_the_field_names() -> None:
    assert kebab("largest_first_retry") == "largest-first-retry"
    assert [kebab(f.name) for f in fields(Rules)] == Rules.all_names()
