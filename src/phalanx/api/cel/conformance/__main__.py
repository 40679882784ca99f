"""Pass rates of phalanx's CEL on the conformance cases, per source file.

python -m phalanx.api.cel.conformance [--failures] [DATA_DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from phalanx.api.cel.conformance.runner import DATA, load, run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phalanx.api.cel.conformance")
    parser.add_argument("data", nargs="?", type=Path, default=DATA)
    parser.add_argument("--failures", action="store_true", help="print every failing case")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(20000)
    passed: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    for result in run_suite(args.data):
        total[result.file] += 1
        passed[result.file] += result.passed
        if args.failures and not result.passed:
            print(
                f"FAIL {result.file} {result.case_id}\n  expect  {json.dumps(result.expect)[:300]}\n"
                f"  phalanx {json.dumps(result.outcome)[:300]}"
            )
    skipped = {name: len(doc["skipped"]) for name, doc in load(args.data)}
    print(f"{'source file':28} {'passed':>7} {'cases':>6} {'rate':>7} {'skipped':>8}")
    for name in sorted(set(total) | set(skipped)):
        rate = f"{100 * passed[name] / total[name]:6.1f}%" if total[name] else "      -"
        print(f"{name:28} {passed[name]:7} {total[name]:6} {rate} {skipped.get(name, 0):8}")
    all_passed, all_cases = sum(passed.values()), sum(total.values())
    print(
        f"{'TOTAL':28} {all_passed:7} {all_cases:6} {100 * all_passed / max(all_cases, 1):6.1f}% "
        f"{sum(skipped.values()):8}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
