"""The audit log's SQL on SQLite: appends inside the caller's transaction, reads for verify.

The chain's rules (hashing, keys, what counts as a break) are backend-neutral and live in
`hitl_graphs.audit`; this module only stores and reads rows, packed as `packing` says (an entry
keeps no prev_hash: reads take it from the entry before).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

from hitl_graphs import audit
from hitl_graphs.audit import AuditHead, AuditReport, Event, Row
from hitl_graphs.storage.sqlite.packing import pack_hash, prev_hash, unpack_hash

# an entry with the hash of the entry before it (a primary-key lookup), as `audit.Row` reads
_ROWS = ("SELECT e.seq, e.thread_id, e.review_id, e.event, e.actor, e.data, e.at, p.hash, e.hash FROM hitl_events e "
         "LEFT JOIN hitl_events p ON p.seq = e.seq - 1")


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
    head = _head(c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone())
    rows = audit.chain(head, thread_id, events, now, key_of(c))
    if not rows:
        return
    if head is None and c.execute("SELECT 1 FROM hitl_events LIMIT 1").fetchone() is not None:
        (count,) = c.execute("SELECT count(*) FROM hitl_events").fetchone()
        raise audit.missing_head(count)
    c.executemany("INSERT INTO hitl_events (seq, thread_id, review_id, event, actor, data, at, hash) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(*r[:7], pack_hash(r[8])) for r in rows])
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
        return audit.check_head(_head(last), _head(row))

    def recorded_decision(self, thread_id: str, review_id: str) -> dict[str, Any] | None:
        """The decision the log records for a review, if its entry is intact (`audit.recorded_decision`)."""
        key = key_of(self.conn)
        with self.lock:
            got = self.conn.execute(
                f"{_ROWS} WHERE e.thread_id = ? AND e.review_id = ? AND e.event = 'decided' "
                "ORDER BY e.seq DESC LIMIT 1", (thread_id, review_id)).fetchone()
            row = _row(got) if got else None
            # a plain entry after a keyed one was written without the key (found from the first entry
            # on, so a log keyed from its start answers at once)
            keyed_before = row is not None and key is not None and self.conn.execute(
                "SELECT 1 FROM hitl_events WHERE seq < ? AND (typeof(hash) = 'blob' AND length(hash) = 36 "
                "OR substr(hash, 1, 5) = 'hmac:') LIMIT 1", (row[0],)
            ).fetchone() is not None
        return audit.recorded_decision(row, key, keyed_before=keyed_before)

    def verify(self, *, expect_heads: Sequence[AuditHead] = ()) -> AuditReport:
        """Walk the whole chain with the store's key (see `audit.verify`)."""
        with self.lock:
            rows = self.conn.execute("SELECT seq, thread_id, review_id, event, actor, data, at, hash FROM hitl_events "
                                     "ORDER BY seq").fetchall()
            head_row = self.conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
            reviews = self.conn.execute(
                "SELECT thread_id, review_id, status, decision FROM hitl_reviews WHERE status IN ('decided', 'applied') "
                "ORDER BY thread_id, review_id").fetchall()
            requests = self.conn.execute("SELECT thread_id, review_id, request FROM hitl_reviews").fetchall()
            threads = [r[0] for r in self.conn.execute("SELECT thread_id FROM hitl_threads ORDER BY created_at, thread_id")]
        return audit.verify(_linked(rows), _head(head_row), threads=threads,
                            reviews=[(t, r, s, _json(d)) for t, r, s, d in reviews],
                            payloads=((t, r, json.loads(q).get("payload")) for t, r, q in requests),
                            key=key_of(self.conn), expect_heads=expect_heads)

    def export(self, out: TextIO, *, thread_id: str | None = None) -> int:
        """Write the log (or one thread's entries) as JSON Lines; returns the count."""
        args: tuple[str, ...]
        sql, args, requests = _ROWS, (), "SELECT thread_id, review_id, request FROM hitl_reviews"
        if thread_id is not None:
            sql, args, requests = sql + " WHERE e.thread_id = ?", (thread_id,), requests + " WHERE thread_id = ?"
        with self.lock:
            rows = [_row(r) for r in self.conn.execute(sql + " ORDER BY e.seq", args)]
            shown = {(t, r): json.loads(q).get("payload") for t, r, q in self.conn.execute(requests, args)}
        return audit.export(rows, out, payloads=shown)


def _json(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None


def _head(row: tuple[Any, ...] | None) -> tuple[int, str] | None:
    """A (seq, hash) row with its hash unpacked."""
    return (row[0], unpack_hash(row[1])) if row else None


def _row(r: tuple[Any, ...]) -> Row:
    """An entry read with `_ROWS`: its previous entry's hash and its own, unpacked."""
    return (*r[:7], prev_hash(r[0], r[7]), unpack_hash(r[8]))


def _linked(rows: Iterable[tuple[Any, ...]]) -> Iterator[Row]:
    """Entries read in seq order without their previous entry's hash, given it from the row before
    (the same as `_ROWS` reads, without a lookup per entry)."""
    before: tuple[int, bytes | str] | None = None
    for r in rows:
        prev = prev_hash(r[0], before[1] if before is not None and before[0] == r[0] - 1 else None)
        yield (*r[:7], prev, unpack_hash(r[7]))
        before = (r[0], r[7])
