"""The audit log: every event of every thread, hash-chained so an edit shows.

Each entry's hash covers its own fields and the previous entry's hash, so editing, deleting or
reordering any entry breaks the chain from that point on; `verify` names the first broken entry.
A head row (last sequence number and hash) is written in the same transaction as each append,
so deleting entries at the end shows too. This is tamper-evident, not tamper-proof: someone who
can write the file can rebuild the whole chain. Export the head hash (`hitl audit verify` prints
it) somewhere they cannot write, and compare.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TextIO

GENESIS = "0" * 64

SCHEMA = """
CREATE TABLE IF NOT EXISTS hitl_events (
    seq       INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    review_id TEXT,
    event     TEXT NOT NULL,
    actor     TEXT,
    data      TEXT NOT NULL,
    at        REAL NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hitl_events_thread ON hitl_events (thread_id, seq);
CREATE TABLE IF NOT EXISTS hitl_audit_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Event:
    """An event to append in the same transaction as the change it records."""

    event: str
    review_id: str | None = None
    actor: str | None = None
    data: dict[str, Any] | None = None


def entry_hash(prev_hash: str, seq: int, thread_id: str, review_id: str | None, event: str,
               actor: str | None, data: str, at: float) -> str:
    """The hash of one entry: its fields and the previous entry's hash, canonically encoded."""
    body = json.dumps([prev_hash, seq, thread_id, review_id, event, actor, data, repr(at)], separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def append(c: sqlite3.Connection, thread_id: str, events: Iterable[Event], now: float) -> None:
    """Append events after the current head; call inside a write (`BEGIN IMMEDIATE`) transaction."""
    head = c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
    seq, prev = head if head else (0, GENESIS)
    rows = []
    for e in events:
        seq += 1
        data = json.dumps(e.data or {}, sort_keys=True, default=str)
        digest = entry_hash(prev, seq, thread_id, e.review_id, e.event, e.actor, data, now)
        rows.append((seq, thread_id, e.review_id, e.event, e.actor, data, now, prev, digest))
        prev = digest
    if not rows:
        return
    c.executemany("INSERT INTO hitl_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    c.execute("INSERT OR REPLACE INTO hitl_audit_head (id, seq, hash) VALUES (1, ?, ?)", (seq, prev))


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What `verify` found: `ok`, how many entries it checked, and the first problem if any.

    Example:
        >>> AuditReport(ok=False, checked=3, head="ab", first_bad_seq=4, problem="entry 4 was edited").first_bad_seq
        4"""

    ok: bool
    checked: int
    head: str
    first_bad_seq: int | None = None
    problem: str | None = None


def verify(conn: sqlite3.Connection, lock: threading.Lock) -> AuditReport:
    """Walk the whole chain and report the first entry that was edited, deleted or reordered.

    Example:
        >>> conn = sqlite3.connect(":memory:")
        >>> _ = conn.executescript(SCHEMA)
        >>> append(conn, "t1", [Event("started"), Event("decided", actor="ana")], 1.0)
        >>> verify(conn, threading.Lock()).ok
        True
        >>> _ = conn.execute("UPDATE hitl_events SET actor = 'eve' WHERE seq = 2")
        >>> verify(conn, threading.Lock()).problem
        'entry 2 was edited: its content no longer matches its hash'
    """
    with lock:
        rows = conn.execute(
            "SELECT seq, thread_id, review_id, event, actor, data, at, prev_hash, hash FROM hitl_events ORDER BY seq"
        ).fetchall()
        head = conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
    prev, expected_seq, checked = GENESIS, 1, 0
    for seq, thread_id, review_id, event, actor, data, at, prev_hash, digest in rows:
        if prev_hash != prev or seq != expected_seq:
            problem = (f"entry {seq} does not follow entry {expected_seq - 1}: an entry was deleted or reordered"
                       if seq != expected_seq else f"entry {seq} does not link to the entry before it: entries were reordered or rewritten")
            return AuditReport(False, checked, prev, seq, problem)
        if entry_hash(prev_hash, seq, thread_id, review_id, event, actor, data, at) != digest:
            return AuditReport(False, checked, prev, seq, f"entry {seq} was edited: its content no longer matches its hash")
        prev, expected_seq, checked = digest, seq + 1, checked + 1
    if head is not None and (head[0], head[1]) != (expected_seq - 1, prev):
        return AuditReport(False, checked, prev, expected_seq,
                           f"the log ends at entry {expected_seq - 1} but its head says {head[0]}: entries at the end were deleted")
    return AuditReport(True, checked, prev)


def export(conn: sqlite3.Connection, lock: threading.Lock, out: TextIO, *, thread_id: str | None = None) -> int:
    """Write the log as JSON Lines (one entry per line, with its hashes); returns the count."""
    sql = "SELECT seq, thread_id, review_id, event, actor, data, at, prev_hash, hash FROM hitl_events"
    args: tuple[Any, ...] = ()
    if thread_id is not None:
        sql, args = sql + " WHERE thread_id = ?", (thread_id,)
    with lock:
        rows = conn.execute(sql + " ORDER BY seq", args).fetchall()
    for seq, tid, review_id, event, actor, data, at, prev_hash, digest in rows:
        out.write(json.dumps({"seq": seq, "thread_id": tid, "review_id": review_id, "event": event, "actor": actor,
                              "data": json.loads(data), "at": at, "prev_hash": prev_hash, "hash": digest}) + "\n")
    return len(rows)
