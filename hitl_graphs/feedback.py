"""Ratings of finished threads' output, kept beside the threads and exportable on request.

A person rates what a thread produced (0 to 1, with a comment); the ratings are listed per
workflow. Nothing leaves the machine unless the user hands a client to `export_feedback`
(LangSmith's `Client` fits; any object with the same `create_feedback` method does).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

SCHEMA = """
CREATE TABLE IF NOT EXISTS hitl_feedback (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    workflow  TEXT NOT NULL,
    key       TEXT NOT NULL,
    score     REAL NOT NULL,
    comment   TEXT,
    actor     TEXT,
    at        REAL NOT NULL,
    exported  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS hitl_feedback_workflow ON hitl_feedback (workflow, at);
"""


class Feedback(BaseModel):
    """One rating of a thread's output.

    Example:
        >>> Feedback(thread_id="t", workflow="w", score=0.8, at="2026-01-01T00:00:00Z").key
        'helpfulness'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    thread_id: str
    workflow: str
    score: float = Field(ge=0.0, le=1.0)
    key: str = "helpfulness"
    comment: str | None = None
    actor: str | None = None
    at: datetime


class FeedbackClient(Protocol):
    """What `export_feedback` needs of a client: LangSmith's `Client.create_feedback`."""

    def create_feedback(self, run_id: Any, key: str, *, score: float, comment: str | None = None) -> Any: ...


def record(conn: sqlite3.Connection, lock: threading.Lock, fb: Feedback) -> None:
    with lock:
        conn.execute(
            "INSERT INTO hitl_feedback (thread_id, workflow, key, score, comment, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (fb.thread_id, fb.workflow, fb.key, fb.score, fb.comment, fb.actor, fb.at.timestamp()),
        )
        conn.commit()


def listing(conn: sqlite3.Connection, lock: threading.Lock, *, workflow: str | None = None,
            unexported: bool = False) -> list[tuple[int, Feedback]]:
    where, args = [], []
    if workflow is not None:
        where.append("workflow = ?")
        args.append(workflow)
    if unexported:
        where.append("exported = 0")
    sql = "SELECT id, thread_id, workflow, key, score, comment, actor, at FROM hitl_feedback"
    if where:
        sql += " WHERE " + " AND ".join(where)
    with lock:
        rows = conn.execute(sql + " ORDER BY at, id", args).fetchall()
    return [
        (i, Feedback(thread_id=t, workflow=w, key=k, score=s, comment=c, actor=a, at=datetime.fromtimestamp(at, UTC)))
        for i, t, w, k, s, c, a, at in rows
    ]


def export_feedback(
    conn: sqlite3.Connection,
    lock: threading.Lock,
    client: FeedbackClient,
    *,
    run_id_for: Callable[[Feedback], Any],
) -> int:
    """Send not-yet-exported ratings to `client`; each is marked exported once sent.

    `run_id_for` maps a rating to the tracing run it rates (hitl_graphs does not know your
    LangSmith run ids; record them in your state or metadata and look them up here).
    """
    sent = 0
    for row_id, fb in listing(conn, lock, unexported=True):
        client.create_feedback(run_id_for(fb), fb.key, score=fb.score, comment=fb.comment)
        with lock:
            conn.execute("UPDATE hitl_feedback SET exported = 1 WHERE id = ?", (row_id,))
            conn.commit()
        sent += 1
    return sent


def now() -> datetime:
    return datetime.fromtimestamp(time.time(), UTC)
