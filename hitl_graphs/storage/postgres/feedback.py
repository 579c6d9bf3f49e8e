"""Ratings of finished threads on PostgreSQL (see `hitl_graphs.feedback`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs.feedback import Feedback


class PostgresFeedback:
    """The `hitl_feedback` table: one row per rating, marked once exported."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[DictRow]]) -> None:
        self.pool = pool

    def record(self, fb: Feedback) -> None:
        with self.pool.connection() as c:
            c.execute("INSERT INTO hitl_feedback (thread_id, workflow, key, score, comment, actor, at) "
                      "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                      (fb.thread_id, fb.workflow, fb.key, fb.score, fb.comment, fb.actor, fb.at.timestamp()))

    def listing(self, *, workflow: str | None = None, unexported: bool = False) -> list[tuple[int, Feedback]]:
        where: list[str] = []
        args: list[Any] = []
        if workflow is not None:
            where.append("workflow = %s")
            args.append(workflow)
        if unexported:
            where.append("NOT exported")
        sql = "SELECT id, thread_id, workflow, key, score, comment, actor, at FROM hitl_feedback"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self.pool.connection() as c:
            rows = c.execute(sql + " ORDER BY at, id", args).fetchall()
        return [(r["id"], Feedback(thread_id=r["thread_id"], workflow=r["workflow"], key=r["key"], score=r["score"],
                                   comment=r["comment"], actor=r["actor"], at=datetime.fromtimestamp(r["at"], UTC)))
                for r in rows]

    def mark_exported(self, row_id: int) -> None:
        with self.pool.connection() as c:
            c.execute("UPDATE hitl_feedback SET exported = TRUE WHERE id = %s", (row_id,))
