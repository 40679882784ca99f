"""The CompositePodGroup tree cycle (KEP-6012, v1.37): one cycle for a whole tree of groups, run when a member pod
of any of its PodGroups is popped. The tree binds only if its root is satisfied; otherwise nothing anywhere in it
binds and every assumption is forgotten.

A PodGroup is satisfied by minCount pods (bound ones count; basic: one), a CompositePodGroup by minGroupCount
satisfied children (basic: one). As v1.37's PlacementFeasible, each level tracks S (satisfied children), R (children
not tried yet) and U (children that failed but preemption could help): it goes on while S + R >= M, and a failed
level is UnschedulableAndUnresolvable when S + R + U < M (nothing, not even preemption, can satisfy it).

Algorithm (``schedule_tree``):
  1. Resolve the tree (``trees.py``); an invalid tree sets ``Invalid`` on every group and rejects every pod; take
     every queued member of every leaf; reject mixed schedulerNames.
  2. Place the root (``_solve``) within all nodes; topology is resolved top-down: a group with a topology
     constraint tries each domain of its level inside its parent's chosen domain, and its children are confined
     to the domain it takes.
       - ``--compat v1.37`` (``Rules.composite_min_first_backtracking`` off): greedy as upstream. Each leaf places
         every member; children run in order, each keeps what it took ("resource stealing"); every domain of a
         level is evaluated and the best by placement score is taken; no backtracking.
       - phalanx: min-first with bounded backtracking. Each leaf places only what its minimum needs and a
         CompositePodGroup stops once minGroupCount children are satisfied; when the children's first choices do
         not satisfy it, other domains of the children (and skipping a child) are tried, depth first, within
         ``_MAX_TRIES`` attempts per cycle. Once the root is satisfied, a second pass places the rest (members
         beyond minCount, children beyond minGroupCount) inside the domains already chosen.
  3. Submit: bind every placed member of every satisfied leaf under satisfied ancestors, or roll everything back;
     write PodGroupScheduled and CompositePodGroupScheduled for every group of the tree.

  4. Preemption at the root (``_preempt``), when the root failed but preemption could help (Unschedulable, not
     UnschedulableAndUnresolvable) and WorkloadAwarePreemption is on: workload-aware preemption's victim search
     with the whole tree algorithm as its simulation; the victims go only if the tree then fits, and every
     member waits nominated to its node.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from phalanx.arrays import BoolArray
from phalanx.cluster.pods import PodInfo
from phalanx.scheduling import outcome as o
from phalanx.scheduling import placement as tas
from phalanx.scheduling.context import CycleContext, Preemptor
from phalanx.scheduling.cycle.members import (
    Failed,
    GroupCycle,
    Placed,
    bound_members,
    counted_by_slots,
    default_algorithm,
    forget,
    passes_filters,
)
from phalanx.scheduling.cycle.placement import bound_member_rows
from phalanx.scheduling.cycle.pod import rejection_of
from phalanx.scheduling.cycle.validation import Mismatch, tree_mismatch
from phalanx.scheduling.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
from phalanx.scheduling.plugins.gang_scheduling import NAME as GANG
from phalanx.scheduling.plugins.topology_placement_generator import NAME as TOPOLOGY
from phalanx.scheduling.preemption.workload import (
    group_preemption_policy_never,
    reprieve_on_fixed_nodes,
    select_group_victims,
    victim_units,
)
from phalanx.scheduling.profile import Profile
from phalanx.scheduling.recorder import Rejection
from phalanx.scheduling.trees import INVALID, KIND_COMPOSITE, TreeNode, TreeProblem

__all__ = ["reject_problem", "schedule_tree"]

SUCCESS = "Success"
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
RULE = "composite_min_first_backtracking"
_WAITS_FOR_VICTIMS = frozenset({DEFAULT_PREEMPTION})
_MAX_TRIES = 64  # phalanx's backtracking: child attempts per tree cycle beyond the first choices


@dataclass
class _Run:
    """A subtree placed in one domain. Its placements stay assumed while ``ok``; a failed run holds nothing."""

    node: TreeNode
    ok: bool
    status: str
    mask: BoolArray | None
    cycle: GroupCycle | None = None  # leaf: the cycle of its pending members
    placed: Placed = field(default_factory=list)
    children: list[_Run] = field(default_factory=list)  # satisfied children
    satisfied: int = 0  # children satisfied (a CompositePodGroup), pods placed + bound (a leaf)
    message: str = ""  # why it failed: v1.37's PlacementFeasible status
    failed: list[_Run] = field(default_factory=list)  # children that failed (for their messages)


@dataclass
class _Tree:
    ctx: CycleContext
    profile: Profile
    root: TreeNode
    members: dict[str, list[PodInfo]]  # leaf key -> its pending members, in queue order
    greedy: bool  # --compat v1.37: upstream's greedy algorithm
    tries: int = _MAX_TRIES
    fired: bool = False  # phalanx's rule changed what the greedy algorithm would have done
    limited: set[str] = field(default_factory=set)  # leaves that placed only their minimum in the first pass
    failures: dict[str, Failed] = field(default_factory=dict)  # leaf key -> its members' last failed attempts


# --- the driver -----------------------------------------------------------------------------------------------------


def schedule_tree(ctx: CycleContext, first: PodInfo, tree: TreeNode) -> None:
    """Run one tree cycle for the tree of ``first`` (already popped from the queue)."""
    start = time.perf_counter()
    members = _collect(ctx, first, tree)
    everyone = [pi for pis in members.values() for pi in pis]
    if not everyone:
        return
    mismatch = _validate(ctx, tree, everyone)
    if mismatch is not None:
        # handlePodGroupFailureBeforeScheduling: every pod, and every PodGroup of the tree (not the
        # CompositePodGroups), fails with the error.
        for pi in everyone:
            ctx.reject(pi, Rejection(o.REASON_SCHEDULER_ERROR, mismatch.message))
        for leaf in tree.leaves():
            if leaf.group is not None:
                ctx.set_condition(leaf.group, "False", o.REASON_SCHEDULER_ERROR, mismatch.message)
        return
    t = _Tree(ctx, ctx.profile_for(everyone[0]), tree, members, greedy=not ctx.rules.composite_min_first_backtracking)
    run = _place_tree(t)
    _submit(t, run)
    wap = ctx.gates.workload_aware_preemption
    if not run.ok and run.status == UNSCHEDULABLE and wap:
        began = time.perf_counter()
        _preempt(t, everyone)
        ctx.stats.preemption_seconds.append(time.perf_counter() - began)
    elif run.ok and wap and ctx.rules.leftover_members_preempt_at_once:
        _preempt_for_leftovers(t)
    ctx.stats.cycle_seconds.append(time.perf_counter() - start)


def _preempt_for_leftovers(t: _Tree) -> None:
    """v1.37: the members a satisfied tree left unplaced get their next cycle at once; it places none of them (they
    just failed), so the tree preempts for them, as a PodGroup's leftovers do (leftover-members-preempt-at-once)."""
    ctx = t.ctx
    left = {key: [pi for pi in pis if not ctx.is_bound(pi.key)] for key, pis in t.members.items()}
    rest = [pi for pis in left.values() for pi in pis]
    if not rest:
        return
    began = time.perf_counter()
    again = _Tree(ctx, t.profile, t.root, left, greedy=t.greedy)
    run = _place_tree(again)
    if run.ok:
        _forget(again, run)  # the state changed under them after all: their own next cycle places them
    elif run.status == UNSCHEDULABLE:
        _preempt(again, rest)
        ctx.changed_by("leftover_members_preempt_at_once", [pi.key for pi in rest])
    ctx.stats.preemption_seconds.append(time.perf_counter() - began)


def _place_tree(t: _Tree) -> _Run:
    """The tree algorithm from the root; on success its placements stay assumed."""
    t.tries = _MAX_TRIES
    t.limited = set()
    run = _solve(t, t.root, None, limit=not t.greedy)
    if run.ok and not t.greedy:
        _extend(t, run)
        # Minimum-first mattered only where capacity was contended: a limited leaf that could not place the rest.
        t.fired = t.fired or any(_left_over(t, r) for r in _leaf_runs(run) if r.node.key in t.limited)
    if run.ok and not _any_placed(run):
        _forget(t, run)
        run = _Run(t.root, False, UNSCHEDULABLE, None, message=o.MSG_NONE_SCHEDULABLE)  # v1.37 needs one pod placed
    return run


def reject_problem(ctx: CycleContext, first: PodInfo, problem: TreeProblem) -> None:
    """An invalid tree: every group gets ``Invalid``, every pending member is rejected with the message. A tree
    whose parent went missing after its pod was queued: the pod waits for a group event (no condition written)."""
    if problem.kind != INVALID:
        ctx.reject(first, Rejection(o.REASON_UNSCHEDULABLE, problem.message, frozenset({GANG})))
        return
    keys = [k for kind, k in problem.groups if kind != KIND_COMPOSITE]
    pending = [first, *ctx.take(sorted({m for k in keys for m in ctx.groups.members_of(k)} - {first.key}))]
    rejection = Rejection(o.REASON_UNSCHEDULABLE, problem.message, frozenset({GANG}))
    for pi in pending:
        ctx.reject(pi, rejection)
    for kind, key in problem.groups:
        _condition(ctx, kind, key, "False", o.REASON_INVALID, problem.message)
    if problem.rule is not None:
        ctx.changed_by(problem.rule, [key for _, key in problem.groups] + [pi.key for pi in pending])


def _collect(ctx: CycleContext, first: PodInfo, tree: TreeNode) -> dict[str, list[PodInfo]]:
    keys = {m for leaf in tree.leaves() for m in ctx.groups.members_of(leaf.key)} - {first.key}
    pending = [first, *ctx.take(sorted(keys))]
    pending = [pi for pi in pending if pi.pod.metadata.deletion_timestamp is None]
    pending.sort(key=PodInfo.sort_key)
    out: dict[str, list[PodInfo]] = {leaf.key: [] for leaf in tree.leaves()}
    for pi in pending:
        if pi.group_key in out:
            out[pi.group_key].append(pi)
    return out


def _validate(ctx: CycleContext, tree: TreeNode, everyone: list[PodInfo]) -> Mismatch | None:
    """v1.37.2's validatePodGroup for the tree: the root CompositePodGroup's priority and preemption policy."""
    spec = tree.composite.spec if tree.composite is not None else None
    priority = ctx.groups.priorities.resolve(spec.priority, spec.priority_class_name) if spec else 0
    policy = spec.preemption_policy if spec is not None else None
    return tree_mismatch(ctx, priority, policy, [leaf.key for leaf in tree.leaves()], everyone)


# --- placing a subtree ------------------------------------------------------------------------------------------------


def _solve(t: _Tree, node: TreeNode, within: BoolArray | None, limit: bool) -> _Run:
    """Place ``node`` somewhere inside ``within``: its domain options in order, the first that works."""
    choices = _options(t, node, within, limit)
    failed: _Run | None = choices.first_failed
    for mask in choices.options[:1] if t.greedy else choices.options:
        run = _attempt(t, node, mask, limit)
        if run.ok:
            return run
        failed = failed or run
    if failed is None:
        failed = _Run(node, False, _unresolvable_or(t, node), within, message=_progress(node, 0, 0))
    if choices.placements:
        first = failed.message or _progress(node, 0, 0)
        failed.message = f"0/{choices.placements} placements are available, first placement status: {first}"
    return failed


def _attempt(t: _Tree, node: TreeNode, mask: BoolArray | None, limit: bool) -> _Run:
    return _attempt_leaf(t, node, mask, limit) if node.group is not None else _attempt_composite(t, node, mask, limit)


def _leaf_cycle(t: _Tree, node: TreeNode, limit: bool) -> tuple[GroupCycle, int]:
    """The leaf's cycle (only the members its minimum needs when ``limit``) and the count it must reach."""
    assert node.group is not None
    ctx = t.ctx
    gang = node.group.min_count is not None and ctx.groups.gang_enabled.get(t.profile.scheduler_name, True)
    need = (node.group.min_count or 1) if gang else 1
    bound = bound_members(ctx, node.group)
    members = t.members[node.key]
    if limit:
        members = members[: max(need - bound, 0)]
    return GroupCycle(ctx, node.group, t.profile, members, need if gang else None, bound), need


def _attempt_leaf(t: _Tree, node: TreeNode, mask: BoolArray | None, limit: bool) -> _Run:
    c, need = _leaf_cycle(t, node, limit)
    if c.bound + len(t.members[node.key]) < need:  # not enough pods to ever reach minCount
        return _Run(node, False, UNRESOLVABLE, mask, c, message=_count(need, c.bound, len(t.members[node.key])))
    if not c.members:
        return _Run(node, True, SUCCESS, mask, c, satisfied=c.bound)
    placed, failures = default_algorithm(c, mask)
    if failures:
        t.failures[node.key] = failures
    if c.bound + len(placed) >= need:
        if limit and len(t.members[node.key]) > len(c.members):
            t.limited.add(node.key)  # greedy would have placed every member here
        return _Run(node, True, SUCCESS, mask, c, placed, satisfied=c.bound + len(placed))
    forget(c, placed)
    done = {pi.key for pi, _ in placed}
    return _Run(
        node, False, UNSCHEDULABLE, mask, c, message=_replay(need, c.bound, [pi.key in done for pi in c.members])
    )


def _attempt_composite(t: _Tree, node: TreeNode, mask: BoolArray | None, limit: bool) -> _Run:
    need = node.min_count or 1
    if not t.greedy:
        return _backtrack(t, node, mask, need)
    run = _Run(node, False, UNSCHEDULABLE, mask)
    if len(node.children) < need:
        run.status, run.message = UNRESOLVABLE, _count(need, 0, len(node.children))
        return run
    unschedulable = 0
    for i, child in enumerate(node.children):
        child_run = _solve(t, child, mask, limit=False)
        if child_run.ok:
            run.children.append(child_run)
        else:
            run.failed.append(child_run)
            unschedulable += child_run.status == UNSCHEDULABLE
        remaining = len(node.children) - i - 1
        if len(run.children) + remaining < need:
            _forget(t, run)  # its satisfied children stay listed: they report this group's status
            resolvable = len(run.children) + remaining + unschedulable >= need
            run.status = UNSCHEDULABLE if resolvable else UNRESOLVABLE
            run.message = _count(need, len(run.children), remaining)
            return run
    run.satisfied = len(run.children)
    run.ok, run.status = True, SUCCESS
    return run


def _backtrack(t: _Tree, node: TreeNode, mask: BoolArray | None, need: int) -> _Run:
    """Beyond v1.37: satisfy ``need`` children, each placing only its minimum, trying the children's other
    domains (and leaving a child out) depth first when the first choices fail. The first descent (every child's
    first choice) is free; every attempt after the first step back costs one of the cycle's ``_MAX_TRIES``."""
    chosen: list[_Run] = []
    backtracking = False
    best = 0
    failed: dict[str, _Run] = {}

    def place(i: int) -> bool:
        nonlocal backtracking, best
        best = max(best, len(chosen))
        if len(chosen) >= need:
            return True
        if len(chosen) + len(node.children) - i < need:
            return False
        child = node.children[i]
        fitted = False
        for n, option in enumerate(_options(t, child, mask, limit=True).options):
            backtracking = backtracking or n > 0
            if backtracking:
                if t.tries <= 0:
                    return False
                t.tries -= 1
            run = _attempt(t, child, option, limit=True)
            if not run.ok:
                failed.setdefault(child.key, run)
                continue
            fitted = True
            chosen.append(run)
            if place(i + 1):
                t.fired = t.fired or n > 0
                return True
            chosen.pop()
            _forget(t, run)
        backtracking = backtracking or fitted
        skipped = place(i + 1)  # leave this child out: the others may satisfy the parent
        t.fired = t.fired or (skipped and fitted)  # greedy would have kept this child where it fitted
        return skipped

    if not place(0):
        status = _unresolvable_or(t, node)
        return _Run(node, False, status, mask, message=_count(need, best, 0), failed=list(failed.values()))
    return _Run(node, True, SUCCESS, mask, children=list(chosen), satisfied=len(chosen))


def _extend(t: _Tree, run: _Run) -> None:
    """phalanx's second pass, once the root is satisfied: place the rest inside the domains already chosen."""
    if run.node.group is not None:
        assert run.cycle is not None
        done = {pi.key for pi in run.cycle.members}
        rest = [pi for pi in t.members[run.node.key] if pi.key not in done]
        if rest:
            c = GroupCycle(t.ctx, run.node.group, t.profile, rest, None, run.cycle.bound + len(run.placed))
            placed, failures = default_algorithm(c, run.mask)
            run.placed += placed
            if failures:
                t.failures[run.node.key] = failures
        return
    for child in run.children:
        _extend(t, child)
    taken = {c.node.key for c in run.children}
    for node in run.node.children:
        if node.key in taken:
            continue
        extra = _solve(t, node, run.mask, limit=True)
        if extra.ok:
            _extend(t, extra)
            run.children.append(extra)
            run.satisfied += 1


# --- domains --------------------------------------------------------------------------------------------------------


@dataclass
class _Choices:
    """Where a group may go: its options, best first; the number of placements generated for it (0 without a
    topology constraint) and the first one's failed evaluation, for v1.37's placement message."""

    options: list[BoolArray | None]
    placements: int = 0
    first_failed: _Run | None = None


def _options(t: _Tree, node: TreeNode, within: BoolArray | None, limit: bool) -> _Choices:
    """Where ``node`` may go inside ``within``: one option (``within``) without a topology constraint; else the
    feasible domains of its level, best first (v1.37: placement score; phalanx: BestFit, tightest first)."""
    key, leaf_intent = _topology(t, node)
    if key is None:
        return _Choices([within])
    table = t.ctx.state.table
    try:
        pinned = tas.pinned_domain(table, key, _bound_rows(t, node, limit))
    except tas.PlacementError as exc:
        return _Choices([], 1, _Run(node, False, UNSCHEDULABLE, within, message=str(exc)))
    doms = [d for d in tas.domains(table, key, pinned) if within is None or (d.mask & within).any()]
    counted = _counted_options(t, node, key, within, doms, limit)
    scored = counted[0] if counted is not None else []
    first_failed = counted[1] if counted is not None else None
    for n, dom in enumerate(doms if counted is None else []):
        mask = dom.mask if within is None else dom.mask & within
        run = _attempt(t, node, mask, limit)
        if run.ok:
            scored.append((dom, mask, [pi for pi, _ in _placements(run)]))
            _forget(t, run)
        elif n == 0:
            first_failed = run
    ordered = _order(t, node, key, scored)
    if leaf_intent is not None and leaf_intent.mode in ("preferred", "unconstrained"):
        ordered.append(within)  # the phalanx annotations' last resort: anywhere
        return _Choices(ordered)
    return _Choices(ordered, len(doms), first_failed)


def _bound_rows(t: _Tree, node: TreeNode, limit: bool) -> list[tuple[str, int]]:
    """(pod key, node row) of the bound members under ``node``: they pin its domain, a CompositePodGroup's too
    (its left-over members of a satisfied tree stay in the domain its placed ones chose)."""
    if node.group is not None:
        return bound_member_rows(_leaf_cycle(t, node, limit)[0])
    ctx = t.ctx
    placement = ctx.state.placement
    keys = {k for leaf in node.leaves() for k in ctx.groups.members_of(leaf.key)}
    return sorted((k, placement[k]) for k in keys if ctx.is_bound(k) and k in placement)


def _counted_options(
    t: _Tree, node: TreeNode, key: str, within: BoolArray | None, doms: list[tas.Domain], limit: bool
) -> tuple[list[tuple[tas.Domain, BoolArray, list[PodInfo]]], _Run | None] | None:
    """A leaf of identical members judged node by node fits a domain exactly when the domain's free slots cover
    it (greedy placement of identical pods is optimal), so its domains are counted in one vector pass instead of
    a trial run each. None when that is not exact."""
    if node.group is None:
        return None
    c, need = _leaf_cycle(t, node, limit)
    table = t.ctx.state.table
    if not counted_by_slots(t.profile, c.members, table):
        return None
    room = c.room()
    free = tas.per_domain(table, key, room if within is None else np.where(within, room, 0))
    out = []
    first_failed: _Run | None = None
    for n, dom in enumerate(doms):
        count = min(len(c.members), int(free[dom.code]))
        mask = dom.mask if within is None else dom.mask & within
        if c.bound + count >= need:
            out.append((dom, mask, c.members[:count]))
        elif n == 0:
            fits = [i < count for i in range(len(c.members))]
            first_failed = _Run(node, False, UNSCHEDULABLE, mask, c, message=_replay(need, c.bound, fits))
    return out, first_failed


def _topology(t: _Tree, node: TreeNode) -> tuple[str | None, tas.Intent | None]:
    if not t.profile.tas:
        return None, None
    if node.group is None:
        return node.topology_key, None
    intent = tas.intent_of(node.group.pod_group, t.profile, t.ctx.rules.topology_annotations)
    return (intent.levels[0], intent) if intent is not None else (None, None)


def _order(
    t: _Tree, node: TreeNode, key: str, scored: list[tuple[tas.Domain, BoolArray, list[PodInfo]]]
) -> list[BoolArray | None]:
    if not scored:
        return []
    seed = t.profile.seed
    table = t.ctx.state.table
    if t.greedy:
        bound = sum(bound_members(t.ctx, leaf.group) for leaf in node.leaves() if leaf.group is not None)
        scores = tas.score_v136(t.profile, table, [d for d, _, _ in scored], [p for _, _, p in scored], bound)
        ranked = sorted(range(len(scored)), key=lambda i: (-int(scores[i]), tas.tie_break(seed, scored[i][0])))
        return [scored[i][1] for i in ranked]
    first = next((t.members[leaf.key][0] for leaf in node.leaves() if t.members.get(leaf.key)), None)
    free = tas.per_domain(table, key, tas.slots(t.profile, first, table)) if first is not None else None

    def tightness(entry: tuple[tas.Domain, BoolArray, list[PodInfo]]) -> tuple[int, int, int]:
        dom, _, proposed = entry
        spare = int(free[dom.code]) - len(proposed) if free is not None else 0
        return (-len(proposed), spare, tas.tie_break(seed, dom))

    return [mask for _, mask, _ in sorted(scored, key=tightness)]


# --- results ----------------------------------------------------------------------------------------------------------


def _leaf_runs(run: _Run) -> list[_Run]:
    if run.node.group is not None:
        return [run]
    return [leaf for child in run.children for leaf in _leaf_runs(child)]


def _left_over(t: _Tree, run: _Run) -> bool:
    return len(run.placed) < len(t.members[run.node.key])


def _placements(run: _Run) -> Placed:
    out = list(run.placed)
    for child in run.children:
        out += _placements(child)
    return out


def _any_placed(run: _Run) -> bool:
    return bool(run.placed) or any(_any_placed(c) for c in run.children)


def _forget(t: _Tree, run: _Run) -> None:
    if run.cycle is not None:
        forget(run.cycle, run.placed)
        run.placed = []
    for child in run.children:
        _forget(t, child)


def _unresolvable_or(t: _Tree, node: TreeNode) -> str:
    """A failed group is unresolvable when too few of its children (or pods) exist to ever satisfy it."""
    if node.group is not None:
        c, need = _leaf_cycle(t, node, limit=False)
        return UNRESOLVABLE if c.bound + len(c.members) < need else UNSCHEDULABLE
    possible = sum(1 for child in node.children if _unresolvable_or(t, child) == UNSCHEDULABLE)
    return UNSCHEDULABLE if possible >= (node.min_count or 1) else UNRESOLVABLE


def _satisfied_nodes(run: _Run | None) -> dict[str, _Run]:
    if run is None or not run.ok:
        return {}
    out = {f"{run.node.kind}:{run.node.key}": run}
    for child in run.children:
        out.update(_satisfied_nodes(child))
    return out


def _submit(t: _Tree, root: _Run) -> None:
    ctx = t.ctx
    done = _satisfied_nodes(root)
    messages: dict[str, str] = {}
    _messages(root, "", messages)
    for node in t.root.walk():
        run = done.get(f"{node.kind}:{node.key}")
        if node.group is None:
            if run is not None:
                _condition(ctx, node.kind, node.key, "True", o.REASON_SCHEDULED, "")
            else:
                _condition(ctx, node.kind, node.key, "False", o.REASON_UNSCHEDULABLE, _message(t, node, root, messages))
            continue
        placed = {pi.key for pi, _ in run.placed} if run is not None else set()
        for pi, _ in run.placed if run is not None else []:
            ctx.bind(pi)
        _reject_rest(t, node, placed, _message(t, node, root, messages), root.ok)
        if run is not None:
            _condition(ctx, node.kind, node.key, "True", o.REASON_SCHEDULED, "")
        else:
            _condition(ctx, node.kind, node.key, "False", o.REASON_UNSCHEDULABLE, _message(t, node, root, messages))
    if root.ok and t.fired:
        keys = [n.key for n in t.root.walk()] + [pi.key for pi, _ in _placements(root)]
        ctx.changed_by(RULE, keys)


def _reject_rest(t: _Tree, node: TreeNode, placed: set[str], message: str, root_ok: bool = True) -> None:
    own = {pi.key: attempt for pi, attempt in t.failures.get(node.key, [])}
    plugins = {GANG}
    if not root_ok:
        # The tree failed for capacity somewhere: members that were never tried (or fitted under a failed parent)
        # must come back when capacity does (a pod deleted, a node added), not only when their group grows.
        plugins.add(TOPOLOGY)
        plugins.update(p for runs in t.failures.values() for _, a in runs for p in rejection_of(a).plugins)
    waiting = Rejection(o.REASON_UNSCHEDULABLE, message, frozenset(plugins))
    for pi in t.members[node.key]:
        if pi.key in placed:
            continue
        attempt = own.get(pi.key)
        t.ctx.reject(pi, rejection_of(attempt) if attempt is not None else waiting)


def _count(need: int, scheduled: int, remaining: int) -> str:
    """GangScheduling's PlacementFeasible rejection (v1.37), for minCount and minGroupCount alike."""
    return f"minCount ({need}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"


def _replay(need: int, bound: int, fits: list[bool]) -> str:
    """v1.37 stops a PodGroup's pods at the first pod after which minCount can no longer be reached: the counts
    of that moment, replayed from which members fitted."""
    scheduled, remaining = bound, len(fits)
    for ok in fits:
        remaining -= 1
        scheduled += ok
        if scheduled + remaining < need:
            break
    return _count(need, scheduled, remaining)


def _progress(node: TreeNode, scheduled: int, remaining: int) -> str:
    return _count(node.min_count or 1, scheduled, remaining)


def _messages(run: _Run, inherited: str, out: dict[str, str]) -> None:
    """Each group's failure message: its own when it failed; else its nearest failed ancestor's (v1.37 gives a
    child that fitted, or was never tried, its parent's status)."""
    own = run.message if not run.ok else inherited
    out[f"{run.node.kind}:{run.node.key}"] = own
    for child in [*run.children, *run.failed]:
        _messages(child, own if not run.ok else inherited, out)


def _message(t: _Tree, node: TreeNode, root: _Run, messages: dict[str, str]) -> str:
    base = o.MSG_GROUP_UNSCHEDULABLE if node.group is not None else o.MSG_COMPOSITE_UNSCHEDULABLE
    if root.ok:
        return messages.get(f"{node.kind}:{node.key}") or base
    return messages.get(f"{node.kind}:{node.key}") or root.message or base


def _condition(ctx: CycleContext, kind: str, key: str, status: str, reason: str, message: str) -> None:
    if kind == KIND_COMPOSITE:
        ctx.set_composite_condition(key, status, reason, message)
        return
    group = ctx.groups.get(key)
    if group is not None:
        ctx.set_condition(group, status, reason, message)


# --- preemption at the root -------------------------------------------------------------------------------------------


class _TreeSimulator:
    """Workload-aware preemption's what-if: the whole tree algorithm on the current state, then forgotten."""

    def __init__(self, t: _Tree) -> None:
        self.t = t

    def placements(self) -> tuple[dict[str, int], bool]:
        run = _place_tree(self.t)
        rows = {pi.key: row for pi, row in _placements(run)} if run.ok else {}
        if run.ok:
            _forget(self.t, run)
        return rows, run.ok

    def count(self, rows: Sequence[int]) -> tuple[int, bool]:
        placed, ok = self.placements()
        return len(placed), ok


def _run_once(t: _Tree) -> tuple[list[tuple[PodInfo, int]], bool]:
    """v1.37's single run of the tree algorithm for workload-aware preemption, forgotten at once."""
    run = _place_tree(t)
    if not run.ok:
        return [], False
    placed = list(_placements(run))
    _forget(t, run)
    return placed, True


def _preempt(t: _Tree, everyone: list[PodInfo]) -> None:
    """v1.37: preemption is decided at the root, for the whole tree. Victims are lower-priority units outside the
    tree; they are evicted only if the tree then fits."""
    ctx = t.ctx
    if not t.profile.preemption or group_preemption_policy_never(ctx, everyone):
        return
    leaves = {leaf.key for leaf in t.root.leaves()}
    priority = max(ctx.groups.priority(k) for k in leaves)
    own = next(iter(sorted(leaves)))
    units = [u for u in victim_units(ctx, own, priority) if not any(p.group_key in leaves for p in u.pods)]
    if not units:
        return
    if ctx.release.wap_single_run and not ctx.rules.reprieve_by_rerun:
        table = ctx.state.table
        found = reprieve_on_fixed_nodes(
            ctx,
            units,
            lambda: _run_once(t),
            lambda pi, row: passes_filters(t.profile, pi, table, row),
            lambda pi: tas.per_node_only(t.profile, pi, table),
        )
    else:
        found = select_group_victims(ctx, units, _TreeSimulator(t))
    if found is None or not found.victims:
        return
    names = ctx.state.table.names
    for pi in everyone:
        row = found.nominated.get(pi.key)
        ctx.reject(
            pi,
            Rejection(o.REASON_UNSCHEDULABLE, o.MSG_WAITING_PREEMPTION, _WAITS_FOR_VICTIMS),
            names[row] if row is not None else None,
        )
    for node in t.root.walk():
        _condition(ctx, node.kind, node.key, "False", o.REASON_UNSCHEDULABLE, o.MSG_WAITING_PREEMPTION)
    victims = [p for u in found.victims for p in u.pods]
    keys = [n.key for n in t.root.walk()] + [v.key for v in victims]
    for rule in sorted(found.rules):
        ctx.changed_by(rule, keys)
    meta = t.root.composite.metadata if t.root.composite is not None else None
    namespace, name = (meta.namespace, meta.name) if meta is not None else ("", t.root.name)
    ctx.evict(victims, Preemptor(t.root.kind, namespace, name, t.profile.scheduler_name))
