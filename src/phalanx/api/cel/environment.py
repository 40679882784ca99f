"""CEL environments: what Kubernetes' base environment declares, the DRA device-selector environment on top of it,
and compilation into a :class:`Program`.

``compile`` runs the whole pipeline: parse, expand macros, type-check, Kubernetes' validators, plan. Errors come
back as cel-go prints them (``ERROR: <input>:1:5: ...`` with the source line and a caret), sorted by position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from itertools import chain

from phalanx.api.cel import lib_core, lib_kubernetes, lib_lists, lib_strings
from phalanx.api.cel import types as t
from phalanx.api.cel.call_cost import kubernetes_estimate
from phalanx.api.cel.checker import Checked, check
from phalanx.api.cel.cost import AstNode, CallEstimate, Coster, Estimate, SizeEstimator, estimate
from phalanx.api.cel.decls import Declarations, Function, merge_functions
from phalanx.api.cel.errors import CelError, render_issues
from phalanx.api.cel.frame import Frame, Plan
from phalanx.api.cel.interpreter import Planner
from phalanx.api.cel.macros import expand
from phalanx.api.cel.nodes import Node
from phalanx.api.cel.parser import parse
from phalanx.api.cel.syntax import Expr
from phalanx.api.cel.types import CelType
from phalanx.api.cel.validators import validate

__all__ = ["Environment", "Program", "base_functions", "kubernetes_environment"]

TYPE_NAMES: Mapping[str, CelType] = {
    "int": t.INT,
    "uint": t.UINT,
    "double": t.DOUBLE,
    "bool": t.BOOL,
    "string": t.STRING,
    "bytes": t.BYTES,
    "list": t.list_of(t.DYN),
    "map": t.map_of(t.DYN, t.DYN),
    "null_type": t.NULL,
    "type": t.TYPE,
    "optional_type": t.opaque("optional_type"),
    "google.protobuf.Timestamp": t.TIMESTAMP,
    "google.protobuf.Duration": t.DURATION,
    "net.IP": lib_kubernetes.IP_TYPE,
    "net.CIDR": lib_kubernetes.CIDR_TYPE,
}
CallEstimator = Callable[[Coster, str, str, AstNode | None, list[AstNode]], CallEstimate | None]


@cache
def base_functions() -> tuple[Function, ...]:
    """Every function of Kubernetes' base CEL environment (v1.36), built once."""
    return tuple(
        chain(lib_core.functions(), lib_strings.functions(), lib_lists.functions(), lib_kubernetes.functions())
    )


def _no_sizes(node: AstNode) -> Estimate | None:
    return None


def _kubernetes_calls(
    c: Coster, function: str, overload_id: str, target: AstNode | None, args: list[AstNode]
) -> CallEstimate | None:
    return kubernetes_estimate(c, function, overload_id, target, args)


@dataclass(frozen=True)
class Environment:
    """Declarations plus the options that shape compilation, evaluation and cost estimation."""

    declarations: Declarations
    optimize: bool = True  # cel-go's OptOptimize, which Kubernetes sets
    validators: bool = True  # Kubernetes' AST validators (homogeneous literals, constant arguments)
    sizes: SizeEstimator = _no_sizes
    calls: CallEstimator = _kubernetes_calls

    def parse(self, expression: str) -> tuple[Expr, Node]:
        try:
            syntax = parse(expression)
            return syntax, expand(expression, syntax)
        except RecursionError:
            raise CelError("expression recursion limit exceeded") from None

    def compile(self, expression: str) -> Program:
        """Parse, check, validate and plan; raises CelError with cel-go's rendering of all issues."""
        syntax, root = self.parse(expression)
        try:
            checked = check(root, self.declarations)
            errors = checked.errors or (validate(root, checked) if self.validators else [])
        except RecursionError:
            raise CelError("expression recursion limit exceeded") from None
        if errors:
            raise CelError(render_issues(expression, errors))
        plan = Planner(checked, self.optimize).plan(root)
        return Program(expression, syntax, root, checked, plan, self)


@dataclass(frozen=True)
class Program:
    """A compiled expression: evaluate it any number of times, from any thread."""

    expression: str
    syntax: Expr
    root: Node = field(repr=False)
    checked: Checked = field(repr=False)
    plan: Plan = field(repr=False)
    environment: Environment = field(repr=False)

    @property
    def output_type(self) -> CelType:
        return self.checked.type_of(self.root)

    def evaluate(self, variables: Mapping[str, object], cost_limit: int) -> tuple[object, int]:
        """The value and the runtime cost; raises CelError on a runtime error or when the cost exceeds the limit."""
        frame = Frame(dict(variables), cost_limit)
        try:
            return self.plan(frame), frame.cost
        except RecursionError:
            raise CelError("expression nesting too deep") from None

    def estimate_cost(self) -> Estimate:
        """The worst-case cost range, as kube-apiserver estimates it."""
        env = self.environment
        return estimate(self.root, self.checked, env.sizes, env.calls)


def kubernetes_environment(
    variables: Mapping[str, CelType],
    extra: Iterable[Function] = (),
    *,
    fields: Mapping[str, Mapping[str, CelType]] | None = None,
    optimize: bool = True,
    validators: bool = True,
    sizes: SizeEstimator = _no_sizes,
    calls: CallEstimator = _kubernetes_calls,
) -> Environment:
    """Kubernetes' base environment with ``variables`` declared (and ``extra`` functions, object ``fields``)."""
    functions = merge_functions(chain(base_functions(), extra))
    declarations = Declarations(dict(variables), functions, TYPE_NAMES, fields or {})
    return Environment(declarations, optimize, validators, sizes, calls)
