"""Which saver runs a workflow, and what a user's own saver choice maps to.

The runner keeps its ledger (pending reviews, claims, audit) in the same database as the
checkpoints, so a decision and the checkpoint it applies to commit together. It therefore brings
its own saver (the store's: `HitlSqliteSaver`, LangGraph's `SqliteSaver` with the same tables, or
LangGraph's `PostgresSaver`) and never runs a graph on another one:

| you use                         | with hitl_graphs                                                   |
|---------------------------------|--------------------------------------------------------------------|
| `SqliteSaver` on a file         | `Runner.open(that_file)`; threads already there: `runner.adopt`     |
| `AsyncSqliteSaver` on a file    | the same file, the async methods (`await runner.astart(...)`, ...)  |
| `InMemorySaver`                 | `Runner.open(":memory:")` (one process)                            |
| `PostgresSaver`                 | `Runner.open("postgresql://...")`: the same tables, our store      |
| `compile(checkpointer=...)`     | replaced by the runner's saver, with a `CheckpointerReplacedWarning` |

A saver handed to `Runner(...)` in place of a store is refused with the line to write instead.
"""

from __future__ import annotations

import sqlite3
from typing import Any


def not_a_store(given: Any) -> str:
    """The refusal for `Runner(x)` when `x` is not a store (a LangGraph saver, a path)."""
    name = type(given).__name__
    if isinstance(given, str):
        return f"Runner takes an open store, not a path: use Runner.open({given!r})"
    path = _path_of(given)
    where = f"Runner.open({path!r})" if path else "Runner.open(PATH) on the file it writes"
    async_note = (" and the async methods (`await runner.astart(...)`, `aresume`, `astream`)"
                  if "Async" in name else "")
    return (f"Runner takes a store (SqliteStore, PostgresStore), got {name}: the runner brings its own saver, on the "
            f"same database as its ledger; use {where}{async_note}. Threads your saver already paused in that file: `runner.adopt`. "
            "See `hitl_graphs.runtime.savers` for how each LangGraph saver maps")


def _path_of(saver: Any) -> str | None:
    conn = getattr(saver, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return None  # aiosqlite's connection says nothing without awaiting it
    try:
        rows = conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.Error:
        return None
    main = [r[2] for r in rows if r[1] == "main"]
    return main[0] if main and main[0] else ":memory:"
