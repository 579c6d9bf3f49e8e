"""One public face per layer, each with a complete, sorted, importable `__all__` (as httpx checks).

Faces: `hitl_graphs` (the core), `hitl_graphs.templates` and each `hitl_graphs.templates.<name>`
(a template's knobs), `hitl_graphs.testing` (test doubles). Storage (`hitl_graphs.storage`) is
being built on main and is not checked here yet. Old import paths keep working.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
from types import ModuleType

import pytest

import hitl_graphs
from hitl_graphs import Runner

FACADES = ["hitl_graphs", "hitl_graphs.templates", "hitl_graphs.testing"]
"""Modules that re-export: every public name in their namespace must be in `__all__`."""

TEMPLATES = [f"hitl_graphs.templates.{name}" for name in
             ("conversation", "escalation", "multi_step", "plan_review", "tool_approval")]
"""Modules that define: every public name defined at their top level must be in `__all__`."""

CORE = {"Approve", "Modify", "Reject", "Respond", "Escalate", "Decision", "Runner", "Workflow", "register",
        "request_review", "review_node", "run_once", "HitlError", "PatchError", "create_conversation_graph",
        "create_escalation_graph", "create_multi_step_graph", "create_plan_review_graph", "create_tool_approval_graph"}


def _public_namespace(module: ModuleType) -> list[str]:
    """What `from module import *` would offer without `__all__`: public names, not submodules."""
    return sorted(name for name, value in vars(module).items()
                  if not name.startswith("_") and not isinstance(value, ModuleType))


def _defined_at_top_level(module: ModuleType) -> list[str]:
    """Public names a module's own source defines (classes, functions, constants, type aliases),
    and those it takes from its private parts (`from hitl_graphs.templates._tools import agent_tool`:
    a template split along its seams still shows one face; `_steps`, the helpers all templates
    share, is not a part of any one)."""
    names: list[str] = []
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.rsplit(".", 1)[-1].startswith("_") \
                and node.module.startswith("hitl_graphs.templates.") and node.module != "hitl_graphs.templates._steps":
            names += [a.asname or a.name for a in node.names]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return sorted(n for n in names if not n.startswith("_"))


@pytest.mark.parametrize("name", FACADES + TEMPLATES)
def test_all_is_sorted_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__), f"{name}.__all__ is not sorted"
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ lists a name twice"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ lists names it does not have: {missing}"
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)  # noqa: S102 - what a user's star import gets
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(module.__all__)


@pytest.mark.parametrize("name", FACADES)
def test_a_face_lists_every_public_name_it_holds(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == _public_namespace(module)


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_template_lists_every_public_name_it_defines(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == _defined_at_top_level(module)


def test_the_core_face_holds_the_core_and_no_layer_below_or_beside_it() -> None:
    assert CORE <= set(hitl_graphs.__all__)
    knobs = {n for t in TEMPLATES for n in importlib.import_module(t).__all__ if not n.startswith("create_")}
    doubles = set(importlib.import_module("hitl_graphs.testing").__all__)
    storage = {"SqliteStore", "HitlSqliteSaver", "default_db_path"}
    assert set(hitl_graphs.__all__) & (knobs | doubles | storage) == set()


OLD_PATHS = [
    ("hitl_graphs", "ScriptedChatModel", "hitl_graphs.testing"),
    ("hitl_graphs", "tool_call", "hitl_graphs.testing"),
    ("hitl_graphs", "SqliteStore", "hitl_graphs.store"),
    ("hitl_graphs", "HitlSqliteSaver", "hitl_graphs.store"),
    ("hitl_graphs", "default_db_path", "hitl_graphs.store"),
    ("hitl_graphs", "ALL_KINDS", "hitl_graphs.decisions"),
    ("hitl_graphs", "AnyTrigger", "hitl_graphs.templates.escalation"),
    ("hitl_graphs", "Phase", "hitl_graphs.templates.multi_step"),
    ("hitl_graphs", "plan_memory", "hitl_graphs.templates.plan_review"),
    ("hitl_graphs", "agent_tool", "hitl_graphs.templates.tool_approval"),
    ("hitl_graphs", "ConversationState", "hitl_graphs.templates.conversation"),
    ("hitl_graphs.templates", "default_levels", "hitl_graphs.templates.escalation"),
    ("hitl_graphs.templates", "review_when_marked", "hitl_graphs.templates.multi_step"),
    ("hitl_graphs.runner", "Runner", "hitl_graphs"),
]


@pytest.mark.parametrize(("old", "name", "new"), OLD_PATHS, ids=[f"{o}.{n}" for o, n, _ in OLD_PATHS])
def test_old_import_paths_still_work(old: str, name: str, new: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {old} import {name}", namespace)  # noqa: S102 - the import statement users wrote
    assert namespace[name] is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize("module", ["hitl_graphs", "hitl_graphs.templates"])
def test_every_moved_name_resolves_and_unknown_names_fail_as_usual(module: str) -> None:
    face = importlib.import_module(module)
    for name, home in face._MOVED.items():
        assert getattr(face, name) is getattr(importlib.import_module(home), name), name
    with pytest.raises(AttributeError, match=f"module '{module}' has no attribute 'nope'"):
        face.nope  # noqa: B018
    with pytest.raises(ImportError, match="cannot import name 'nope'"):
        exec(f"from {module} import nope", {})  # noqa: S102


def test_testing_docstring_example_runs() -> None:
    import hitl_graphs.testing

    result = doctest.testmod(hitl_graphs.testing, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_sync_and_async_twins_are_named_x_and_ax() -> None:
    """Every async method of `Runner` is the twin of a sync one called the same without the `a`."""
    old_names = {"await_decision"}  # the old name of `await_for_decision`, kept working
    coroutines = {name for name, fn in inspect.getmembers(Runner, inspect.iscoroutinefunction)
                  if not name.startswith("_")} - old_names
    unpaired = sorted(name for name in coroutines if not callable(getattr(Runner, name[1:], None)))
    assert unpaired == []
    assert {"astart", "aresume", "await_for_decision"} <= coroutines
