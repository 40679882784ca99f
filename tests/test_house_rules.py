"""House rules from STYLE.md that a script can check: one plugin per module in the registry, size limits, and an
explicit public surface (``__all__``) in every module."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import grimp

import phalanx.scheduling.plugins as plugins_pkg
from phalanx.scheduling.plugins.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "phalanx"
HELPER_MODULES = {"registry", "resource_allocation", "pod_selectors"}


def test_registry_and_plugin_modules_match_one_to_one() -> None:
    names = {}
    for mod in pkgutil.iter_modules(plugins_pkg.__path__):
        if mod.name in HELPER_MODULES:
            continue
        module = importlib.import_module(f"{plugins_pkg.__name__}.{mod.name}")
        names[module.NAME] = mod.name
        assert module.PLUGIN.name == module.NAME, f"{mod.name}: PLUGIN describes another plugin"
    assert set(names) == {name for name, spec in REGISTRY.items() if spec.modelled}
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                return list(ast.literal_eval(node.value))
    return None


def test_every_module_declares_a_complete_public_surface() -> None:
    """Every module has ``__all__``, its names exist, and everything other modules (tests and benchmarks included)
    import from it is in it: the public surface is written down, never implied (STYLE.md habit 11)."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py") if p.name != "__main__.py"}
    imported: dict[str, set[str]] = {}
    for path in [*SRC.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" not in modules and not alias.name.startswith("_"):
                        imported.setdefault(node.module, set()).add(alias.name)
    problems = []
    for name, path in sorted(modules.items()):
        declared = _declared_all(ast.parse(path.read_text()))
        if declared is None:
            problems.append(f"{name}: no __all__")
            continue
        module = importlib.import_module(name)
        problems += [
            f"{name}: __all__ names {n!r}, which it does not define" for n in declared if not hasattr(module, n)
        ]
        problems += [
            f"{name}: {n!r} is imported elsewhere but not in __all__" for n in imported.get(name, set()) - set(declared)
        ]
    assert not problems, "\n".join(problems)


def test_no_import_cycle_in_scheduling() -> None:
    """The engine's modules form no import circle, type-only imports included (the cycle context, not the engine,
    is what cycles and preemption see)."""
    graph = grimp.build_graph("phalanx", cache_dir=None)
    modules = sorted(m for m in graph.modules if m.startswith("phalanx.scheduling"))
    edges = {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith("phalanx.scheduling")}
        for m in modules
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(edges.get(module, ())):
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[module] = 2

    for module in modules:
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)
