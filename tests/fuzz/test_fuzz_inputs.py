"""Fuzzing every input path (docs/validation.md, "Fuzzing"): hypothesis draws mutated inputs of each target
(``targets.TARGETS``) and phalanx must handle every one cleanly: exit 0, or exit 2 with every problem naming the
file or flag, and no traceback, exit 1, hang, Python text or half-written output; an input the rules make invalid
must not exit 0.

The run in the suite is short and repeatable (the same examples every time). ``PHALANX_FUZZ_EXAMPLES=N`` draws
N random examples per target instead: the long run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from targets import CLEAN, TARGETS, Case, FlagTarget, Target, cases, classify, run

LONG = "PHALANX_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("PHALANX_FUZZ_EXAMPLES", "0")) or None
TIMEOUT = float(os.environ.get("PHALANX_FUZZ_TIMEOUT", "60"))


def _examples(target: Target | FlagTarget) -> int:
    # Most mutated inputs are refused within milliseconds; 60 take one to four seconds per target.
    return EXAMPLES or 60


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_every_mutated_input_is_handled_cleanly(
    target: Target | FlagTarget, tmp_path_factory: pytest.TempPathFactory
) -> None:
    every = cases(target)

    @settings(
        max_examples=_examples(target),
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(st.sampled_from(every))
    def check(case: Case) -> None:
        workdir = tmp_path_factory.mktemp("case")
        result = run(case, workdir, TIMEOUT)
        outcome = classify(case, result, workdir)
        assert outcome in CLEAN, f"{case.target}: {case.label}: {outcome}\n{result.stderr[-3000:]}"

    check()


def test_the_targets_cover_every_input_path() -> None:
    """The commands that read user input each have a target (a new input path needs one)."""
    names = {t.name for t in TARGETS}
    assert {"validate -f", "schedule -f", "simulate --cluster (spec)", "simulate --cluster (Kubernetes)"} <= names
    assert {"simulate --workload (CSV)", "simulate --workload (YAML)", "simulate flags", "schedule flags"} <= names


def test_mutations_that_break_the_rules_are_marked_for_rejection() -> None:
    """The oracle is what makes 'accepted silently' measurable: spot-check that it marks the issue's inputs."""
    by_label = {(c.target, c.label): c for t in TARGETS for c in cases(t)}
    assert by_label[("simulate --cluster (spec)", "failures.repairHours = nan")].must_reject
    assert by_label[("simulate --cluster (spec)", "pools[1].count = -1")].must_reject
    assert by_label[("simulate --cluster (spec)", "pools[1].count = 1.5")].must_reject
    assert by_label[("simulate --workload (CSV)", "row 1 submit = 'nan'")].must_reject
    assert by_label[("simulate flags", "--node-repair-hours nan")].must_reject
    assert not by_label[("validate -f", "document 1: status.allocatable.cpu = '1e18'")].must_reject
    assert Path(by_label[("validate -f", "UTF-8 byte-order mark")].argv[2]).name == "{input}"
