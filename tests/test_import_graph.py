"""The package's import graph: no cycles anywhere, and nothing below the CLI imports it.

The graph is built with `ast` from every import in ``raptor_cp`` (module-level and
inside functions), except those under ``if TYPE_CHECKING:``, which never run. A
``from package import name`` where ``name`` is a submodule (a Python module or a
compiled loop built from a ``.c`` file) is an edge to that submodule. Importing a
submodule also runs its parent packages' ``__init__``; those implicit edges are
left out, since a package's ``__init__`` re-exporting its own modules is the usual
layout, not a cycle between ideas.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "raptor_cp"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run (skips ``if TYPE_CHECKING:`` bodies)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> nx.DiGraph:
    modules = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    compiled = {module_name(p) for p in PACKAGE.rglob("*.c")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    graph.add_nodes_from(compiled)
    for name, path in modules.items():
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif node.module is None or not node.module.startswith("raptor_cp"):
                continue
            else:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in modules.keys() | compiled
                    else node.module
                    for alias in node.names
                ]
            for target in targets:
                if (target in modules or target in compiled) and target != name:
                    graph.add_edge(name, target)
    return graph


def test_the_import_graph_has_no_cycle() -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert cycles == []


def test_nothing_below_the_cli_imports_it() -> None:
    graph = import_graph()
    offenders = sorted(
        (source, target)
        for source, target in graph.edges
        if target.startswith("raptor_cp.cli") and not source.startswith("raptor_cp.cli")
    )
    assert offenders == []


def test_the_graph_sees_function_level_imports() -> None:
    """A guard on the builder itself: lazy imports inside functions are edges too."""
    graph = import_graph()
    assert graph.has_edge("raptor_cp.cli.compile", "raptor_cp.flows")
    assert graph.has_edge("raptor_cp.flows", "raptor_cp.workload.load")  # inside prepare()
