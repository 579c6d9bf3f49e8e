"""The audit log's SQL on PostgreSQL: appends inside the caller's transaction, reads for verify.

The chain's rules are backend-neutral (`hitl_graphs.audit`). Here an entry links to the previous
entry of its own thread, so appends to different threads never wait for one another, and the
database binds every entry into the one global chain while it numbers it: its `anchor` is
`audit.anchor_hash` of the previous anchor, its `seq` and its hash, computed by the SQL function
`hitl_audit_append` (`schema`) under a transaction-level advisory lock.

Two locks, and how long each is held:

- the thread's (an advisory lock keyed by the thread id's hash), taken by the statement that
  reads the thread's last entry (`hitl_audit_thread_head` reads `hitl_audit_threads`), queued
  with the transaction's other statements (`commits.transaction` runs in pipeline mode), then
  held until the commit: two transactions never extend the same thread's head;
- the global one, taken by `hitl_audit_append`, which is sent in the same round trip as the
  COMMIT (`commits.tail`): it is held while the server numbers the entries and commits, never
  while a client process waits for a core. With many processes on few cores, a client holding a
  lock across round trips is often descheduled and every other writer queues behind it (a
  convoy that grows with the number of processes); a lock held only inside the server is not.

The global lock is held until the commit is visible, so `seq` order is still commit order
(`events_after`'s cursor relies on it). The commit does not wait for the disk while holding it:
the transaction commits with `synchronous_commit = off` and is flushed after (`commits`).

Entries written before schema 5 have no anchor: they form the old global chain (each linked to
the entry before it), and the first anchored entry's anchor follows the last of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs import audit
from hitl_graphs.audit import AuditHead, AuditReport, Event, Row
from hitl_graphs.storage.postgres.commits import tail

#: The advisory lock `hitl_audit_append` holds until its transaction ends: b"hitl" high, 2 ("audit") low.
AUDIT_LOCK_KEY: Final[int] = (0x6869746C << 32) | 2
#: The first key of a thread's advisory lock (`pg_advisory_xact_lock(int, int)`: a space of its own),
#: the second being `hashtext(thread_id)`; two threads sharing a hash only wait for each other.
THREAD_LOCK_KEY: Final[int] = 0x6869746C
#: SQLSTATEs `hitl_audit_append` raises: the log is keyed with another key (message: the last
#: entry's hash); the head row is gone though the log has entries (message: their count).
KEYED_STATE: Final[str] = "HT001"
NO_HEAD_STATE: Final[str] = "HT002"
_COLUMNS = "seq, thread_id, review_id, event, actor, data, at, prev_hash, hash"
_APPEND = ("SELECT hitl_audit_append(%s::text[], %s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], "
           "%s::float8[], %s::text[], %s::text[], %s)")


@dataclass
class _Appends:
    """The entries a transaction appends, sent with its COMMIT (`commits.Tail`).

    Each thread's head is read when its lock is queued (`lock`); the entries are chained onto it
    at commit, when the head has arrived with the transaction's earlier statements."""

    key: bytes | None
    heads: dict[str, psycopg.Cursor[DictRow]] = field(default_factory=dict)  # the read of each thread's last entry
    events: list[tuple[str, list[Event], float]] = field(default_factory=list)
    relaxes_commit: bool = True  # `lock` ran `hitl_audit_thread_head`, which sets it (made with the first lock)

    def send(self, c: psycopg.Connection[DictRow]) -> None:
        if not self.events:
            return
        rows: list[Row] = []
        last: dict[str, tuple[int, str] | None] = {}
        for thread_id, events, now in self.events:
            if thread_id not in last:
                got = self.heads[thread_id].fetchone()
                last[thread_id] = (int(got["n"]), str(got["hash"])) if got else None
            chained = audit.chain(last[thread_id], thread_id, events, now, self.key)
            rows.extend(chained)
            last[thread_id] = (chained[-1][0], chained[-1][8])
        columns = [list(column) for column in zip(*rows)]
        kid = audit.key_id(self.key) if self.key is not None else None
        c.execute(_APPEND, [columns[1], columns[0], *columns[2:], kid])

    def failed(self, error: psycopg.Error) -> None:
        diag = error.diag
        if error.sqlstate == KEYED_STATE:
            audit.check_key(diag.message_primary or "", self.key)
        if error.sqlstate == NO_HEAD_STATE:
            raise audit.missing_head(int(diag.message_primary or 0)) from None


def lock(c: psycopg.Connection[DictRow], thread_id: str, key: bytes | None) -> None:
    """Queue the thread's audit lock and the read of its last entry (nothing waits for them yet);
    call inside a `commits.transaction`, after the rows the thread's lock order puts first
    (reviews, then the thread). A caller that reads something next queues this first, so the
    head arrives in that read's round trip instead of one of its own at commit."""
    pending = tail(c, "audit", lambda: _Appends(key))
    if thread_id not in pending.heads:
        # the lock, then the head read in a snapshot taken after the lock is granted (`schema`'s
        # `hitl_audit_thread_head`: one statement, where a lock and a read of their own took two)
        pending.heads[thread_id] = c.execute("SELECT n, hash FROM hitl_audit_thread_head(%s)", (thread_id,))


def append(c: psycopg.Connection[DictRow], thread_id: str, events: Iterable[Event], now: float, key: bytes | None) -> None:
    """Append events after the thread's last entry; call inside a `commits.transaction`, after
    the rows the thread's lock order puts first (reviews, then the thread). The thread's lock is
    taken here unless `lock` queued it already; the entries go with the COMMIT (see the module's
    docstring).

    Raises (at commit):
        AuditKeyError: the log is keyed and `key` is missing or another one.
        AuditError: the head row is gone though the log has entries (nothing is written).
    """
    events = list(events)
    if not events:
        return
    lock(c, thread_id, key)
    tail(c, "audit", lambda: _Appends(key)).events.append((thread_id, events, now))


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
            last = c.execute("SELECT seq, coalesce(anchor, hash) AS hash FROM hitl_events ORDER BY seq DESC LIMIT 1").fetchone()
            row = c.execute("SELECT seq, hash FROM hitl_audit_head WHERE id = 1").fetchone()
        return audit.check_head((last["seq"], last["hash"]) if last else None, (row["seq"], row["hash"]) if row else None)

    def recorded_decision(self, thread_id: str, review_id: str) -> dict[str, Any] | None:
        """The decision the log records for a review, if its entry is intact (`audit.recorded_decision`)."""
        with self.pool.connection() as c:
            got = c.execute(  # an anchored entry's hash covers its place in the thread
                f"SELECT {_COLUMNS}, CASE WHEN e.anchor IS NOT NULL THEN (SELECT count(*) FROM hitl_events t "
                "WHERE t.thread_id = e.thread_id AND t.seq <= e.seq) END AS place FROM hitl_events e "
                "WHERE thread_id = %s AND review_id = %s AND event = 'decided' ORDER BY seq DESC LIMIT 1",
                (thread_id, review_id)).fetchone()
            keyed_before = got is not None and self.key is not None and c.execute(
                "SELECT 1 FROM hitl_events WHERE seq < %s AND left(hash, 5) = 'hmac:' LIMIT 1", (got["seq"],)
            ).fetchone() is not None
        return audit.recorded_decision(_row(got) if got else None, self.key, keyed_before=keyed_before,
                                       position=got["place"] if got else None)

    def verify(self, *, expect_heads: Sequence[AuditHead] = ()) -> AuditReport:
        """Walk the whole chain with the store's key (see `audit.verify`), from one snapshot."""
        with self.pool.connection() as c, c.transaction():
            c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            got = c.execute(f"SELECT {_COLUMNS}, anchor FROM hitl_events ORDER BY seq").fetchall()
            rows, anchors = [_row(r) for r in got], {r["seq"]: r["anchor"] for r in got if r["anchor"] is not None}
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
            key=self.key, expect_heads=expect_heads, anchors=anchors,
        )

    def export(self, out: TextIO, *, thread_id: str | None = None) -> int:
        """Write the log (or one thread's entries) as JSON Lines; returns the count."""
        args: tuple[str, ...]
        sql, args, requests = f"SELECT {_COLUMNS}, anchor FROM hitl_events", (), "SELECT thread_id, review_id, request FROM hitl_reviews"
        if thread_id is not None:
            sql, args, requests = sql + " WHERE thread_id = %s", (thread_id,), requests + " WHERE thread_id = %s"
        with self.pool.connection() as c, c.transaction():
            got = c.execute(sql + " ORDER BY seq", args).fetchall()
            shown = {(r["thread_id"], r["review_id"]): json.loads(r["request"]).get("payload")
                     for r in c.execute(requests, args)}
        return audit.export([_row(r) for r in got], out, payloads=shown,
                            anchors={r["seq"]: r["anchor"] for r in got if r["anchor"] is not None})


def _json(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None
