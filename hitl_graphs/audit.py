"""The audit log: every event of every thread, hash-chained so an edit shows.

Each entry's hash covers its own fields and the previous entry's hash, so editing, deleting or
reordering any entry breaks the chain from that point on; `verify` names the first broken entry.
A head row (last sequence number and hash) is written in the same transaction as each append, so
deleting entries at the end shows too, and so does deleting the head row with them. `verify` also
holds the ledger to the log: every review the ledger says was decided must have the decision the
log records (a decision written straight into the ledger is found, and `recover` will not apply
it).

What it does not stop on its own: whoever can write the file can rebuild the whole chain from
scratch. Two defences, either or both:

- Keep the head elsewhere: `hitl audit head` prints the last entry's number and hash; store it
  where the database's writers cannot (write-once storage, another machine, a ticket), and
  `hitl audit verify --expect-head SEQ:HASH` checks that entry is still in the log, unchanged.
- A secret key: with `HITL_AUDIT_KEY` set (or `SqliteStore(audit_key=...)`), each entry's hash is
  an HMAC under it, so a chain rebuilt or extended without the key fails `verify` (run with the
  key). Entries written before the key was set stay plain; once one entry is keyed, every later
  one must be, and a log with no keyed entry fails a keyed `verify` (rebuilt without the key).
  The key protects the log only as far as the key is kept from the database's writers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

KEY_ENV = "HITL_AUDIT_KEY"

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
               actor: str | None, data: str, at: float, key: bytes | None = None) -> str:
    """The hash of one entry: its fields and the previous entry's hash, canonically encoded;
    an HMAC-SHA256 under `key` when one is given."""
    body = json.dumps([prev_hash, seq, thread_id, review_id, event, actor, data, repr(at)], separators=(",", ":")).encode()
    if key is None:
        return hashlib.sha256(body).hexdigest()
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def key_from_env() -> bytes | None:
    """`$HITL_AUDIT_KEY` as bytes, None when unset or empty."""
    value = os.environ.get(KEY_ENV)
    return value.encode() if value else None


def key_of(c: sqlite3.Connection) -> bytes | None:
    """The audit key the store set on its connection (see `SqliteStore(audit_key=...)`)."""
    key: bytes | None = getattr(c, "hitl_audit_key", None)
    return key


def append(c: sqlite3.Connection, thread_id: str, events: Iterable[Event], now: float) -> None:
    """Append events after the current head; call inside a write (`BEGIN IMMEDIATE`) transaction."""
    head = c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
    seq, prev = head if head else (0, GENESIS)
    key = key_of(c)
    rows = []
    for e in events:
        seq += 1
        data = json.dumps(e.data or {}, sort_keys=True, default=str)
        digest = entry_hash(prev, seq, thread_id, e.review_id, e.event, e.actor, data, now, key)
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
    head_seq: int = 0
    keyed: bool = False
    """Whether entries are keyed with the key `verify` was given (from the first keyed one on)."""


@dataclass(frozen=True, slots=True)
class AuditHead:
    """The log's last entry: keep `f"{seq}:{hash}"` where the database's writers cannot write.

    Example:
        >>> str(AuditHead(seq=12, hash="9f" * 32))[:6]
        '12:9f9'"""

    seq: int
    hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"

    @classmethod
    def parse(cls, text: str) -> AuditHead:
        """Read `SEQ:HASH` (what `hitl audit head` prints).

        Raises:
            ValueError: not of that form."""
        seq, sep, digest = text.strip().partition(":")
        if not sep or not seq.isdigit() or len(digest) != 64 or any(ch not in "0123456789abcdef" for ch in digest):
            raise ValueError(f"an audit head reads SEQ:HASH (64 hex digits), as `hitl audit head` prints it; got {text!r}")
        return cls(int(seq), digest)


def head(conn: sqlite3.Connection, lock: threading.Lock) -> AuditHead:
    """The current head (entry 0 and the genesis hash for an empty log)."""
    with lock:
        row = conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
    return AuditHead(*row) if row else AuditHead(0, GENESIS)


def decision_of(data: dict[str, Any]) -> dict[str, Any]:
    """The decision a `decided` entry records (its data without who won the race and the
    values a `Modify` replaced), to compare with the ledger's."""
    return {k: v for k, v in data.items() if k not in ("by", "original")}


def recorded_decision(conn: sqlite3.Connection, lock: threading.Lock, thread_id: str, review_id: str) -> dict[str, Any] | None:
    """The decision the log records for a review, if its entry is intact (None otherwise).

    `recover` applies a decision from the ledger only if it equals this: a decision written
    straight into the ledger has no entry, and a forged entry does not hash right (without the
    key, when one is set, it cannot)."""
    key = key_of(conn)
    with lock:
        row = conn.execute(
            "SELECT seq, thread_id, review_id, event, actor, data, at, prev_hash, hash FROM hitl_events "
            "WHERE thread_id = ? AND review_id = ? AND event = 'decided' ORDER BY seq DESC LIMIT 1",
            (thread_id, review_id),
        ).fetchone()
    if row is None:
        return None
    seq, tid, rid, event, actor, data, at, prev_hash, digest = row
    hashes = {entry_hash(prev_hash, seq, tid, rid, event, actor, data, at)}
    if key is not None:
        hashes.add(entry_hash(prev_hash, seq, tid, rid, event, actor, data, at, key))
    if digest not in hashes:
        return None
    return decision_of(json.loads(data))


def verify(
    conn: sqlite3.Connection,
    lock: threading.Lock,
    *,
    key: bytes | None = None,
    expect_heads: Sequence[AuditHead] = (),
) -> AuditReport:
    """Walk the whole chain and report the first entry that was edited, deleted or reordered, a
    missing or wrong head, a ledger decision the log does not record, or a head kept elsewhere
    (`expect_heads`) that is no longer in the log. With `key`, entries must be keyed from the first
    keyed one on, and at least one must be.

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
        head_row = conn.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        reviews = conn.execute(
            "SELECT thread_id, review_id, status, decision FROM hitl_reviews WHERE status IN ('decided', 'applied') "
            "ORDER BY thread_id, review_id"
        ).fetchall() if "hitl_reviews" in tables else []
        threads = conn.execute("SELECT count(*) FROM hitl_threads").fetchone()[0] if "hitl_threads" in tables else 0
    prev, expected_seq, checked, keyed = GENESIS, 1, 0, False
    hashes: dict[int, str] = {}
    decided: dict[tuple[str, str], dict[str, Any]] = {}

    def broken(seq: int | None, problem: str) -> AuditReport:
        return AuditReport(False, checked, prev, seq, problem, expected_seq - 1, keyed)

    for seq, thread_id, review_id, event, actor, data, at, prev_hash, digest in rows:
        if prev_hash != prev or seq != expected_seq:
            return broken(seq, f"entry {seq} does not follow entry {expected_seq - 1}: an entry was deleted or reordered"
                          if seq != expected_seq else
                          f"entry {seq} does not link to the entry before it: entries were reordered or rewritten")
        plain = entry_hash(prev_hash, seq, thread_id, review_id, event, actor, data, at) == digest
        if key is not None and entry_hash(prev_hash, seq, thread_id, review_id, event, actor, data, at, key) == digest:
            keyed = True
        elif plain and keyed:
            return broken(seq, f"entry {seq} is not keyed with {KEY_ENV} though entries before it are: "
                               "it was written or rewritten without the key")
        elif not plain:  # (or keyed under a key verify was not given: without the key nobody can tell)
            return broken(seq, f"entry {seq} was edited: its content no longer matches its hash")
        if event == "decided" and review_id is not None:
            decided[(thread_id, review_id)] = decision_of(json.loads(data))
        hashes[seq] = digest
        prev, expected_seq, checked = digest, seq + 1, checked + 1
    last = expected_seq - 1
    if rows and head_row is None:
        return broken(None, f"the head row is missing while the log has {last} entries: it was deleted")
    if head_row is not None and (head_row[0], head_row[1]) != (last, prev):
        return broken(last + 1, f"the log ends at entry {last} but its head says {head_row[0]}: entries at the end were "
                                "deleted" if head_row[0] > last else
                                f"the log ends at entry {last} but its head says {head_row[0]}: the head was rewritten")
    if not rows and threads:
        return broken(None, f"the log is empty but the ledger holds {threads} thread(s): its entries were deleted")
    if key is not None and rows and not keyed:
        return broken(None, f"no entry is keyed with this {KEY_ENV}: the log was rebuilt without the key, the key is "
                            "wrong, or nothing was written since it was set")
    for expect in expect_heads:
        if hashes.get(expect.seq) != expect.hash:
            return broken(expect.seq, f"the head kept elsewhere ({expect.seq}:{expect.hash[:12]}...) is not in the log: "
                                      "entries were deleted or the log was rebuilt")
    for thread_id, review_id, status, decision in reviews:
        recorded = decided.get((thread_id, review_id))
        if recorded is None:
            return broken(None, f"review {review_id!r} of thread {thread_id!r} is {status} but the log records no "
                                "decision for it: the ledger was edited")
        if decision is not None and json.loads(decision) != recorded:
            return broken(None, f"review {review_id!r} of thread {thread_id!r} holds a decision other than the one the "
                                "log records: the ledger was edited")
    return AuditReport(True, checked, prev, head_seq=last, keyed=keyed)


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
