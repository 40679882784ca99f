"""A measured fuzzing campaign: N mutated inputs spread over every target, each run as its own `phalanx`
process under a timeout, and a table of the outcomes (docs/validation.md, "Fuzzing").

    python tests/fuzz/campaign.py                      # 600 inputs, seed 1, 2 at a time
    python tests/fuzz/campaign.py --inputs 2000 --seed 7 --pending   # also the parsers other changes own

Prints the table and every input not handled cleanly; exits 0 (it measures, it does not judge).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from targets import CLEAN, PENDING, Case, all_targets, cases, classify, run

OUTCOMES = (
    "accepted",
    "rejected",
    "accepted silently",
    "unnamed",
    "python text",
    "half-written",
    "internal error",
    "traceback",
    "crash",
    "hang",
)


def sample(inputs: int, seed: int, pending: bool) -> list[Case]:
    """``inputs`` cases, as evenly over the targets as their sizes allow, drawn with ``seed``."""
    rng = random.Random(seed)
    per_target = [cases(t) for t in all_targets(pending)]
    wanted = dict.fromkeys(range(len(per_target)), 0)
    left = inputs
    # Smallest first, so what a small target cannot use (the schedule flags have 27 cases) goes to the others.
    for done, i in enumerate(sorted(wanted, key=lambda i: len(per_target[i]))):
        wanted[i] = min(len(per_target[i]), left // (len(per_target) - done))
        left -= wanted[i]
    return [case for i, every in enumerate(per_target) for case in rng.sample(every, wanted[i])]


def _one(case: Case, timeout: float) -> tuple[Case, str, str]:
    with tempfile.TemporaryDirectory(prefix="phalanx-fuzz-") as tmp:
        result = run(case, Path(tmp), timeout, in_process=False)
        outcome = classify(case, result, Path(tmp))
        detail = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
    return case, outcome, detail[:200]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a run counts as a hang")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pending", action="store_true", help="also the targets listed in targets.PENDING")
    args = parser.parse_args()
    chosen = sample(args.inputs, args.seed, args.pending)
    with ThreadPoolExecutor(args.workers) as pool:
        done = list(pool.map(lambda c: _one(c, args.timeout), chosen))
    _report(done, args)


def _report(done: list[tuple[Case, str, str]], args: argparse.Namespace) -> None:
    by_target: dict[str, Counter[str]] = {}
    for case, outcome, _ in done:
        by_target.setdefault(case.target, Counter())[outcome] += 1
    columns = [o for o in OUTCOMES if any(c[o] for c in by_target.values())]
    print(f"phalanx fuzzing campaign: {len(done)} inputs, seed {args.seed}, timeout {args.timeout:g} s")
    print(f"{'target':36} {'tried':>5} " + " ".join(f"{o:>17}" for o in columns) + f" {'clean %':>8}")
    total: Counter[str] = Counter()
    for name, counts in by_target.items():
        total += counts
        tried = sum(counts.values())
        clean = sum(counts[o] for o in CLEAN) / tried * 100
        owner = " *" if name in PENDING else ""
        row = " ".join(f"{counts[o]:>17}" for o in columns)
        print(f"{name + owner:36} {tried:>5} {row} {clean:>7.1f}%")
    tried = sum(total.values())
    row = " ".join(f"{total[o]:>17}" for o in columns)
    print(f"{'all':36} {tried:>5} {row} {sum(total[o] for o in CLEAN) / tried * 100:>7.1f}%")
    if any(name in PENDING for name in by_target):
        print("* owned by another change:", "; ".join(f"{k}: {v}" for k, v in PENDING.items()))
    for case, outcome, detail in done:
        if outcome not in CLEAN:
            print(f"- [{outcome}] {case.target}: {case.label}\n    {detail}")


if __name__ == "__main__":
    main()
