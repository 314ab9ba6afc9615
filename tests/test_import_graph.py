"""The package's imports run one way: no module imports, at any depth and at any place in its code (a function's
lazy import counts), a module that imports it back. A package's ``__init__.py`` only hands names on and is left
out, as are imports of a package as a whole."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

TOP = Path(__file__).resolve().parents[1] / "tslab"


def module_name(path: Path) -> str:
    parts = path.relative_to(TOP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that the file at ``path`` imports, wherever in it."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)  # ``from . import portable``
    return {name for name in out if name in modules and name != here}


def import_graph() -> dict[str, set[str]]:
    """Each module (not a package's ``__init__``) and the modules it imports."""
    files = {module_name(p): p for p in TOP.rglob("*.py") if p.name != "__init__.py"}
    return {name: imported_modules(path, set(files)) for name, path in files.items()}


def test_no_module_imports_one_that_imports_it_back():
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as exc:
        circle = " -> ".join(exc.args[1])
        raise AssertionError(
            f"an import circle: {circle}; move what the two sides share into a module of its own") from None


def test_the_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "tslab.capture.in_child" in graph["tslab.capture.server"]  # imported inside a function
    assert "tslab.capture.portable" in graph["tslab.capture.in_child"]  # ``from . import portable``
    assert "tslab.child" in graph["tslab.capture.worker"]  # ``from ..child import ...``
    assert not graph["tslab.exported._runtime"] and graph["tslab.exported.gemm"] == {"tslab.exported._runtime"}
