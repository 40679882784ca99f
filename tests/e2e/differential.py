"""Differential conformance: the same snapshot scheduled by the real kube-scheduler (v1.36.3, or v1.37.2 against
``--compat v1.37``) and by ``phalanx schedule``, compared per category (docs/conformance.md).

For each snapshot the harness resets the control plane (and checks nothing is left), loads the snapshot
(snapshot_load.py), runs phalanx on the snapshot as read back (phalanx_side.py), lets kube-scheduler schedule it
until nothing changes (kube_side.py) and compares:

  scheduled   the set of pending pods that end up bound, exactly
  node        the node of each pod both bound, where phalanx's own scores say only one node is best
  victims     the set of preemption victims, exactly
  podgroup    each PodGroup's PodGroupScheduled condition: (status, reason), or no condition

Two kinds of disagreement are marked, not hidden (docs/conformance.md says why each is kube-scheduler's randomness):
  tie-dependent   phalanx's outcome (scheduled set, victims) changes with the tie-break seed and kube-scheduler's
                  is one of phalanx's, or kube-scheduler put a pod on another of the equally best nodes phalanx
                  reported for it (candidateNodes): both broke a tie, each its own way, and what follows differs;
  member-order    the outcomes are the same once identical members of one PodGroup (same spec and labels) are
                  taken as interchangeable: kube-scheduler orders a group's members at random;
  preemption-race kube-scheduler's workload-aware preemption lost the room it made: it preempted for the same
                  PodGroup more than once, or the group ended unscheduled after preempting (other pods took the
                  room while the preemption ran; it nominates nothing for a group);
  condition-race  only PodGroup conditions differ, and kube-scheduler left each of those groups False after its
                  log says a cycle scheduled it, where phalanx says True/Scheduled: a left-over member's retry
                  patched False over True before the informer had the True (updatePodGroupCondition reads it);
  async-preemption  none of the above, and phalanx with victims kept on their nodes until the pods already queued
                  have been tried (``--async-preemption``: kube-scheduler deletes victims asynchronously, so the
                  cycles right after a preemption still see them) gives kube-scheduler's outcome in every category
                  that disagreed;
  kube-varies     none of the above, and kube-scheduler, run again on the same snapshot (``recheck`` runs), agreed
                  with phalanx in every category the first run disagreed in: kube-scheduler itself gives more
                  than one outcome there, and phalanx's is one of them (the evidence is the agreeing run).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import snapgen
import yaml
from kube_api import Api
from kube_side import KubeOutcome, kube_config, run_kube
from phalanx_side import PhalanxOutcome, run_phalanx
from snapshot_load import NotLoadable, load, release_of, reset

from phalanx.testenv import ControlPlane

__all__ = [
    "CATEGORIES",
    "Comparison",
    "Harness",
    "Snapshot",
    "control_plane",
    "random_snapshots",
    "scenario_snapshots",
    "table",
]

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "scenarios"
CATEGORIES = ("scheduled", "node", "victims", "podgroup")
APISERVER_ARGS = (
    # Nodes are registered Ready: without a node lifecycle controller nothing would lift the not-ready taint that
    # this admission plugin puts on every new node.
    "--disable-admission-plugins=TaintNodesByCondition",
    "--max-requests-inflight=1000",
)


@dataclass(frozen=True)
class Snapshot:
    name: str
    source: str  # "scenario" or "random"
    objects: list[dict[str, Any]]
    config: dict[str, Any] | None = None
    scheduler_name: str | None = None


def scenario_snapshots(names: Iterable[str] | None = None) -> list[Snapshot]:
    """tests/scenarios/*.yaml as snapshots (their expectations are not used: kube-scheduler is the reference)."""
    wanted = set(names) if names is not None else None
    out = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        if wanted is not None and path.stem not in wanted:
            continue
        raw = yaml.safe_load(path.read_text())
        out.append(Snapshot(path.stem, "scenario", raw["objects"], raw.get("config"), raw.get("schedulerName")))
    return out


def random_snapshots(seed: int, count: int, start: int = 0, release: str = "1.36") -> list[Snapshot]:
    """Snapshots ``start`` .. ``start + count - 1`` of the random corpus of ``seed`` for ``release`` (snapgen.py)."""
    return [Snapshot(name, "random", objects) for name, objects in snapgen.corpus(seed, count, start, release)]


@dataclass
class Comparison:
    snapshot: str
    source: str
    skipped: str = ""  # why the snapshot could not be loaded
    agree: dict[str, tuple[int, int]] = field(default_factory=dict)  # category -> (agreeing, compared) items
    diffs: dict[str, list[str]] = field(default_factory=dict)  # category -> one line per disagreement
    tie_dependent: bool = False
    member_order: bool = False
    preemption_race: bool = False
    condition_race: bool = False
    async_preemption: bool = False
    kube_varies: str = ""  # the evidence: "kube-scheduler agreed in run 3, after 2 that did not"
    settled: bool = True
    seconds: dict[str, float] = field(default_factory=dict)
    kube: KubeOutcome | None = None
    phalanx: PhalanxOutcome | None = None
    objects: list[dict[str, Any]] = field(default_factory=list)

    def agrees(self, category: str) -> bool:
        return not self.diffs.get(category)

    @property
    def marked(self) -> bool:
        """A mark explains the disagreement (kube-scheduler's ties, member order, races or variation)."""
        return bool(self.marks())

    def marks(self) -> list[str]:
        """The marks that apply, in the order the table counts them (the first one is the snapshot's)."""
        flags = (
            ("tie-dependent", self.tie_dependent),
            ("member-order", self.member_order),
            ("preemption-race", self.preemption_race),
            ("condition-race", self.condition_race),
            ("async-preemption", self.async_preemption),
            ("kube-varies", bool(self.kube_varies)),
        )
        return [name for name, on in flags if on]

    def disagreeing(self) -> list[str]:
        return [c for c in CATEGORIES if not self.agrees(c)]


def recheck(first: Comparison, again: Callable[[], Comparison], runs: int) -> Comparison:
    """For a disagreement no mark explains, run kube-scheduler up to ``runs`` more times on the same snapshot
    (``again``: reset, load and both schedulers once more); the first run that agrees with phalanx in every
    category ``first`` disagreed in marks ``first`` kube-varies, with that run as the evidence."""
    wrong = first.disagreeing()
    if first.skipped or not wrong or first.marked or runs <= 0:
        return first
    for n in range(runs):
        other = again()
        if not other.skipped and all(other.agrees(c) for c in wrong):
            first.kube_varies = f"kube-scheduler agreed in run {n + 2}, after {n + 1} that did not"
            break
    return first


def member_classes(objects: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Each pending PodGroup member (namespace/name) -> its class: members with the same group, spec and labels
    are interchangeable, and only their names tell them apart."""
    out: dict[str, str] = {}
    for o in objects:
        if o.get("kind") != "Pod" or o["spec"].get("nodeName") or not o["spec"].get("schedulingGroup"):
            continue
        meta = o["metadata"]
        ns = meta.get("namespace") or "default"
        spec = {k: v for k, v in o["spec"].items() if k not in ("hostname", "subdomain")}
        out[f"{ns}/{meta['name']}"] = json.dumps([ns, meta.get("labels") or {}, spec], sort_keys=True)
    return out


def _by_class(placed: dict[str, str], classes: dict[str, str]) -> Counter[tuple[str, str]]:
    return Counter((classes.get(k, k), node) for k, node in placed.items())


def compare(snap: Snapshot, kube: KubeOutcome, ph: PhalanxOutcome, classes: dict[str, str] | None = None) -> Comparison:
    c = Comparison(snap.name, snap.source, settled=kube.settled, kube=kube, phalanx=ph)
    k_set, p_set = set(kube.placed), set(ph.placed)
    c.agree["scheduled"] = (len(k_set & p_set) + 0, len(k_set | p_set))
    c.diffs["scheduled"] = [
        f"{k}: kube bound it to {kube.placed[k]}, phalanx did not ({ph.messages.get(k, '')})"
        for k in sorted(k_set - p_set)
    ]
    c.diffs["scheduled"] += [
        f"{k}: phalanx bound it to {ph.placed[k]}, kube did not ({kube.messages.get(k, '')})"
        for k in sorted(p_set - k_set)
    ]
    both = sorted(k for k in k_set & p_set if k in ph.unique)
    c.agree["node"] = (sum(kube.placed[k] == ph.placed[k] for k in both), len(both))
    c.diffs["node"] = [
        f"{k}: kube {kube.placed[k]}, phalanx {ph.placed[k]}" for k in both if kube.placed[k] != ph.placed[k]
    ]
    kv, pv = set(kube.evicted), set(ph.evicted)
    c.agree["victims"] = (len(kv & pv), len(kv | pv))
    c.diffs["victims"] = [f"{k}: evicted by kube only" for k in sorted(kv - pv)]
    c.diffs["victims"] += [f"{k}: evicted by phalanx only ({ph.evicted[k]})" for k in sorted(pv - kv)]
    groups = sorted(set(kube.conditions) | set(ph.conditions))
    same = [g for g in groups if kube.conditions.get(g) == ph.conditions.get(g)]
    c.agree["podgroup"] = (len(same), len(groups))
    c.diffs["podgroup"] = [
        f"{g}: kube {kube.conditions.get(g)}, phalanx {ph.conditions.get(g)}" for g in groups if g not in same
    ]
    regressed = [
        g
        for g in groups
        if g not in same
        and g in kube.scheduled_groups
        and (kube.conditions.get(g) or ("",))[0] == "False"
        and ph.conditions.get(g) == ("True", "Scheduled")
    ]
    others = c.diffs["scheduled"] or c.diffs["node"] or c.diffs["victims"]
    c.condition_race = bool(regressed) and len(regressed) == len(c.diffs["podgroup"]) and not others
    outcome = (frozenset(kube.placed), frozenset(kube.evicted))
    # kube-scheduler broke a tie phalanx reported (candidateNodes) the other way: what follows may differ.
    other_tie = any(
        kube.placed.get(k) in nodes and kube.placed.get(k) != ph.placed[k] for k, nodes in ph.candidates.items()
    )
    c.tie_dependent = (len(ph.variants) > 1 and outcome in ph.variants) or other_tie
    if c.diffs["scheduled"] or c.diffs["victims"]:
        lost = [g for g in kube.group_preemptions if (kube.conditions.get(g) or ("",))[0] != "True"]
        c.preemption_race = any(n > 1 for n in kube.group_preemptions.values()) or bool(lost)
    if ph.other_timing is not None and not (c.tie_dependent or c.preemption_race or c.condition_race):
        c.async_preemption = _async_explains(c, kube, ph.other_timing)
    if classes and (c.diffs["scheduled"] or c.diffs["node"]) and not c.diffs["victims"] and not c.diffs["podgroup"]:
        # Interchangeable members swapped: as many of each class scheduled, and where a node differs, the same
        # multiset of (class, node).
        same_set = Counter(classes.get(k, k) for k in kube.placed) == Counter(classes.get(k, k) for k in ph.placed)
        same_nodes = not c.diffs["node"] or _by_class(kube.placed, classes) == _by_class(ph.placed, classes)
        c.member_order = same_set and same_nodes
    return c


def _async_explains(c: Comparison, kube: KubeOutcome, lingering: PhalanxOutcome) -> bool:
    """phalanx with the other victim timing agrees with kube-scheduler in every category that disagreed."""
    wrong = c.disagreeing()
    if not wrong:
        return False
    node_diffs = [line.split(":", 1)[0] for line in c.diffs["node"]]
    groups = set(kube.conditions) | set(lingering.conditions)
    same = {
        "scheduled": set(lingering.placed) == set(kube.placed),
        "node": all(lingering.placed.get(k) == kube.placed.get(k) for k in node_diffs),
        "victims": set(lingering.evicted) == set(kube.evicted),
        "podgroup": all(lingering.conditions.get(g) == kube.conditions.get(g) for g in groups),
    }
    return all(same[cat] for cat in wrong)


def control_plane(workdir: Path | None = None, version: str = "1.36.3") -> ControlPlane:
    """A control plane (etcd, kube-apiserver, kube-controller-manager) of ``version`` as the harness needs it."""
    return ControlPlane(version, workdir=workdir, apiserver_args=APISERVER_ARGS)


class Harness:
    """One control plane, reused across snapshots: reset, load, phalanx, kube-scheduler, compare."""

    def __init__(self, cp: ControlPlane, async_victims: bool = False) -> None:
        self.cp = cp
        self.async_victims = async_victims  # phalanx's main runs keep victims until the queue drains
        self.api = Api(cp)
        self.namespaces: set[str] = {"default"}
        self.release = release_of(cp.kube.version)
        self.compat = "v" + cp.kube.minor

    def run(self, snap: Snapshot, recheck_runs: int = 0) -> Comparison:
        """One comparison; with ``recheck_runs``, an unmarked disagreement is run again (``recheck``)."""
        first = self._run(snap)
        return recheck(first, lambda: self._run(snap), recheck_runs)

    def _run(self, snap: Snapshot) -> Comparison:
        t0 = time.monotonic()
        reset(self.api, sorted(self.namespaces), self.release)
        t1 = time.monotonic()
        try:
            loaded = load(self.api, snap.objects, self.release)
        except NotLoadable as exc:
            self.namespaces |= _namespaces_of(snap.objects)
            return Comparison(snap.name, snap.source, skipped=str(exc))
        self.namespaces |= set(loaded.namespaces)
        t2 = time.monotonic()
        pods = [o for o in loaded.objects if o["kind"] == "Pod"]
        schedulers = {
            p["spec"].get("schedulerName", "default-scheduler") for p in pods if not p["spec"].get("nodeName")
        }
        ph = run_phalanx(
            loaded.objects,
            loaded.pending,
            snap.config,
            snap.scheduler_name,
            self.cp.gates,
            compat=self.compat,
            async_victims=self.async_victims,
        )
        t3 = time.monotonic()
        if ph.error:
            return Comparison(snap.name, snap.source, skipped=f"phalanx refused the read-back snapshot: {ph.error}")
        kube = run_kube(self.cp, self.api, loaded, kube_config(snap.config, snap.scheduler_name, schedulers))
        t4 = time.monotonic()
        c = compare(snap, kube, ph, member_classes(loaded.objects))
        c.objects = loaded.objects
        c.seconds = {"reset": t1 - t0, "load": t2 - t1, "phalanx": t3 - t2, "kube": t4 - t3}
        return c

    def close(self) -> None:
        self.api.close()


def _namespaces_of(objects: Iterable[dict[str, Any]]) -> set[str]:
    return {o.get("metadata", {}).get("namespace") or "default" for o in objects}


def table(results: Sequence[Comparison]) -> str:
    """The agreement table: per source and category, snapshots that agree (of those compared) and items; of the
    snapshots that disagree, how many are tie-dependent, how many only swap interchangeable members and how many
    follow a workload-aware preemption kube-scheduler lost (each counted once, in that order), how many differ
    only in conditions kube-scheduler regressed from a stale cache, how many phalanx answers kube-scheduler's way
    with lingering victims (async: no earlier mark), and how many kube-scheduler itself answered
    phalanx's way in another run (kube-varies: no other mark)."""
    head = f"{'source':10} {'category':10} {'snapshots agree':>16} {'items agree':>14}"
    marks = f"{'tie-dependent':>14} {'member-order':>13} {'preempt-race':>13} {'cond-race':>10} {'async':>6}"
    marks += f" {'kube-varies':>12}"
    lines = [f"{head} {marks}"]
    for source in ("scenario", "random"):
        ran = [r for r in results if r.source == source and not r.skipped]
        if not ran:
            continue
        for cat in CATEGORIES:
            ok = sum(r.agrees(cat) for r in ran)
            items = sum(r.agree[cat][0] for r in ran), sum(r.agree[cat][1] for r in ran)
            ties = sum(1 for r in ran if not r.agrees(cat) and r.tie_dependent)
            order = sum(1 for r in ran if not r.agrees(cat) and r.member_order and not r.tie_dependent)
            race = sum(
                1 for r in ran if not r.agrees(cat) and r.preemption_race and not r.tie_dependent and not r.member_order
            )
            cond = sum(1 for r in ran if not r.agrees(cat) and r.condition_race)
            lingering = sum(1 for r in ran if not r.agrees(cat) and r.marks()[:1] == ["async-preemption"])
            varies = sum(1 for r in ran if not r.agrees(cat) and r.kube_varies)
            row = f"{source:10} {cat:10} {f'{ok}/{len(ran)}':>16} {f'{items[0]}/{items[1]}':>14}"
            lines.append(f"{row} {ties:>14} {order:>13} {race:>13} {cond:>10} {lingering:>6} {varies:>12}")
        skipped = sum(1 for r in results if r.source == source and r.skipped)
        lines.append(f"{source:10} {'(skipped)':10} {skipped:>16}")
    return "\n".join(lines)
