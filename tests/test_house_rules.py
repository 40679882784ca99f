"""House rules from STYLE.md that a script can check: one plugin per module in the registry, size limits."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import phalanx.scheduling.plugins as plugins_pkg
from phalanx.scheduling.plugins.registry import REGISTRY

SRC = Path(__file__).resolve().parent.parent / "src" / "phalanx"
HELPER_MODULES = {"registry", "resource_allocation", "pod_selectors"}


def test_registry_and_plugin_modules_match_one_to_one() -> None:
    names = {}
    for mod in pkgutil.iter_modules(plugins_pkg.__path__):
        if mod.name in HELPER_MODULES:
            continue
        module = importlib.import_module(f"{plugins_pkg.__name__}.{mod.name}")
        names[module.NAME] = mod.name
    assert set(names) == set(REGISTRY)
    for name, module_name in names.items():
        # NodeResourcesFit lives in node_resources_fit.py
        snake = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
        assert module_name == snake


def test_size_limits() -> None:
    """Functions at most 80 lines, modules at most 1,000 (STYLE.md habit 8, hard caps)."""
    too_long = []
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        if text.count("\n") > 1000:
            too_long.append(f"{path}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                length = node.end_lineno - node.lineno + 1
                if length > 80:
                    too_long.append(f"{path}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, "\n".join(too_long)
