"""Estimated cost of calls: cel-go's ``costCall``/``functionCost`` and the library estimators Kubernetes adds.

Order as in cel-go: the lists extension's per-overload estimators, then the environment's estimator (Kubernetes'
``library.CostEstimator.EstimateCallCost``, wrapped by DRA for ``includes``), then cel-go's defaults by overload id.
A call with several candidate overloads costs the union of their ranges.
"""

from __future__ import annotations

from phalanx.api.cel import nodes
from phalanx.api.cel.cost import (
    MAX,
    UNKNOWN,
    AstNode,
    CallEstimate,
    Coster,
    Estimate,
    _Entry,
    _union_entry,
    add,
    factor,
    mul,
    scale,
    union,
)
from phalanx.api.cel.types import Kind

__all__ = ["cost_call", "kubernetes_estimate", "size_estimate"]

_S, _R = 0.1, 0.25


def size_estimate(c: Coster, node: AstNode) -> Estimate:
    """Kubernetes' sizeEstimate: the computed size, else the size estimator's, else unknown."""
    if node.computed is not None:
        return node.computed
    found = c.sizes(node)
    return found if found is not None else UNKNOWN


def _element(node: AstNode) -> AstNode | None:
    if not node.type.params:
        return None
    return AstNode((*node.path, "@items") if node.path else None, node.type.params[0], None, None)


def _list_call(cost_factor: float, size: Estimate, allocates: bool = True) -> CallEstimate:
    cost = add(scale(size, cost_factor), (1, 1))
    if allocates:
        cost = add(cost, (10, 10))
    return CallEstimate(cost, size)


def _int_literal(node: AstNode, default: int) -> int:
    if isinstance(node.expr, nodes.Const) and type(node.expr.value) is int:
        return max(int(node.expr.value), 0)
    return default


def lists_estimate(c: Coster, overload_id: str, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
    """cel-go ext.Lists version 3 and ext.Sets estimators."""
    if overload_id in ("list_sets_contains_list", "list_sets_intersects_list", "list_sets_equivalent_list"):
        if len(args) != 2:
            return None
        scale_factor = 2.0 if overload_id == "list_sets_equivalent_list" else 1.0
        product = mul(size_estimate(c, args[0]), size_estimate(c, args[1]))
        return CallEstimate(add(scale(product, scale_factor), (1, 1)))
    if overload_id == "list_slice" and target is not None and len(args) == 2:
        size = size_estimate(c, target)
        start, end = _int_literal(args[0], 0), _int_literal(args[1], size[1])
        return _list_call(1, (max(end - start, 0), max(end - start, 0)))
    if overload_id == "lists_range" and target is None and len(args) == 1:
        n = _int_literal(args[0], MAX)
        return _list_call(1, (n, n))
    if overload_id == "list_reverse" and target is not None and not args:
        return _list_call(1, size_estimate(c, target))
    if overload_id in ("list_flatten", "list_flatten_int") and target is not None and len(args) <= 1:
        depth = _int_literal(args[0], MAX) if args else 1
        return _list_call(float(depth), size_estimate(c, target))
    if overload_id == "list_distinct" and target is not None and not args:
        size = size_estimate(c, target)
        return _list_call(2.0, mul(size, size))
    if overload_id.endswith("_sort") and overload_id.startswith("list_") and target is not None and not args:
        return _sort(c, target, overload_id)
    if overload_id.endswith("_sortByAssociatedKeys") and target is not None and len(args) == 1:
        return _sort(c, args[0], overload_id)
    return None


def _sort(c: Coster, node: AstNode, overload_id: str) -> CallEstimate:
    size = size_estimate(c, node)
    cost_factor = 2.0 + (_S if overload_id.split("_")[1] in ("string", "bytes") else 0.0)
    return _list_call(cost_factor, mul(size, size))


def kubernetes_estimate(
    c: Coster, function: str, overload_id: str, target: AstNode | None, args: list[AstNode]
) -> CallEstimate | None:
    """Kubernetes' ``library.CostEstimator.EstimateCallCost`` (the parts reachable outside admission control)."""
    unit = CallEstimate((1, 1))
    if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target is not None:
        element = _element(target)
        if element is not None:
            cost: Estimate = (1, 1)
            if element.type.kind in (Kind.STRING, Kind.BYTES):
                cost = add(cost, scale(size_estimate(c, element), _S))
            return CallEstimate(mul(size_estimate(c, target), cost))
        return CallEstimate(scale(size_estimate(c, target), _S))
    if function in ("url", "jsonpatch.escapeKey") and len(args) == 1:
        size = size_estimate(c, args[0])
        return CallEstimate(scale(size, _S), size)
    if function in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
        size = size_estimate(c, target)
        return CallEstimate(scale(size, _S), size)
    if function == "replace" and target is not None and len(args) >= 2:
        return _replace(c, target, args)
    if function == "split" and target is not None:
        size = size_estimate(c, target)
        most = _int_literal(args[1], size[1]) if len(args) > 1 and _is_int_literal(args[1]) else size[1]
        return CallEstimate(scale(size, 2 * _S), (0, most))
    if function == "join" and target is not None:
        return _join(c, target, args)
    if function in ("find", "findAll") and target is not None and args:
        size = size_estimate(c, target)
        text = scale(add(size, (1, 1)), _S)
        return CallEstimate(mul(text, scale(size_estimate(c, args[0]), _R)), (0, size[1]))
    if function in ("cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver") and args:
        return CallEstimate(scale(size_estimate(c, args[0]), _S))
    if function == "ip":
        if overload_id == "cidr_ip":
            return unit
        return CallEstimate(scale(size_estimate(c, args[0]), _S)) if args else None
    if function == "ip.isCanonical" and args:
        return CallEstimate(scale(size_estimate(c, args[0]), 2 * _S))
    if function in ("containsIP", "containsCIDR") and args:
        return _contains_network(c, function, overload_id, args)
    if function == "validate" and args:
        return CallEstimate(scale(scale(size_estimate(c, args[0]), _S), 128 * _R))
    if function in _UNIT:
        return unit
    if function == "_==_" and len(args) == 2:
        return _equality(args)
    return None


_UNIT = {
    "format.named",
    "sign",
    "asInteger",
    "isInteger",
    "asApproximateFloat",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
    "major",
    "minor",
    "patch",
    "getScheme",
    "getHostname",
    "getHost",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "masked",
    "prefixLength",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
}


def _is_int_literal(node: AstNode) -> bool:
    return isinstance(node.expr, nodes.Const) and type(node.expr.value) is int


def _equality(args: list[AstNode]) -> CallEstimate | None:
    lhs, rhs = args
    if lhs.type != rhs.type:
        return None
    name = lhs.type.name
    if name in ("net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver"):
        return CallEstimate((1, 1))
    if name == "kubernetes.NamedFormat":
        return CallEstimate(scale((1, 64), _S))
    if name == "kubernetes.URL":
        size: Estimate = (1, 1)
        if rhs.computed is not None:
            size = union(rhs.computed, rhs.computed)
        return CallEstimate(scale((1, size[1]), _S))
    return None


def _contains_network(c: Coster, function: str, overload_id: str, args: list[AstNode]) -> CallEstimate:
    size: Estimate = (4, 16)
    cost = scale(add(size, size), _S)
    if function == "containsCIDR":
        cost = add(add(cost, scale(size, _S)), (1, 1))
    if overload_id in ("cidr_contains_ip_string", "cidr_contains_cidr_string"):
        cost = add(cost, scale(size_estimate(c, args[0]), _S))
    return CallEstimate(cost)


def _replace(c: Coster, target: AstNode, args: list[AstNode]) -> CallEstimate:
    size = size_estimate(c, target)
    old, new = size_estimate(c, args[0]), size_estimate(c, args[1])
    count_max, count_min, kept_max, kept_min = 0, 0, 0, 0
    if old[0] == 0:
        count_max, kept_max = (size[1] + 1 if size[1] < MAX else size[1]), size[1]
    elif new[1] <= old[0]:
        count_max, kept_max = 0, size[1]
    else:
        count_max = factor(size[1], 1 / old[0]) if size[1] < MAX else MAX
        count_max = -(-size[1] // old[0]) if size[1] < MAX else MAX
    if old[1] == 0:
        count_min, kept_min = (size[0] + 1 if size[0] < MAX else size[0]), size[0]
    elif old[1] <= new[0]:
        count_min, kept_min = 0, size[0]
    else:
        count_min = -(-size[0] // old[1])
    result = add(mul((count_min, count_max), new), (kept_min, kept_max))
    return CallEstimate(scale(size, 2 * _S), result)


def _join(c: Coster, target: AstNode, args: list[AstNode]) -> CallEstimate:
    items = size_estimate(c, target)
    size: Estimate = (0, 0)
    element = _element(target)
    if element is not None:
        size = mul(items, size_estimate(c, element))
    if args:
        separators = (max(items[0] - 1, 0), max(items[1] - 1, 0))
        size = add(size, mul(size_estimate(c, args[0]), separators))
    return CallEstimate(scale(size, _S), size)


def _defaults(
    c: Coster,
    call: nodes.Call,
    overload_id: str,
    target: AstNode | None,
    args: list[AstNode],
    arg_costs: list[Estimate],
) -> CallEstimate:
    """cel-go's built-in rules; everything else costs 1 plus its arguments."""
    total: Estimate = (0, 0)
    for a in arg_costs:
        total = add(total, a)
    if overload_id == "string_format" and target is not None:
        return CallEstimate(add(scale(c.size_or_unknown(target), _S), total))
    if overload_id in ("string_to_bytes", "bytes_to_string", "strings_quote") and len(args) == 1:
        size = c.size_or_unknown(args[0])
        result = {
            "string_to_bytes": (size[0], min(size[1] * 4, MAX)),
            "bytes_to_string": (size[0] // 4, size[1]),
            "strings_quote": (size[0] + 2, min(size[1] * 2 + 2, MAX)),
        }[overload_id]
        return CallEstimate(add(scale(size, _S), total), result)
    if overload_id in ("starts_with_string", "ends_with_string") and len(args) == 1:
        return CallEstimate(add(scale(c.size_or_unknown(args[0]), _S), total))
    if overload_id == "in_list" and len(args) == 2:
        return CallEstimate(add(scale(c.size_or_unknown(args[1]), 1), total))
    if overload_id == "matches_string" and target is not None and len(args) == 1:
        text = scale(add(c.size_or_unknown(target), (1, 1)), _S)
        return CallEstimate(add(mul(text, scale(c.size_or_unknown(args[0]), _R)), total))
    if overload_id == "contains_string" and target is not None and len(args) == 1:
        return CallEstimate(
            add(mul(scale(c.size_or_unknown(target), _S), scale(c.size_or_unknown(args[0]), _S)), total)
        )
    if overload_id in ("logical_or", "logical_and"):
        lhs, rhs = arg_costs
        return CallEstimate((lhs[0], add(lhs, rhs)[1]))
    if overload_id == "conditional":
        return _conditional(c, call, args, arg_costs)
    if overload_id in ("add_string", "add_bytes", "add_list") and len(args) == 2:
        return _concatenation(c, call, overload_id, args, total)
    if overload_id in ("equals", "not_equals") or (
        overload_id.startswith(("less_", "greater_")) and overload_id.rsplit("_", 1)[-1] in ("string", "bytes")
    ):
        lhs, rhs = c.size_or_unknown(args[0]), c.size_or_unknown(args[1])
        smallest = min(lhs[1], rhs[1])
        return CallEstimate(add(scale((1 if smallest > 0 else 0, smallest), _S), total))
    return CallEstimate(add((1, 1), total))


def _conditional(c: Coster, call: nodes.Call, args: list[AstNode], arg_costs: list[Estimate]) -> CallEstimate:
    size = union(c.size_or_unknown(args[1]), c.size_or_unknown(args[2]))
    assert args[1].expr is not None and args[2].expr is not None
    c.set_entry(call, _union_entry(c.entry(args[1].expr), c.entry(args[2].expr)))
    condition, then, otherwise = arg_costs
    return CallEstimate(add(condition, union(then, otherwise)), size)


def _concatenation(c: Coster, call: nodes.Call, overload_id: str, args: list[AstNode], total: Estimate) -> CallEstimate:
    result = add(c.size_or_unknown(args[0]), c.size_or_unknown(args[1]))
    assert args[0].expr is not None and args[1].expr is not None
    entry = _union_entry(c.entry(args[0].expr), c.entry(args[1].expr))
    c.set_entry(call, entry)
    if overload_id == "add_list":
        return CallEstimate(add((1, 1), total), result)
    return CallEstimate(add(scale(result, _S), total), result)


def _function_cost(
    c: Coster,
    call: nodes.Call,
    function: str,
    overload_id: str,
    target: AstNode | None,
    args: list[AstNode],
    arg_costs: list[Estimate],
) -> CallEstimate:
    total: Estimate = (0, 0)
    for a in arg_costs:
        total = add(total, a)
    found = lists_estimate(c, overload_id, target, args) or c.calls(c, function, overload_id, target, args)
    if found is not None:
        return CallEstimate(add(found.cost, total), found.result_size)
    return _defaults(c, call, overload_id, target, args, arg_costs)


def cost_call(c: Coster, call: nodes.Call) -> Estimate:
    function = c.checked.functions.get(call, call.function)
    target_node = call.target if call not in c.checked.functions else None
    if function == "dyn" and target_node is None and len(call.args) == 1:
        cost = add((1, 1), c.cost(call.args[0]))
        c.copy_sizes(call, call.args[0])
        return cost
    arg_costs = [c.cost(a) for a in call.args]
    args = [c.ast_node(a) for a in call.args]
    overloads = c.checked.overloads.get(call, ())
    if not overloads:
        return (0, 0)
    total: Estimate = (0, 0)
    target: AstNode | None = None
    if target_node is not None:
        total = add(total, c.cost(target_node))
        target = c.ast_node(target_node)
    fn_cost: Estimate = (MAX, 0)
    result: Estimate | None = None
    for overload in overloads:
        estimate = _function_cost(c, call, function, overload.id, target, args, arg_costs)
        fn_cost = union(fn_cost, estimate.cost)
        if estimate.result_size is not None:
            result = estimate.result_size if result is None else union(result, estimate.result_size)
        if overload.id in ("index_list", "index_map") and call.args:
            entry = c.entry(call.args[0])
            result = entry.value if entry is not None else None
            c.paths[call] = (*c.path(call.args[0]), "@items" if overload.id == "index_list" else "@values")
        if result is None:
            result = c.size(call)
    c.set_size(call, result)
    return add(total, fn_cost)


__all__ += ["_Entry"]
