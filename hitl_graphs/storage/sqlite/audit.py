"""The audit log's SQL on SQLite: appends inside the caller's transaction, reads for verify.

The chain's rules (hashing, keys, what counts as a break) are backend-neutral and live in
`hitl_graphs.audit`; this module only stores and reads rows.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from hitl_graphs import audit
from hitl_graphs.audit import AuditHead, AuditReport, Event

_COLUMNS = "seq, thread_id, review_id, event, actor, data, at, prev_hash, hash"


def key_of(c: sqlite3.Connection) -> bytes | None:
    """The audit key the store set on its connection (see `SqliteStore(audit_key=...)`)."""
    key: bytes | None = getattr(c, "hitl_audit_key", None)
    return key


def append(c: sqlite3.Connection, thread_id: str, events: Iterable[Event], now: float) -> None:
    """Append events after the current head; call inside a write (`BEGIN IMMEDIATE`) transaction.

    Raises:
        AuditKeyError: the log is keyed and the connection has no key, or another one.
        AuditError: the head row is gone though the log has entries (nothing is written).
    """
    head = c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
    rows = audit.chain(tuple(head) if head else None, thread_id, events, now, key_of(c))
    if not rows:
        return
    if head is None and c.execute("SELECT 1 FROM hitl_events LIMIT 1").fetchone() is not None:
        (count,) = c.execute("SELECT count(*) FROM hitl_events").fetchone()
        raise audit.missing_head(count)
    c.executemany("INSERT INTO hitl_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    c.execute("INSERT OR REPLACE INTO hitl_audit_head (id, seq, hash) VALUES (1, ?, ?)", (rows[-1][0], rows[-1][8]))


class SqliteAudit:
    """Reads of the audit log (appends ride on the ledger's transactions, `append`)."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock

    def head(self) -> AuditHead:
        """The log's last entry; reads two rows whatever the log's length (see `audit.check_head`)."""
        with self.lock:
            last = self.conn.execute("SELECT seq, hash FROM hitl_events ORDER BY seq DESC LIMIT 1").fetchone()
            row = self.conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
        return audit.check_head(tuple(last) if last else None, tuple(row) if row else None)

    def recorded_decision(self, thread_id: str, review_id: str) -> dict[str, Any] | None:
        """The decision the log records for a review, if its entry is intact (`audit.recorded_decision`)."""
        key = key_of(self.conn)
        with self.lock:
            row = self.conn.execute(
                f"SELECT {_COLUMNS} FROM hitl_events WHERE thread_id = ? AND review_id = ? AND event = 'decided' "
                "ORDER BY seq DESC LIMIT 1", (thread_id, review_id)).fetchone()
            # a plain entry after a keyed one was written without the key (found from the first entry
            # on, so a log keyed from its start answers at once)
            keyed_before = row is not None and key is not None and self.conn.execute(
                "SELECT 1 FROM hitl_events WHERE seq < ? AND substr(hash, 1, 5) = 'hmac:' LIMIT 1", (row[0],)
            ).fetchone() is not None
        return audit.recorded_decision(row, key, keyed_before=keyed_before)

    def verify(self, *, expect_heads: Sequence[AuditHead] = ()) -> AuditReport:
        """Walk the whole chain with the store's key (see `audit.verify`)."""
        with self.lock:
            rows = self.conn.execute(f"SELECT {_COLUMNS} FROM hitl_events ORDER BY seq").fetchall()
            head_row = self.conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
            reviews = self.conn.execute(
                "SELECT thread_id, review_id, status, decision FROM hitl_reviews WHERE status IN ('decided', 'applied') "
                "ORDER BY thread_id, review_id").fetchall()
            requests = self.conn.execute("SELECT thread_id, review_id, request FROM hitl_reviews").fetchall()
            threads = [r[0] for r in self.conn.execute("SELECT thread_id FROM hitl_threads ORDER BY created_at, thread_id")]
        return audit.verify(rows, tuple(head_row) if head_row else None, threads=threads,
                            reviews=[(t, r, s, _json(d)) for t, r, s, d in reviews],
                            payloads=((t, r, json.loads(q).get("payload")) for t, r, q in requests),
                            key=key_of(self.conn), expect_heads=expect_heads)

    def export(self, out: TextIO, *, thread_id: str | None = None) -> int:
        """Write the log (or one thread's entries) as JSON Lines; returns the count."""
        args: tuple[str, ...]
        sql, args, requests = f"SELECT {_COLUMNS} FROM hitl_events", (), "SELECT thread_id, review_id, request FROM hitl_reviews"
        if thread_id is not None:
            sql, args, requests = sql + " WHERE thread_id = ?", (thread_id,), requests + " WHERE thread_id = ?"
        with self.lock:
            rows = self.conn.execute(sql + " ORDER BY seq", args).fetchall()
            shown = {(t, r): json.loads(q).get("payload") for t, r, q in self.conn.execute(requests, args)}
        return audit.export(rows, out, payloads=shown)


def _json(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None
