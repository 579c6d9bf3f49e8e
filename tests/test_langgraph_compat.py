"""The one fenced place that touches LangGraph's private names still works on the LangGraph installed.

If this fails after an upgrade, LangGraph moved something `hitl_graphs._langgraph_compat` relies
on: thread reuse falls back to LangGraph's own pools (slower, not wrong) until it is adapted.
"""

from __future__ import annotations

import ast
from importlib.metadata import version
from pathlib import Path

from packaging.version import Version

from hitl_graphs import _langgraph_compat as compat
from hitl_graphs import workers

PACKAGE = Path(compat.__file__).parent


def test_installed_versions_are_the_ones_the_compat_module_was_checked_against() -> None:
    for dist, (low, high) in compat.TESTED.items():
        assert Version(low) <= Version(version(dist)) < Version(high), (
            f"{dist} {version(dist)} is outside {low}..{high}: check hitl_graphs/_langgraph_compat.py against it, "
            "then widen TESTED")


def test_langgraph_still_calls_the_replaced_executor_factory() -> None:
    assert workers.install()
    assert compat.factory_is_called("__hitl_probe_test")


def test_the_loop_save_task_is_still_named_as_the_compat_module_expects() -> None:
    from langgraph.pregel import _loop

    assert "_checkpointer_put_after_previous" in Path(_loop.__file__).read_text()


def test_the_sqlite_saver_still_records_task_path() -> None:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    saver.setup()
    assert compat.writes_have_task_path(saver) is True and hasattr(saver, "_has_task_path")


def test_the_postgres_saver_still_sends_its_writes_only_through_its_cursor() -> None:
    """`put` and `put_writes` of `PostgresSaver`, captured, record every statement they would
    send (blobs, the checkpoint, its writes) and reach nothing else: on a pool that is closed,
    any other way to the server would raise."""
    from langgraph.checkpoint.base import empty_checkpoint
    from psycopg_pool import ConnectionPool

    from hitl_graphs.storage.postgres.saver import HitlPostgresSaver

    pool: ConnectionPool = ConnectionPool("postgresql://nobody@127.0.0.1:1/none", open=False)
    saver = HitlPostgresSaver(pool)
    checkpoint = {**empty_checkpoint(), "channel_values": {"plan": ["a", "b"], "n": 1}}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    out: list[compat.Statement] = []
    with compat.capturing(out):
        saved = saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"plan": "1", "n": "1"})  # type: ignore[arg-type]
        saver.put_writes(saved, [("plan", ["c"])], "task-1")
    sent = " ".join(str(query) for query, _, _ in out)
    assert all(table in sent for table in ("checkpoint_blobs", "checkpoints", "checkpoint_writes")), sent


def test_no_module_but_the_compat_module_touches_a_private_langgraph_name() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_langgraph_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("langgraph"):
                names = [node.module, *(a.name for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("langgraph")]
            elif isinstance(node, ast.Attribute) and node.attr in ("_has_task_path", "get_executor_for_config", "_cursor"):
                names = [node.attr]
            if any(part.startswith("_") and not part.startswith("__") for n in names for part in n.split(".")):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []
