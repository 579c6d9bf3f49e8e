"""Webhooks on PostgreSQL: cursors into `hitl_events` and the delivery log (see
`hitl_graphs.storage.base.WebhookStore`).

A claim locks the webhook's row (`SELECT ... FOR UPDATE`) for its transaction, so of two
deliverers asking at once exactly one gets it. Cursors are safe to keep because appends to the
history hold the chain's lock until they commit: entries become visible in `seq` order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs.storage.base import DeliveryOutcome, DeliveryRow, Liveness, WebhookEvent, WebhookFormat, WebhookRow

_COLUMNS = "id, url, events, workflow, secret, format, created_at, disabled_at, cursor"
_LOG = "webhook_id, seq, attempt, outcome, status_code, error, at, next_retry"
Conn = psycopg.Connection[DictRow]


class PostgresWebhooks:
    """The `hitl_webhooks` and `hitl_deliveries` tables."""

    def __init__(self, pool: ConnectionPool[Conn], marks: Liveness) -> None:
        self.pool = pool
        self.marks = marks

    @contextmanager
    def _tx(self) -> Iterator[Conn]:
        with self.pool.connection() as c, c.transaction():
            yield c

    def add(self, webhook_id: str, url: str, *, events: Sequence[WebhookEvent], workflow: str | None, secret: str,
            format: WebhookFormat) -> WebhookRow:
        now = time.time()
        with self._tx() as c:
            head = c.execute("SELECT seq FROM hitl_audit_head WHERE id = 1").fetchone()
            cursor = int(head["seq"]) if head else 0
            c.execute(f"INSERT INTO hitl_webhooks ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, NULL, %s)",
                      (webhook_id, url, json.dumps(list(events)), workflow, secret, format, now, cursor))
        return WebhookRow(webhook_id, url, tuple(events), workflow, secret, format, now, None, cursor)

    def get(self, webhook_id: str) -> WebhookRow | None:
        with self.pool.connection() as c:
            got = c.execute(f"SELECT {_COLUMNS} FROM hitl_webhooks WHERE id = %s", (webhook_id,)).fetchone()
        return _webhook(got) if got else None

    def listing(self, *, disabled: bool = False) -> list[WebhookRow]:
        where = "" if disabled else " WHERE disabled_at IS NULL"
        with self.pool.connection() as c:
            rows = c.execute(f"SELECT {_COLUMNS} FROM hitl_webhooks{where} ORDER BY created_at, id").fetchall()
        return [_webhook(r) for r in rows]

    def disable(self, webhook_id: str) -> WebhookRow | None:
        with self._tx() as c:
            c.execute("UPDATE hitl_webhooks SET disabled_at = %s WHERE id = %s AND disabled_at IS NULL",
                      (time.time(), webhook_id))
            got = c.execute(f"SELECT {_COLUMNS} FROM hitl_webhooks WHERE id = %s", (webhook_id,)).fetchone()
        return _webhook(got) if got else None

    def claim(self, webhook_id: str, *, owner: str, lease_until: float) -> WebhookRow | None:
        with self._tx() as c:
            got = c.execute(f"SELECT {_COLUMNS}, claimed_by, claimed_until FROM hitl_webhooks WHERE id = %s FOR UPDATE",
                            (webhook_id,)).fetchone()
            if got is None or got["disabled_at"] is not None:
                return None
            holder, until = got["claimed_by"], got["claimed_until"]
            if holder is not None and holder != owner and self.marks.alive(holder, until, time.time()):
                return None
            c.execute("UPDATE hitl_webhooks SET claimed_by = %s, claimed_until = %s WHERE id = %s",
                      (owner, lease_until, webhook_id))
        return _webhook(got)

    def record(self, attempt: DeliveryRow, *, owner: str, lease_until: float) -> bool:
        with self._tx() as c:
            c.execute(f"INSERT INTO hitl_deliveries ({_LOG}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                      (attempt.webhook_id, attempt.seq, attempt.attempt, attempt.outcome, attempt.status_code,
                       attempt.error, attempt.at, attempt.next_retry))
            done = attempt.outcome in ("delivered", "gave_up")
            return _move(c, attempt.webhook_id, attempt.seq if done else None, owner, lease_until)

    def advance(self, webhook_id: str, seq: int, *, owner: str, lease_until: float) -> bool:
        with self._tx() as c:
            return _move(c, webhook_id, seq, owner, lease_until)

    def release(self, webhook_id: str, *, owner: str) -> None:
        with self._tx() as c:
            c.execute("UPDATE hitl_webhooks SET claimed_by = NULL, claimed_until = NULL WHERE id = %s AND claimed_by = %s",
                      (webhook_id, owner))

    def deliveries(self, webhook_id: str | None = None, *, limit: int = 50) -> list[DeliveryRow]:
        where, args = ("WHERE webhook_id = %s ", (webhook_id,)) if webhook_id is not None else ("", ())
        with self.pool.connection() as c:
            rows = c.execute(f"SELECT {_LOG} FROM hitl_deliveries {where}ORDER BY id DESC LIMIT %s", (*args, limit)).fetchall()
        return [DeliveryRow(r["webhook_id"], r["seq"], r["attempt"], cast(DeliveryOutcome, r["outcome"]), r["status_code"],
                            r["error"], r["at"], r["next_retry"]) for r in rows]


def _move(c: Conn, webhook_id: str, seq: int | None, owner: str, lease_until: float) -> bool:
    """Renew `owner`'s claim and move the cursor forward to `seq` (never back); False if not held."""
    moved = c.execute(
        "UPDATE hitl_webhooks SET claimed_until = %s, cursor = GREATEST(cursor, COALESCE(%s, cursor)) "
        "WHERE id = %s AND claimed_by = %s",
        (lease_until, seq, webhook_id, owner),
    )
    return moved.rowcount == 1


def _webhook(r: Any) -> WebhookRow:
    return WebhookRow(r["id"], r["url"], tuple(json.loads(r["events"])), r["workflow"], r["secret"],
                      cast(WebhookFormat, r["format"]), r["created_at"], r["disabled_at"], r["cursor"])
