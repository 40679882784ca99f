"""Suite-wide collection rules: which tests share a pytest-xdist worker.

``scripts/test`` runs the suite on two workers (``-n 2 --dist loadgroup``). Tests that hold machine-wide
resources stay together on one worker, in order: the real-cluster tier (its control planes are session fixtures,
one per worker would start each twice), the deploy guard (root, cgroups, network namespaces, BPF programs) and the
Ray sweep (one local Ray instance). Everything else is spread over both."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_GROUPS = {
    "e2e": "real-cluster",
    "guard": "guard",
}
_FILES = {"sim/test_sweep_ray.py": "ray"}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Marked as each test is collected, so the mark is there before any collection_modifyitems hook (xdist's
    reads it into the node id there)."""
    try:
        rel = Path(str(item.path)).resolve().relative_to(_HERE)
    except ValueError:
        return
    group = _FILES.get(rel.as_posix()) or _GROUPS.get(rel.parts[0])
    if group is not None:
        item.add_marker(pytest.mark.xdist_group(group))
