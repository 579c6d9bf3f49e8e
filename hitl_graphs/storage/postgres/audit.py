"""The audit log's SQL on PostgreSQL: appends inside the caller's transaction, reads for verify.

The chain's rules are backend-neutral (`hitl_graphs.audit`). One global chain means one writer at a
time: an append takes a transaction-level advisory lock before it reads the head, so two
transactions never extend the same head (with an empty log there is no head row to lock with
`FOR UPDATE`). The lock is released at commit or rollback, and the commit does not wait for the
disk while holding it: the transaction commits with `synchronous_commit = off` and is flushed
after (`commits`), so appends from many workers share flushes instead of taking one each. Since
the lock is held until the commit is visible, `seq` order is commit order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, TextIO

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs import audit
from hitl_graphs.audit import AuditHead, AuditReport, Event, Row

#: The advisory lock an append holds until its transaction ends: b"hitl" high, 2 ("audit") low.
AUDIT_LOCK_KEY: Final[int] = (0x6869746C << 32) | 2
_COLUMNS = "seq, thread_id, review_id, event, actor, data, at, prev_hash, hash"
_APPEND = (  # the entries and the head row in one statement: one round trip under the lock
    f"WITH added AS (INSERT INTO hitl_events ({_COLUMNS}) SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], "
    "%s::text[], %s::text[], %s::text[], %s::float8[], %s::text[], %s::text[])) "
    "INSERT INTO hitl_audit_head (id, seq, hash) VALUES (1, %s, %s) "
    "ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash"
)


def append(c: psycopg.Connection[DictRow], thread_id: str, events: Iterable[Event], now: float, key: bytes | None) -> None:
    """Append events after the current head; call inside the transaction of the change they record,
    as its last statement, so that the lock is held for as little as possible: two round trips
    (the lock and the head in one pipeline; the entries and the head row in one statement), then
    the commit, which releases it without waiting for the disk (`commits`).

    Raises:
        AuditKeyError: the log is keyed and `key` is missing or another one.
        AuditError: the head row is gone though the log has entries (nothing is written).
    """
    events = list(events)
    if not events:
        return
    with c.pipeline():  # the head is read after the lock is granted: a statement of its own, its own snapshot
        c.execute("SELECT pg_advisory_xact_lock(%s)", (AUDIT_LOCK_KEY,))
        got = c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1")
    head = got.fetchone()
    rows = audit.chain((head["seq"], head["hash"]) if head else None, thread_id, events, now, key)
    if head is None and c.execute("SELECT 1 FROM hitl_events LIMIT 1").fetchone() is not None:
        count = c.execute("SELECT count(*) AS n FROM hitl_events").fetchone()
        raise audit.missing_head(int(count["n"]) if count else 0)
    c.execute(_APPEND, [list(column) for column in zip(*rows)] + [rows[-1][0], rows[-1][8]])


def _row(r: DictRow) -> Row:
    return (r["seq"], r["thread_id"], r["review_id"], r["event"], r["actor"], r["data"], r["at"], r["prev_hash"], r["hash"])


class PostgresAudit:
    """Reads of the audit log (appends ride on the ledger's transactions, `append`)."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[DictRow]], key: bytes | None) -> None:
        self.pool = pool
        self.key = key

    def head(self) -> AuditHead:
        """The log's last entry, checked against the head row (see `audit.check_head`)."""
        with self.pool.connection() as c, c.transaction():
            last = c.execute("SELECT seq, hash FROM hitl_events ORDER BY seq DESC LIMIT 1").fetchone()
            row = c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
        return audit.check_head((last["seq"], last["hash"]) if last else None, (row["seq"], row["hash"]) if row else None)

    def recorded_decision(self, thread_id: str, review_id: str) -> dict[str, Any] | None:
        """The decision the log records for a review, if its entry is intact (`audit.recorded_decision`)."""
        with self.pool.connection() as c:
            got = c.execute(
                f"SELECT {_COLUMNS} FROM hitl_events WHERE thread_id = %s AND review_id = %s AND event = 'decided' "
                "ORDER BY seq DESC LIMIT 1", (thread_id, review_id)).fetchone()
            keyed_before = got is not None and self.key is not None and c.execute(
                "SELECT 1 FROM hitl_events WHERE seq < %s AND left(hash, 5) = 'hmac:' LIMIT 1", (got["seq"],)
            ).fetchone() is not None
        return audit.recorded_decision(_row(got) if got else None, self.key, keyed_before=keyed_before)

    def verify(self, *, expect_heads: Sequence[AuditHead] = ()) -> AuditReport:
        """Walk the whole chain with the store's key (see `audit.verify`), from one snapshot."""
        with self.pool.connection() as c, c.transaction():
            c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows = [_row(r) for r in c.execute(f"SELECT {_COLUMNS} FROM hitl_events ORDER BY seq")]
            head = c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
            reviews = c.execute(
                "SELECT thread_id, review_id, status, decision FROM hitl_reviews WHERE status IN ('decided', 'applied') "
                "ORDER BY thread_id, review_id").fetchall()
            requests = c.execute("SELECT thread_id, review_id, request FROM hitl_reviews").fetchall()
            threads = [r["thread_id"] for r in c.execute("SELECT thread_id FROM hitl_threads ORDER BY created_at, thread_id")]
        return audit.verify(
            rows, (head["seq"], head["hash"]) if head else None, threads=threads,
            reviews=[(r["thread_id"], r["review_id"], r["status"], _json(r["decision"])) for r in reviews],
            payloads=((r["thread_id"], r["review_id"], json.loads(r["request"]).get("payload")) for r in requests),
            key=self.key, expect_heads=expect_heads,
        )

    def export(self, out: TextIO, *, thread_id: str | None = None) -> int:
        """Write the log (or one thread's entries) as JSON Lines; returns the count."""
        args: tuple[str, ...]
        sql, args, requests = f"SELECT {_COLUMNS} FROM hitl_events", (), "SELECT thread_id, review_id, request FROM hitl_reviews"
        if thread_id is not None:
            sql, args, requests = sql + " WHERE thread_id = %s", (thread_id,), requests + " WHERE thread_id = %s"
        with self.pool.connection() as c, c.transaction():
            rows = [_row(r) for r in c.execute(sql + " ORDER BY seq", args)]
            shown = {(r["thread_id"], r["review_id"]): json.loads(r["request"]).get("payload")
                     for r in c.execute(requests, args)}
        return audit.export(rows, out, payloads=shown)


def _json(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None
