"""Differential conformance against the real kube-scheduler v1.36.3, or v1.37.2 with ``--version 1.37.2`` (issues 13
and 15; docs/conformance.md).

    python benchmarks/conformance.py                          # tests/scenarios/ and 500 random snapshots, seed 1
    python benchmarks/conformance.py --seed 7 --count 100     # another corpus
    python benchmarks/conformance.py --no-scenarios --start 40 --count 5 --save /tmp/dc   # a stretch, kept
    python benchmarks/conformance.py --only random-1-0007 --repeat 5   # one snapshot, kube-scheduler five times
    python benchmarks/conformance.py --version 1.37.2         # kube-scheduler v1.37.2 against --compat v1.37

One control plane (etcd, kube-apiserver, kube-controller-manager v1.36.3 from phalanx.testenv) for the whole
corpus. For each snapshot: reset the API server (checked empty), load the snapshot, run ``phalanx schedule --compat
v1.36`` with the control plane's feature gates on the snapshot as read back, start kube-scheduler with the same gates
and ``percentageOfNodesToScore: 100``, wait until nothing changes, read back what it did, compare
(tests/e2e/differential.py). Prints one line per disagreement, the agreement table per source and category and the
time per snapshot.

``--recheck N`` (default 2) runs kube-scheduler up to N more times on a snapshot whose disagreement carries no mark;
if one of those runs agrees with phalanx wherever the first did not, the snapshot is marked kube-varies (kube-scheduler
itself answers both ways there; docs/conformance.md). ``--recheck 0`` turns that off.
``--repeat N`` runs kube-scheduler N times on each snapshot that disagrees (on every snapshot, with ``--only``) and
prints how many distinct outcomes it gave (more than one: kube-scheduler itself is not deterministic there).
``--save DIR`` writes each disagreeing snapshot as read back (``NAME.json``, a ``phalanx schedule -f`` input)
and kube-scheduler's log.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))

from differential import (
    CATEGORIES,
    Comparison,
    Harness,
    Snapshot,
    control_plane,
    random_snapshots,
    scenario_snapshots,
    table,
)
from phalanx_side import COMPAT

from phalanx.testenv import AssetsError, find_assets


def _print_diffs(r: Comparison) -> None:
    if r.skipped:
        print(f"{r.snapshot}: skipped: {r.skipped}", flush=True)
        return
    lines = [f"  {cat:9} {d}" for cat in CATEGORIES for d in r.diffs.get(cat, [])]
    if lines or not r.settled:
        marks = ([] if r.settled else ["not settled"]) + [
            f"kube-varies: {r.kube_varies}" if m == "kube-varies" else m for m in r.marks()
        ]
        print(f"{r.snapshot}:{' (' + ', '.join(marks) + ')' if marks else ''}", flush=True)
        print("\n".join(lines), flush=True)


def _outcome(r: Comparison) -> str:
    assert r.kube is not None
    placed = ",".join(f"{k}@{v}" for k, v in sorted(r.kube.placed.items()))
    return f"placed[{placed}] evicted[{','.join(sorted(r.kube.evicted))}] groups{sorted(r.kube.conditions.items())}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1, help="the random corpus's seed")
    parser.add_argument("--count", type=int, default=500, help="random snapshots")
    parser.add_argument("--start", type=int, default=0, help="index of the first random snapshot")
    parser.add_argument("--no-scenarios", action="store_true", help="leave tests/scenarios/ out")
    parser.add_argument("--only", action="append", default=[], help="only snapshots whose name starts so")
    parser.add_argument(
        "--repeat", type=int, default=0, help="run kube-scheduler N times on disagreements (with --only: on all)"
    )
    parser.add_argument(
        "--recheck", type=int, default=2, help="re-run kube-scheduler up to N times on an unmarked disagreement"
    )
    parser.add_argument(
        "--async-preemption",
        action="store_true",
        help="phalanx keeps victims until its queue drains (schedule --async-preemption); the fifth run removes them",
    )
    parser.add_argument("--save", type=Path, help="write each disagreeing snapshot (read back) and kube's log here")
    parser.add_argument("--version", default="1.36.3", choices=("1.36.3", "1.37.2"), help="kube-scheduler's release")
    args = parser.parse_args()
    try:
        find_assets(args.version)
    except AssetsError as exc:
        print(f"conformance: no Kubernetes v{args.version} control plane: {exc}", file=sys.stderr)
        return 2
    snaps: list[Snapshot] = [] if args.no_scenarios else scenario_snapshots()
    snaps += random_snapshots(args.seed, args.count, args.start, ".".join(args.version.split(".")[:2]))
    if args.only:
        snaps = [s for s in snaps if any(s.name.startswith(o) for o in args.only)]
    compat = "v" + ".".join(args.version.split(".")[:2])
    flags = f"--compat {compat} --feature-gates ..." if COMPAT else "(no --compat flag yet)"
    print(f"phalanx side: phalanx schedule {flags}")
    print(f"{len(snaps)} snapshots (random corpus seed {args.seed}, {args.start}..{args.start + args.count - 1})")
    # Its own folder (not phalanx-k8s-*, which other runs' clean-ups sweep), removed at the end.
    workdir = Path(tempfile.mkdtemp(prefix="phalanx-conformance-"))
    cp = control_plane(workdir, args.version)
    started = time.monotonic()
    cp.start()
    print(f"control plane up in {time.monotonic() - started:.1f} s", flush=True)
    harness = Harness(cp, args.async_preemption)
    results: list[Comparison] = []
    run_started = time.monotonic()
    try:
        for snap in snaps:
            r = harness.run(snap, args.recheck)
            results.append(r)
            _print_diffs(r)
            disagrees = not r.skipped and any(not r.agrees(c) for c in CATEGORIES)
            if disagrees and args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                doc = {"apiVersion": "v1", "kind": "List", "items": r.objects}
                (args.save / f"{snap.name}.json").write_text(json.dumps(doc, indent=1))
                (args.save / f"{snap.name}.kube.log").write_text(r.kube.log if r.kube else "")
                marks = {
                    "tieDependent": r.tie_dependent,
                    "memberOrder": r.member_order,
                    "race": r.preemption_race,
                    "conditionRace": r.condition_race,
                    "asyncPreemption": r.async_preemption,
                    "kubeVaries": r.kube_varies,
                }
                outcomes = {"kube": _outcome(r), "diffs": r.diffs, **marks}
                (args.save / f"{snap.name}.outcome.json").write_text(json.dumps(outcomes, indent=1))
            if args.repeat and (disagrees or args.only):
                seen = Counter([_outcome(r)] + [_outcome(harness.run(snap)) for _ in range(args.repeat - 1)])
                print(f"  kube-scheduler, {args.repeat} runs: {len(seen)} distinct outcome(s)", flush=True)
                for outcome, n in seen.most_common():
                    print(f"    {n}x {outcome}", flush=True)
    finally:
        harness.close()
        cp.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - run_started
    ran = [r for r in results if not r.skipped]
    print()
    print(table(results))
    print()
    if ran:
        per = {k: sum(r.seconds.get(k, 0.0) for r in ran) / len(ran) for k in ("reset", "load", "phalanx", "kube")}
        unsettled = sum(not r.settled for r in ran)
        parts = ", ".join(f"{k} {v:.2f}" for k, v in per.items())
        each = elapsed / len(results)
        print(f"{len(results)} snapshots in {elapsed:.0f} s ({each:.2f} s each: {parts}); {unsettled} did not settle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
