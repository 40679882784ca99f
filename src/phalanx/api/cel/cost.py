"""Worst-case cost estimate of a checked expression: cel-go's estimator (``checker/cost.go``), exactly.

kube-apiserver rejects a selector whose estimated maximum cost exceeds 1,000,000, so phalanx must compute the
same number. Sizes (of strings, lists, maps) are tracked through the expression; what the expression cannot know
(a device attribute's length) comes from a :class:`SizeEstimator` keyed by field path (``device.attributes.@values``),
and library functions get their cost from :mod:`.library_cost` (Kubernetes' ``CostEstimator``, the lists
extension). Arithmetic saturates at 2**64-1 like cel-go's uint64 helpers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from phalanx.api.cel import nodes
from phalanx.api.cel.checker import Checked
from phalanx.api.cel.nodes import ACCUMULATOR, Node
from phalanx.api.cel.types import CelType, Kind

__all__ = [
    "MAX",
    "UNKNOWN",
    "AstNode",
    "CallEstimate",
    "Coster",
    "Estimate",
    "SizeEstimator",
    "add",
    "estimate",
    "factor",
    "mul",
    "scale",
    "union",
]

MAX = 2**64 - 1
Estimate = tuple[int, int]  # (min, max), used for both sizes and costs
UNKNOWN: Estimate = (0, MAX)
_S, _R = 0.1, 0.25


def add(a: Estimate, b: Estimate) -> Estimate:
    return min(a[0] + b[0], MAX), min(a[1] + b[1], MAX)


def mul(a: Estimate, b: Estimate) -> Estimate:
    return min(a[0] * b[0], MAX), min(a[1] * b[1], MAX)


def factor(value: int, f: float) -> int:
    x = float(value)
    if x > 0 and f > 0 and x > MAX / f:
        return MAX
    result = math.ceil(x * f)
    return MAX if result >= 2.0**64 else int(result)


def scale(a: Estimate, f: float) -> Estimate:
    return factor(a[0], f), factor(a[1], f)


def union(a: Estimate, b: Estimate) -> Estimate:
    return min(a[0], b[0]), max(a[1], b[1])


@dataclass(frozen=True, slots=True)
class AstNode:
    """What the estimator knows of a node: its field path from a variable, its type, its computed size."""

    path: tuple[str, ...] | None
    type: CelType
    expr: Node | None
    computed: Estimate | None


@dataclass(frozen=True, slots=True)
class CallEstimate:
    cost: Estimate
    result_size: Estimate | None = None


SizeEstimator = Callable[[AstNode], Estimate | None]
CallEstimator = Callable[["Coster", str, str, AstNode | None, list[AstNode]], CallEstimate | None]


@dataclass(slots=True)
class _Entry:
    container: str  # Kind.LIST or Kind.MAP
    key: Estimate
    value: Estimate


@dataclass(slots=True)
class _Local:
    path: tuple[str, ...]
    size: Estimate | None
    entry: _Entry | None


def _union_entry(a: _Entry | None, b: _Entry | None) -> _Entry | None:
    if a is None or b is None:
        return None
    return _Entry(a.container, union(a.key, b.key), union(a.value, b.value))


@dataclass
class Coster:
    checked: Checked
    sizes: SizeEstimator
    calls: CallEstimator
    paths: dict[Node, tuple[str, ...]] = field(default_factory=dict)
    scopes: dict[str, list[_Local]] = field(default_factory=dict)
    computed: dict[Node, Estimate] = field(default_factory=dict)
    entries: dict[Node, _Entry] = field(default_factory=dict)

    # --- sizes and paths ---------------------------------------------------------------------------------------

    def local(self, name: str) -> _Local | None:
        stack = self.scopes.get(name)
        return stack[-1] if stack else None

    def push(self, name: str, path: tuple[str, ...], size: Estimate | None, entry: _Entry | None) -> None:
        self.scopes.setdefault(name, []).append(_Local(path, size, entry))

    def pop(self, name: str) -> None:
        self.scopes[name].pop()

    def path(self, node: Node) -> tuple[str, ...]:
        if isinstance(node, nodes.Ident):
            found = self.local(node.name)
            if found is not None:
                return found.path
        return self.paths.get(node, ())

    def type_of(self, node: Node) -> CelType:
        return self.checked.type_of(node)

    def ast_node(self, node: Node) -> AstNode:
        path: tuple[str, ...] | None = self.path(node)
        if path and path[0] in (ACCUMULATOR, "@result"):
            path = None
        return AstNode(path or None, self.type_of(node), node, self.size(node))

    def size(self, node: Node) -> Estimate | None:
        if node in self.computed:
            return self.computed[node]
        literal = _literal_size(node)
        if literal is not None:
            return literal
        found = self.sizes(AstNode(self.path(node) or None, self.type_of(node), node, None))
        if found is not None:
            self.computed[node] = found
            return found
        if _is_scalar(self.type_of(node)):
            return (1, 1)
        if isinstance(node, nodes.Ident):
            local = self.local(node.name)
            if local is not None and local.size is not None:
                return local.size
        return None

    def size_or_unknown(self, node: Node | AstNode) -> Estimate:
        found = node.computed if isinstance(node, AstNode) else self.size(node)
        return found if found is not None else UNKNOWN

    def entry(self, node: Node) -> _Entry | None:
        if node in self.entries:
            return self.entries[node]
        if isinstance(node, nodes.Ident):
            local = self.local(node.name)
            if local is not None:
                return local.entry
        return None

    def set_size(self, node: Node, size: Estimate | None) -> None:
        if size is not None:
            self.computed[node] = size

    def set_entry(self, node: Node, entry: _Entry | None) -> None:
        if entry is not None:
            self.entries[node] = entry

    def copy_sizes(self, dst: Node, src: Node) -> None:
        self.set_size(dst, self.size(src))
        self.set_entry(dst, self.entry(src))

    # --- costs -------------------------------------------------------------------------------------------------

    def cost(self, node: Node) -> Estimate:
        if isinstance(node, nodes.Const):
            return (0, 0)
        if isinstance(node, nodes.Ident):
            found = self.local(node.name)
            self.paths[node] = found.path if found is not None else (node.name,)
            return (1, 1)
        if isinstance(node, nodes.Select):
            return self.cost_select(node)
        if isinstance(node, nodes.Call):
            return self.cost_call(node)
        if isinstance(node, nodes.CreateList):
            return self.cost_list(node)
        if isinstance(node, nodes.CreateMap):
            return self.cost_map(node)
        return self.cost_bind(node) if node.is_bind() else self.cost_fold(node)

    def cost_select(self, node: nodes.Select) -> Estimate:
        if node in self.checked.idents:
            self.paths[node] = (node.field,)  # a qualified variable name (cel-go rewrote it to an identifier)
            return (1, 1)
        if node.test_only:
            return self.cost(node.operand)  # Kubernetes: presence tests cost nothing of their own
        total = self.cost(node.operand)
        if self.type_of(node.operand).kind in (Kind.MAP, Kind.STRUCT, Kind.TYPE_PARAM):
            total = add(total, (1, 1))
        self.paths[node] = (*self.path(node.operand), node.field)
        return total

    def cost_list(self, node: nodes.CreateList) -> Estimate:
        total: Estimate = (0, 0)
        item: Estimate = (0 if not node.elements else MAX, 0)
        for e in node.elements:
            total = add(total, self.cost(e))
            item = union(item, self.size_or_unknown(e))
        self.set_entry(node, _Entry(Kind.LIST, (1, 1), item))
        return add(total, (10, 10))

    def cost_map(self, node: nodes.CreateMap) -> Estimate:
        total: Estimate = (0, 0)
        empty = not node.entries
        key: Estimate = (0 if empty else MAX, 0)
        value: Estimate = (0 if empty else MAX, 0)
        for e in node.entries:
            total = add(add(total, self.cost(e.key)), self.cost(e.value))
            key = union(key, self.size_or_unknown(e.key))
            value = union(value, self.size_or_unknown(e.value))
        self.set_entry(node, _Entry(Kind.MAP, key, value))
        return add(total, (30, 30))

    def range_kind(self, range_node: Node) -> str:
        entry = self.entry(range_node)
        return entry.container if entry is not None else self.type_of(range_node).kind

    def push_iteration(self, node: nodes.Fold) -> None:
        rng = node.iter_range
        entry, path, kind = self.entry(rng), self.path(rng), self.range_kind(rng)
        key = entry.key if entry is not None else None
        value = entry.value if entry is not None else None
        if node.iter_var2:
            self.push(node.iter_var, (*path, "@indices" if kind == Kind.LIST else "@keys"), key, None)
            self.push(node.iter_var2, (*path, "@items" if kind == Kind.LIST else "@values"), value, None)
        elif kind == Kind.LIST:
            self.push(node.iter_var, (*path, "@items"), value, None)
        else:
            self.push(node.iter_var, (*path, "@keys"), key, None)

    def cost_fold(self, node: nodes.Fold) -> Estimate:
        total = add(self.cost(node.iter_range), self.cost(node.accu_init))
        self.push(node.accu_var, self.path(node.accu_init), self.size(node.accu_init), self.entry(node.accu_init))
        self.push_iteration(node)
        loop = self.cost(node.condition)
        step = self.cost(node.step)
        self.pop(node.iter_var)
        if node.iter_var2:
            self.pop(node.iter_var2)
        total = add(total, self.cost(node.result))
        self.pop(node.accu_var)
        count = self.size_or_unknown(node.iter_range)
        total = add(total, mul(count, add(step, loop)))
        if isinstance(node.accu_init, nodes.Const):
            self.set_size(node, self.size(node.accu_init))
        elif isinstance(node.accu_init, nodes.CreateList | nodes.CreateMap):
            self.set_size(node, count)
            self.set_entry(node, self.entry(node.step))
        return total

    def cost_bind(self, node: nodes.Fold) -> Estimate:
        total = add(self.cost(node.iter_range), self.cost(node.accu_init))
        self.push(node.accu_var, self.path(node.accu_init), self.size(node.accu_init), self.entry(node.accu_init))
        total = add(total, self.cost(node.result))
        self.pop(node.accu_var)
        self.copy_sizes(node, node.result)
        return total

    def cost_call(self, node: nodes.Call) -> Estimate:
        from phalanx.api.cel.call_cost import cost_call

        return cost_call(self, node)


def _literal_size(node: Node) -> Estimate | None:
    if isinstance(node, nodes.Const):
        value = node.value
        if isinstance(value, str | bytes):
            return (len(value), len(value))
        return (1, 1)
    if isinstance(node, nodes.CreateList):
        return (len(node.elements), len(node.elements))
    if isinstance(node, nodes.CreateMap):
        return (len(node.entries), len(node.entries))
    return None


def _is_scalar(t: CelType) -> bool:
    if t.kind in (Kind.BOOL, Kind.DOUBLE, Kind.DURATION, Kind.INT, Kind.TIMESTAMP, Kind.UINT):
        return True
    return t.is_optional() and _is_scalar(t.params[0])


def estimate(root: Node, checked: Checked, sizes: SizeEstimator, calls: CallEstimator) -> Estimate:
    """The (min, max) estimated cost of evaluating ``root``."""
    return Coster(checked, sizes, calls).cost(root)
