"""Webhooks on SQLite: the `hitl_webhooks` rows (each with its cursor into `hitl_events` and its
current deliverer) and the `hitl_deliveries` log (see `hitl_graphs.storage.base.WebhookStore`).

A claim is read and written inside one `BEGIN IMMEDIATE` transaction, so of two deliverers
asking at once exactly one gets the webhook; the other sees it held by a live owner. The owner
is a liveness mark (`RunMarks`): a deliverer that died is taken over at once on the same host,
after its lease elsewhere.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any, cast

from hitl_graphs.storage.base import DeliveryOutcome, DeliveryRow, Liveness, WebhookEvent, WebhookFormat, WebhookRow
from hitl_graphs.storage.sqlite.connection import write_transaction

_COLUMNS = "id, url, events, workflow, secret, format, created_at, disabled_at, cursor"
_LOG = "webhook_id, seq, attempt, outcome, status_code, error, at, next_retry"


class SqliteWebhooks:
    """The `hitl_webhooks` and `hitl_deliveries` tables."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, marks: Liveness) -> None:
        self.conn = conn
        self.lock = lock
        self.marks = marks

    def add(self, webhook_id: str, url: str, *, events: Sequence[WebhookEvent], workflow: str | None, secret: str,
            format: WebhookFormat) -> WebhookRow:
        now = time.time()
        with write_transaction(self.conn, self.lock) as c:
            head = c.execute("SELECT seq FROM hitl_audit_head WHERE id = 1").fetchone()
            cursor = int(head[0]) if head else 0
            c.execute(f"INSERT INTO hitl_webhooks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                      (webhook_id, url, json.dumps(list(events)), workflow, secret, format, now, cursor))
        return WebhookRow(webhook_id, url, tuple(events), workflow, secret, format, now, None, cursor)

    def get(self, webhook_id: str) -> WebhookRow | None:
        with self.lock:
            got = self.conn.execute(f"SELECT {_COLUMNS} FROM hitl_webhooks WHERE id = ?", (webhook_id,)).fetchone()
        return _webhook(got) if got else None

    def listing(self, *, disabled: bool = False) -> list[WebhookRow]:
        where = "" if disabled else " WHERE disabled_at IS NULL"
        with self.lock:
            rows = self.conn.execute(f"SELECT {_COLUMNS} FROM hitl_webhooks{where} ORDER BY created_at, id").fetchall()
        return [_webhook(r) for r in rows]

    def disable(self, webhook_id: str) -> WebhookRow | None:
        with write_transaction(self.conn, self.lock) as c:
            c.execute("UPDATE hitl_webhooks SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL",
                      (time.time(), webhook_id))
            got = c.execute(f"SELECT {_COLUMNS} FROM hitl_webhooks WHERE id = ?", (webhook_id,)).fetchone()
        return _webhook(got) if got else None

    def claim(self, webhook_id: str, *, owner: str, lease_until: float) -> WebhookRow | None:
        with write_transaction(self.conn, self.lock) as c:
            got = c.execute(f"SELECT {_COLUMNS}, claimed_by, claimed_until FROM hitl_webhooks WHERE id = ?",
                            (webhook_id,)).fetchone()
            if got is None or got[7] is not None:
                return None
            holder, until = got[-2], got[-1]
            if holder is not None and holder != owner and self.marks.alive(holder, until, time.time()):
                return None
            c.execute("UPDATE hitl_webhooks SET claimed_by = ?, claimed_until = ? WHERE id = ?",
                      (owner, lease_until, webhook_id))
        return _webhook(got[:-2])

    def record(self, attempt: DeliveryRow, *, owner: str, lease_until: float) -> bool:
        with write_transaction(self.conn, self.lock) as c:
            c.execute(f"INSERT INTO hitl_deliveries ({_LOG}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (attempt.webhook_id, attempt.seq, attempt.attempt, attempt.outcome, attempt.status_code,
                       attempt.error, attempt.at, attempt.next_retry))
            done = attempt.outcome in ("delivered", "gave_up")
            return _move(c, attempt.webhook_id, attempt.seq if done else None, owner, lease_until)

    def advance(self, webhook_id: str, seq: int, *, owner: str, lease_until: float) -> bool:
        with write_transaction(self.conn, self.lock) as c:
            return _move(c, webhook_id, seq, owner, lease_until)

    def release(self, webhook_id: str, *, owner: str) -> None:
        with write_transaction(self.conn, self.lock) as c:
            c.execute("UPDATE hitl_webhooks SET claimed_by = NULL, claimed_until = NULL WHERE id = ? AND claimed_by = ?",
                      (webhook_id, owner))

    def deliveries(self, webhook_id: str | None = None, *, limit: int = 50) -> list[DeliveryRow]:
        where, args = ("WHERE webhook_id = ? ", (webhook_id,)) if webhook_id is not None else ("", ())
        with self.lock:
            rows = self.conn.execute(f"SELECT {_LOG} FROM hitl_deliveries {where}ORDER BY id DESC LIMIT ?",
                                     (*args, limit)).fetchall()
        return [DeliveryRow(r[0], r[1], r[2], cast(DeliveryOutcome, r[3]), r[4], r[5], r[6], r[7]) for r in rows]


def _move(c: sqlite3.Connection, webhook_id: str, seq: int | None, owner: str, lease_until: float) -> bool:
    """Renew `owner`'s claim and move the cursor forward to `seq` (never back); False if not held."""
    moved = c.execute(
        "UPDATE hitl_webhooks SET claimed_until = ?, cursor = max(cursor, coalesce(?, cursor)) "
        "WHERE id = ? AND claimed_by = ?",
        (lease_until, seq, webhook_id, owner),
    )
    return moved.rowcount == 1


def _webhook(r: Sequence[Any]) -> WebhookRow:
    return WebhookRow(r[0], r[1], tuple(json.loads(r[2])), r[3], r[4], cast(WebhookFormat, r[5]), r[6], r[7], r[8])
