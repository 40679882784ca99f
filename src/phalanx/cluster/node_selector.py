"""Node selectors as vector operations: which nodes of the table satisfy a requirement, a term, or ORed terms.

Shared by NodeAffinity, PodTopologySpread and DRA (slice and device node selectors, allocation node selectors).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phalanx.api.models import NodeSelectorRequirement, NodeSelectorTerm
from phalanx.arrays import BoolArray
from phalanx.cluster.nodes import NodeTable

__all__ = ["requirement_mask", "term_mask", "terms_mask"]


def requirement_mask(req: NodeSelectorRequirement, nodes: NodeTable) -> BoolArray:
    """Nodes whose labels satisfy one requirement (labels.Selector semantics: NotIn and DoesNotExist match a
    missing label; Gt and Lt need both sides to be integers)."""
    col = nodes.label(req.key)
    op = req.operator
    if op == "In":
        return col.mask_in(req.values)
    if op == "NotIn":
        return ~col.mask_in(req.values)
    if op == "Exists":
        return col.present()
    if op == "DoesNotExist":
        return ~col.present()
    if op in ("Gt", "Lt") and len(req.values) == 1:
        try:
            bound = int(req.values[0])
        except ValueError:
            return np.zeros(len(nodes), dtype=bool)
        values, ok = col.integers()
        return ok & (values > bound if op == "Gt" else values < bound)
    return np.zeros(len(nodes), dtype=bool)


def _field_mask(req: NodeSelectorRequirement, nodes: NodeTable) -> BoolArray:
    if req.key != "metadata.name" or req.operator not in ("In", "NotIn"):
        return np.zeros(len(nodes), dtype=bool)
    mask = np.zeros(len(nodes), dtype=bool)
    for name in req.values:
        if name in nodes.index:
            mask[nodes.index[name]] = True
    return mask if req.operator == "In" else ~mask


def term_mask(term: NodeSelectorTerm, nodes: NodeTable) -> BoolArray:
    """A term matches when all its expressions and fields do; an empty term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return np.zeros(len(nodes), dtype=bool)
    mask = np.ones(len(nodes), dtype=bool)
    for req in term.match_expressions:
        mask &= requirement_mask(req, nodes)
    for req in term.match_fields:
        mask &= _field_mask(req, nodes)
    return mask


def terms_mask(terms: Sequence[NodeSelectorTerm], nodes: NodeTable) -> BoolArray:
    """Terms are ORed."""
    mask = np.zeros(len(nodes), dtype=bool)
    for term in terms:
        mask |= term_mask(term, nodes)
    return mask
