"""The work queue on SQLite: a worker takes decided reviews under the one write lock, and polls.

SQLite has no row locks to skip and no notifications: one `BEGIN IMMEDIATE` transaction reads the
threads holding a decision and takes the first that no live run holds (the same liveness check as
`SqliteLedger.take_thread`), so two workers never take the same thread. An idle worker sleeps for
its timeout (`wait`), then looks again: polling, fine for the few processes one file serves.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence

from hitl_graphs.storage.base import ThreadRow
from hitl_graphs.storage.sqlite.connection import write_transaction
from hitl_graphs.storage.sqlite.liveness import RunMarks
from hitl_graphs.storage.sqlite.schema import LIVE

WAITS = ("EXISTS (SELECT 1 FROM hitl_reviews p WHERE p.thread_id = r.thread_id AND p.status = 'pending' "
         "AND json_extract(p.request, '$.middleware.interrupt_id') = json_extract(r.request, '$.middleware.interrupt_id'))")
"""Review `r` is one action of a LangChain middleware batch whose other actions still wait for a
person: nothing to apply until the last is decided (what `recover` skips too)."""


class SqliteQueue:
    """`WorkQueue` on the store's connection.

    Example:
        >>> from hitl_graphs.storage import SqliteStore
        >>> with SqliteStore(":memory:") as store:
        ...     store.queue.take_decided(owner="here:1:0", lease=60), store.queue.wait(0)
        (None, False)
    """

    announces = False
    """SQLite cannot wake a waiting process: workers poll."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, marks: RunMarks) -> None:
        self.conn = conn
        self.lock = lock
        self.marks = marks

    def take_decided(self, *, owner: str, lease: float, workflows: Sequence[str] | None = None) -> str | None:
        now = time.time()
        only = f" AND t.workflow IN ({', '.join('?' * len(workflows))})" if workflows is not None else ""
        with write_transaction(self.conn, self.lock, flush=False) as c:
            rows = c.execute(
                f"SELECT t.* FROM hitl_threads t WHERE t.status IN ('paused', 'running') AND t.{LIVE} AND EXISTS (SELECT 1 FROM "
                f"hitl_reviews r WHERE r.thread_id = t.thread_id AND r.status = 'decided' AND NOT {WAITS}){only} "
                "ORDER BY t.updated_at",
                tuple(workflows or ()),
            ).fetchall()
            for got in rows:
                row = ThreadRow(*got)
                if row.status == "running" and self.marks.alive(row.owner, row.lease_until, now):
                    continue
                c.execute("UPDATE hitl_threads SET status = 'running', owner = ?, lease_until = ?, updated_at = ? "
                          "WHERE thread_id = ?", (owner, now + lease, now, row.thread_id))
                return row.thread_id
        return None

    def next_deadline(self) -> float | None:
        with self.lock:
            row = self.conn.execute("SELECT min(deadline) FROM hitl_reviews WHERE status = 'pending' "
                                    "AND deadline IS NOT NULL").fetchone()
        return row[0] if row else None

    def wait(self, timeout: float) -> bool:
        if timeout > 0:
            time.sleep(timeout)
        return False
