"""Ratings of finished threads on SQLite (see `hitl_graphs.feedback`)."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime

from hitl_graphs.feedback import Feedback


class SqliteFeedback:
    """The `hitl_feedback` table: one row per rating, marked once exported."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock

    def record(self, fb: Feedback) -> None:
        with self.lock:
            self.conn.execute(
                "INSERT INTO hitl_feedback (thread_id, workflow, key, score, comment, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (fb.thread_id, fb.workflow, fb.key, fb.score, fb.comment, fb.actor, fb.at.timestamp()),
            )
            self.conn.commit()

    def listing(self, *, workflow: str | None = None, unexported: bool = False) -> list[tuple[int, Feedback]]:
        where, args = [], []
        if workflow is not None:
            where.append("workflow = ?")
            args.append(workflow)
        if unexported:
            where.append("exported = 0")
        sql = "SELECT id, thread_id, workflow, key, score, comment, actor, at FROM hitl_feedback"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self.lock:
            rows = self.conn.execute(sql + " ORDER BY at, id", args).fetchall()
        return [
            (i, Feedback(thread_id=t, workflow=w, key=k, score=s, comment=c, actor=a, at=datetime.fromtimestamp(at, UTC)))
            for i, t, w, k, s, c, a, at in rows
        ]

    def mark_exported(self, row_id: int) -> None:
        with self.lock:
            self.conn.execute("UPDATE hitl_feedback SET exported = 1 WHERE id = ?", (row_id,))
            self.conn.commit()
