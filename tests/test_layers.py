"""The package's layers, as the README's layout table draws them: no import cycle, and the
library below the interfaces never imports an interface or the demo workflows."""

from __future__ import annotations

import ast
from pathlib import Path

import hitl_graphs

PACKAGE = Path(hitl_graphs.__file__).parent

SHIMS = {"hitl_graphs.store", "hitl_graphs.ledger", "hitl_graphs.schema", "hitl_graphs.liveness", "hitl_graphs.runner",
         "hitl_graphs.builtin"}
"""Old import paths that only re-export (a shim may point anywhere)."""


def _is_shim(m: str) -> bool:
    return m in SHIMS or m.endswith("_example")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Modules of ours imported at import time (not inside functions or `if TYPE_CHECKING`)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("hitl_graphs")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hitl_graphs") and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    return {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}


def test_no_import_cycle() -> None:
    graph = _graph()
    # a package imports its own submodules through __init__; follow module edges only
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if n.startswith(m + "."):
                continue  # a package re-exporting its children
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_library_does_not_import_its_interfaces_or_examples() -> None:
    interfaces = ("hitl_graphs.cli", "hitl_graphs.commands", "hitl_graphs.demo", "hitl_graphs.reviewer", "hitl_graphs.examples")
    above = (*interfaces, "hitl_graphs.testing", "hitl_graphs.server")  # test doubles and the server sit on top
    library = [m for m in _graph() if not m.startswith(above) and not _is_shim(m) and m != "hitl_graphs"]
    graph = _graph()
    bad = {m: sorted(i for i in graph[m] if i.startswith(interfaces)) for m in library}
    assert {m: v for m, v in bad.items() if v} == {}


def test_storage_is_reached_through_its_boundary() -> None:
    """Only the storage package names the SQLite implementation; the runtime talks to `Store`
    (the CLI and the top-level package re-export `SqliteStore` for users)."""
    graph = _graph()
    users = sorted(m for m, deps in graph.items() if any(d.startswith("hitl_graphs.storage.sqlite") for d in deps)
                   and not m.startswith("hitl_graphs.storage") and not _is_shim(m))
    assert users == [], users
