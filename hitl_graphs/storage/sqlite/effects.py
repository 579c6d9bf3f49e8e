"""Effects' results, `record_event` entries and remembered approvals on SQLite.

The graph side (`run_once`, `record_event`, `approved_before`) is `hitl_graphs.effects`; this is
the store it talks to (`EffectStore`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from hitl_graphs.audit import Event
from hitl_graphs.storage.base import RECORDED
from hitl_graphs.storage.sqlite.audit import append
from hitl_graphs.storage.sqlite.connection import pending_rows, write_transaction


class SqliteEffects:
    """Recorded effect results and remembered approvals; the runner passes it to graphs it runs."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock
        self._events = _history_buffer(conn)

    def get(self, thread_id: str, key: str) -> tuple[bool, Any]:
        with self.lock:
            row = self.conn.execute("SELECT result FROM hitl_effects WHERE thread_id = ? AND key = ?", (thread_id, key)).fetchone()
        return (True, json.loads(row[0])) if row else (False, None)

    def record_once(self, thread_id: str, key: str, event: str, data: dict[str, Any]) -> None:
        """Append `event` to the thread's audit history unless `key` was recorded before.

        It joins the next transaction on the connection (the task's writes, the next effect, or
        the ledger's record of where the run stopped) instead of costing a commit of its own.
        """
        self._events.add(thread_id, key, event, data)

    def remembered(self, thread_id: str, tool: str) -> bool:
        """Whether a person approved `tool` before in this thread's workflow, for its actor."""
        with self.lock:
            row = self.conn.execute(
                "SELECT 1 FROM hitl_threads t JOIN hitl_remembered r ON r.workflow = t.workflow AND r.actor = t.started_by "
                "WHERE t.thread_id = ? AND r.tool = ?", (thread_id, tool)).fetchone()
        return row is not None

    def remember(self, thread_id: str, tool: str, approved_by: str | None) -> bool:
        """Remember an approval of `tool` for the thread's workflow and actor; False if the thread
        has no actor (nothing to remember it for)."""
        with write_transaction(self.conn, self.lock) as c:
            added = c.execute(
                "INSERT OR IGNORE INTO hitl_remembered (workflow, actor, tool, approved_by, at) "
                "SELECT workflow, started_by, ?, ?, ? FROM hitl_threads WHERE thread_id = ? AND started_by IS NOT NULL",
                (tool, approved_by, time.time(), thread_id)).rowcount
        return bool(added)

    def put(self, thread_id: str, key: str, result: Any) -> None:
        """Record an effect's result; flushed to disk before the node goes on (it happened)."""
        with write_transaction(self.conn, self.lock) as c:
            c.execute("INSERT OR IGNORE INTO hitl_effects VALUES (?, ?, ?, ?)", (thread_id, key, json.dumps(result), time.time()))


def _record(c: sqlite3.Connection, thread_id: str, key: str, event: str, data: dict[str, Any], now: float) -> None:
    added = c.execute("INSERT OR IGNORE INTO hitl_effects VALUES (?, ?, ?, ?)", (thread_id, key, RECORDED, now)).rowcount
    if added:
        append(c, thread_id, [Event(event, data=data)], now)


class _HistoryBuffer:
    """History entries waiting for the next transaction on the connection (`PendingRows`)."""

    durable = False  # a crash before they commit re-runs the node that records them

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], tuple[str, dict[str, Any], float]] = {}

    def add(self, thread_id: str, key: str, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._rows.setdefault((thread_id, key), (event, data, time.time()))

    def waiting(self) -> bool:
        return bool(self._rows)

    def write(self, conn: sqlite3.Connection) -> Callable[[bool], None] | None:
        with self._lock:
            if not self._rows:
                return None
            rows, self._rows = self._rows, {}
        for (thread_id, key), (event, data, at) in rows.items():
            _record(conn, thread_id, key, event, data, at)

        def after(committed: bool) -> None:
            if not committed:
                with self._lock:
                    for k, v in rows.items():
                        self._rows.setdefault(k, v)

        return after


def _history_buffer(conn: sqlite3.Connection) -> _HistoryBuffer:
    """The connection's one buffer."""
    pending = pending_rows(conn)
    for rows in pending:
        if isinstance(rows, _HistoryBuffer):
            return rows
    buffer = _HistoryBuffer()
    pending.append(buffer)
    return buffer
