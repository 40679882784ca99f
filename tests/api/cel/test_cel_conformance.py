"""Every in-scope conformance case (tests/data/cel) behaves as in Kubernetes v1.36, apart from the listed ones.

The known differences are documented in docs/cel.md ("Remaining differences"); a case that starts passing must be
removed from KNOWN here, so the list never claims more than is true.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from phalanx.api.cel.conformance.runner import DATA, Result, load, run_suite

# (file, case id): why phalanx differs. Kept in sync with docs/cel.md.
KNOWN = {
    (
        "cel-spec/fields",
        "fields/map_fields/map_bad_key_type_or_true",
    ): "cel-go rejects a bytes key while planning the program; phalanx evaluates the absorbed error",
    (
        "cel-spec/fields",
        "fields/map_fields/map_bad_key_type_and_false",
    ): "cel-go rejects a bytes key while planning the program; phalanx evaluates the absorbed error",
    (
        "cel-spec/string_ext",
        "string_ext/format/map support (all key types)",
    ): "a map literal with keys 1 and true (allowed only inside format()): Python dicts merge the two keys",
}


@pytest.fixture(scope="module")
def results() -> Iterator[dict[tuple[str, str], Result]]:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    yield {(r.file, r.case_id): r for r in run_suite(DATA)}
    sys.setrecursionlimit(limit)


def test_every_case_outside_the_known_differences_passes(results: dict[tuple[str, str], Result]) -> None:
    failing = sorted(key for key, r in results.items() if not r.passed and key not in KNOWN)
    assert not failing, "\n".join(f"{f} {i}: {results[(f, i)].outcome}" for f, i in failing[:20])


def test_known_differences_still_differ(results: dict[tuple[str, str], Result]) -> None:
    assert {key for key in KNOWN if results[key].passed} == set()


def test_all_dra_environment_cases_pass(results: dict[tuple[str, str], Result]) -> None:
    dra = [r for r in results.values() if r.file == "kubernetes/dra"]
    assert len(dra) == 106 and all(r.passed for r in dra)


def test_the_suite_covers_every_source_file_and_records_skips() -> None:
    files = dict(load(DATA))
    assert len([name for name in files if name.startswith("cel-spec/")]) == 30
    assert {
        "kubernetes/quantity",
        "kubernetes/semver",
        "kubernetes/ip",
        "kubernetes/cidr",
        "kubernetes/format",
        "kubernetes/cost",
        "kubernetes/dra",
    } <= set(files)
    for document in files.values():
        assert all(skip["reason"] for skip in document["skipped"])
