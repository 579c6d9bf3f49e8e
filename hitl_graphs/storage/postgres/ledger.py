"""The ledger on PostgreSQL: threads, reviews and history, for many processes on many machines.

The same promises as SQLite's ledger (`hitl_graphs.storage.base.LedgerStore`; the tables are in
`schema`), re-thought for a server where SQLite takes one write lock for everything:

- A claim is one conditional `UPDATE ... WHERE status = 'pending' AND <deadline rule> RETURNING`.
  Under READ COMMITTED a second claim blocks on the row until the first commits, then re-checks the
  WHERE, finds the review decided and updates nothing: exactly one wins, and the loser reads who
  won in the same transaction to say so. A person and the deadline sweep are told apart by the
  deadline rule in that same WHERE, so they cannot both win either.
- A thread is taken with `SELECT ... FOR UPDATE` on its row, so two runs cannot both take it.
- Rows are locked in one order (reviews, then the thread, then the thread's audit lock, and at
  commit the audit chain's: `audit`) so that transactions wait for each other rather than deadlock.
- Leases are written and compared on the database's clock (`queue.DB_NOW`), not the worker's:
  the runtime passes `lease_until` on its own clock, and only the length (`lease_until - now`)
  is kept, added to the server's `clock_timestamp()`. Machines whose clocks disagree by minutes
  still agree on whose lease ran out.
- A transaction that leaves a thread holding a decision nobody runs, or records a review with a
  deadline, sends `NOTIFY hitl_work` (delivered at its commit): what wakes idle workers
  (`queue.PostgresQueue.wait`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

from hitl_graphs.audit import Event
from hitl_graphs.errors import (
    AlreadyDecidedError,
    NoPendingReviewError,
    ReviewExpiredError,
    ReviewNotPendingError,
    ThreadBusyError,
    ThreadExistsError,
    UnknownThreadError,
)
from hitl_graphs.reviews import HistoryEntry, Outcome, ReviewRequest, ThreadStatus
from hitl_graphs.storage.base import RECORDED, AtDecision, Liveness, NewThread, ReviewRow, Synced, ThreadRow
from hitl_graphs.storage.syncing import ended, keeps_input, plan_sync, synced, with_payload
from hitl_graphs.storage.postgres.audit import append, lock
from hitl_graphs.storage.postgres.commits import flush, transaction
from hitl_graphs.storage.postgres.queue import CHANNEL, DB_NOW
from hitl_graphs.storage.postgres.saver import Deferred, History, send

Conn = psycopg.Connection[DictRow]
_THREAD = "thread_id, workflow, status, outcome, error, owner, lease_until, created_at, updated_at, started_by"
_REVIEW = "request, status, checkpoint_id, decision, decided_at"
_THREAD_SQL = f"SELECT {_THREAD} FROM hitl_threads WHERE thread_id = %s"
_REVIEWS_SQL = f"SELECT {_REVIEW} FROM hitl_reviews WHERE thread_id = %s AND status = ANY(%s) ORDER BY created_at, review_id"
LATEST_CHECKPOINT = "SELECT max(checkpoint_id) AS id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = ''"
"""The id of a thread's latest top-level checkpoint (LangGraph's table, in the same database)."""


class PostgresLedger:
    """SQL for the ledger tables. Every method is one transaction on a pooled connection."""

    def __init__(self, pool: ConnectionPool[Conn], marks: Liveness, key: bytes | None,
                 deferred: Deferred | None = None) -> None:
        self.pool = pool
        self.marks = marks
        self.key = key
        self.deferred = deferred if deferred is not None else Deferred()
        """The saver's statements of runs' checkpoints, sent with the ledger's next record of where
        each run stopped (`saver`)."""

    def alive(self, row: ThreadRow) -> bool:
        if row.status != "running" or not row.owner:
            return False
        if self.marks.alive(row.owner, None, 0.0):  # a run of this process: known without asking
            return True
        return self.marks.alive(row.owner, row.lease_until, self._db_now())

    def _db_now(self) -> float:
        return float(self._read(f"SELECT {DB_NOW} AS now")[0]["now"])

    @contextmanager
    def _tx(self, *, durable: bool) -> Iterator[Conn]:
        """A transaction whose locks go at commit; `durable` ones are flushed before the caller goes
        on (`commits`: which commit promises what)."""
        with transaction(self.pool, durable=durable) as c:
            yield c

    @contextmanager
    def _settling(self, thread_id: str) -> Iterator[tuple[Conn, Queued]]:
        """A flushed transaction that records where the thread's run stopped: it sends the run's
        checkpoint first (`saver.Deferred`) and queues the keys of the run's waiting history
        entries (`_queue_history`); the caller appends those that are new (`_history_events`) with
        its own, so all of it commits together. Rolled back, it all waits again."""
        waiting = self.deferred.take(thread_id)
        try:
            with transaction(self.pool, durable=True) as c:
                send(c, waiting.statements)
                yield c, _queue_history(c, thread_id, waiting.history)
        except BaseException:
            self.deferred.put_back(thread_id, waiting)
            raise

    def commit_waiting(self) -> None:
        """Commit every run's checkpoint and history entries still waiting (a run that never
        settled; `PostgresStore.close`), each thread's in a transaction of its own."""
        for thread_id in self.deferred.threads():
            with self._settling(thread_id) as (c, queued):
                self._append(c, thread_id, _history_events(queued), time.time())

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[DictRow]:
        with self.pool.connection() as c:
            return c.execute(sql, args).fetchall()

    def _append(self, c: Conn, thread_id: str, events: Sequence[Event], now: float) -> None:
        append(c, thread_id, events, now, self.key)

    # -- threads ---------------------------------------------------------------------------

    def create_thread(self, thread_id: str, workflow: str, *, owner: str, lease_until: float, data: dict[str, Any],
                      actor: str | None = None, input: Any = None) -> None:
        with self._tx(durable=False) as c:
            self._insert_thread(c, thread_id, NewThread(workflow, actor, data, input), owner, lease_until, time.time())

    def _insert_thread(self, c: Conn, thread_id: str, new: NewThread, owner: str | None, lease_until: float | None,
                       now: float, *, keep_input: bool = True) -> None:
        kept = json.dumps(new.input) if keep_input and new.input is not None else None
        # the thread and its input in one statement: the input is kept only if the thread is new
        inserted = c.execute(
            f"WITH t AS (INSERT INTO hitl_threads ({_THREAD}) VALUES (%s, %s, 'running', NULL, NULL, %s, {DB_NOW} + %s, "
            "%s, %s, %s) ON CONFLICT (thread_id) DO NOTHING RETURNING thread_id), "
            "i AS (INSERT INTO hitl_inputs SELECT thread_id, %s FROM t WHERE %s::text IS NOT NULL "
            "ON CONFLICT (thread_id) DO UPDATE SET input = EXCLUDED.input) SELECT thread_id FROM t",
            (thread_id, new.workflow, owner, _length(lease_until, now), now, now, new.started_by, kept, kept),
        )
        lock(c, thread_id, self.key)  # its audit lock, sent with the insert
        if inserted.fetchone() is None:
            row = c.execute("SELECT status FROM hitl_threads WHERE thread_id = %s", (thread_id,)).fetchone()
            status = row["status"] if row else "?"
            raise ThreadExistsError(f"thread {thread_id!r} already exists (status {status}); resume it or start with another id")
        self._append(c, thread_id, [Event("started", actor=new.started_by, data=new.data)], now)

    def thread(self, thread_id: str) -> ThreadRow | None:
        rows = self._read(_THREAD_SQL, (thread_id,))
        return ThreadRow(**rows[0]) if rows else None

    def at_decision(self, thread_id: str) -> AtDecision:
        """`thread`, the pending `reviews` and the latest checkpoint id (`PostgresStore`), sent in
        one pipeline: one round trip instead of three (see `Store.at_decision`)."""
        with self.pool.connection() as c, c.pipeline():
            thread = c.execute(_THREAD_SQL, (thread_id,))
            reviews = c.execute(_REVIEWS_SQL, (thread_id, ["pending"]))
            latest = c.execute(LATEST_CHECKPOINT, (thread_id,))
            row = thread.fetchone()  # the pipeline's one sync: the other two answers come with it
            pending = [_review_row(r) for r in reviews.fetchall()]
            checkpoint = latest.fetchone()
        return AtDecision(ThreadRow(**row) if row else None, pending, checkpoint["id"] if checkpoint else None)

    def take_thread(self, thread_id: str, *, owner: str, lease_until: float,
                    expect: Sequence[ThreadStatus] | None = None) -> ThreadRow:
        now = time.time()
        with self._tx(durable=False) as c:
            row = self._thread_for_update(c, thread_id, owner, now)
            if expect is not None and row.status not in expect:
                ended = f" ({row.outcome})" if row.outcome else ""
                raise NoPendingReviewError(
                    f"thread {thread_id!r} is {row.status}{ended}, not {' or '.join(expect)}; nothing was changed"
                )
            c.execute(f"UPDATE hitl_threads SET status = 'running', owner = %s, lease_until = {DB_NOW} + %s, "
                      "updated_at = %s WHERE thread_id = %s", (owner, _length(lease_until, now), now, thread_id))
            return row

    def _thread_for_update(self, c: Conn, thread_id: str, owner: str, now: float) -> ThreadRow:
        return self._check_thread(self._lock_thread(c, thread_id).fetchone(), thread_id, owner)

    @staticmethod
    def _lock_thread(c: Conn, thread_id: str) -> psycopg.Cursor[DictRow]:
        return c.execute(f"SELECT {_THREAD}, {DB_NOW} AS db_now FROM hitl_threads WHERE thread_id = %s FOR UPDATE",
                         (thread_id,))

    def _check_thread(self, got: DictRow | None, thread_id: str, owner: str) -> ThreadRow:
        if got is None:
            raise UnknownThreadError(f"thread {thread_id!r} does not exist")
        db_now = got.pop("db_now")
        row = ThreadRow(**got)
        if row.status == "running" and row.owner != owner and self.marks.alive(row.owner, row.lease_until, db_now):
            raise ThreadBusyError(f"thread {thread_id!r} is being run by another process ({row.owner}); retry once it pauses")
        return row

    # -- reviews ---------------------------------------------------------------------------

    def claim(self, thread_id: str, review_id: str, decision: Mapping[str, Any], *, owner: str, lease_until: float,
              by_deadline: bool = False, record: dict[str, Any] | None = None) -> None:
        """Record a decision if the review is still pending: one conditional UPDATE, one winner."""
        now = time.time()
        rule = "deadline IS NOT NULL AND deadline <= %s" if by_deadline else "(deadline IS NULL OR deadline > %s)"
        try:
            with self._tx(durable=True) as c:
                # the review, the thread and its audit lock (the lock order): one round trip
                won = c.execute(
                    "UPDATE hitl_reviews SET status = 'decided', decision = %s, decided_at = %s "
                    f"WHERE thread_id = %s AND review_id = %s AND status = 'pending' AND {rule} RETURNING review_id",
                    (json.dumps(decision), now, thread_id, review_id, now),
                )
                thread = self._lock_thread(c, thread_id)
                lock(c, thread_id, self.key)
                if won.fetchone() is None:
                    self._refuse(c, thread_id, review_id, by_deadline)
                self._check_thread(thread.fetchone(), thread_id, owner)  # a live run holds it: the claim rolls back
                data = {**decision, **(record or {}), "by": "deadline" if by_deadline else "person"}
                # sent with the COMMIT
                c.execute(f"UPDATE hitl_threads SET status = 'running', owner = %s, lease_until = {DB_NOW} + %s, "
                          "updated_at = %s WHERE thread_id = %s", (owner, _length(lease_until, now), now, thread_id))
                self._append(c, thread_id, [Event("decided", review_id, decision.get("actor"), data)], now)
        except AlreadyDecidedError:
            with self.pool.connection() as c:
                flush(c)  # the decision it names may be a moment from the disk: on it before anyone hears of it
            raise

    @staticmethod
    def _refuse(c: Conn, thread_id: str, review_id: str, by_deadline: bool) -> None:
        """Why a claim updated nothing, read after any winner committed (READ COMMITTED)."""
        got = c.execute("SELECT status, decision, deadline FROM hitl_reviews WHERE thread_id = %s AND review_id = %s",
                        (thread_id, review_id)).fetchone()
        if got is None:
            raise ReviewNotPendingError(f"thread {thread_id!r} has no review {review_id!r}")
        status, prior, deadline = got["status"], got["decision"], got["deadline"]
        if status in ("decided", "applied"):
            d = json.loads(prior) if prior else {}
            who = f" by {d['actor']}" if d.get("actor") else ""
            raise AlreadyDecidedError(f"review {review_id!r} of thread {thread_id!r} was already decided "
                                      f"({d.get('kind', '?')}{who}); it is {status} and cannot be decided again")
        if status != "pending":
            raise ReviewNotPendingError(f"review {review_id!r} of thread {thread_id!r} is {status}, not pending")
        if by_deadline:
            raise ReviewNotPendingError(f"review {review_id!r} of thread {thread_id!r} has not expired")
        raise ReviewExpiredError(
            f"review {review_id!r} of thread {thread_id!r} expired at {_iso(deadline)}; its default decision "
            "applies at the next sweep (`hitl sweep`)"
        )

    def reviews(self, thread_id: str, statuses: Iterable[str] = ("pending",)) -> list[ReviewRow]:
        rows = self._read(_REVIEWS_SQL, (thread_id, list(statuses)))
        return [_review_row(r) for r in rows]

    def pending(self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50,
                offset: int = 0) -> list[ReviewRequest]:
        where, args = ["status = 'pending'"], list[object]()
        if workflow is not None:
            where.append("workflow = %s")
            args.append(workflow)
        if roles is not None:
            where.append("(required_role IS NULL OR required_role = ANY(%s))")
            args.append(list(roles))
        rows = self._read(f"SELECT request FROM hitl_reviews WHERE {' AND '.join(where)} "
                          "ORDER BY created_at, review_id LIMIT %s OFFSET %s", (*args, limit, offset))
        return [ReviewRequest.model_validate_json(r["request"]) for r in rows]

    def due(self, now: float, *, limit: int = 500) -> list[ReviewRow]:
        rows = self._read(f"SELECT {_REVIEW} FROM hitl_reviews WHERE status = 'pending' AND deadline IS NOT NULL "
                          "AND deadline <= %s ORDER BY deadline LIMIT %s", (now, limit))
        return [_review_row(r) for r in rows]

    def review(self, thread_id: str, review_id: str) -> ReviewRow | None:
        rows = self._read(f"SELECT {_REVIEW} FROM hitl_reviews WHERE thread_id = %s AND review_id = %s",
                          (thread_id, review_id))
        return _review_row(rows[0]) if rows else None

    # -- syncing from a checkpoint ---------------------------------------------------------

    def sync(self, thread_id: str, *, status: ThreadStatus, outcome: Outcome | None, error: str | None,
             pending: Sequence[tuple[ReviewRequest, str | None]], events: Sequence[Event] = (),
             new: NewThread | None = None) -> Synced:
        """Make the ledger agree with the thread's latest checkpoint, in one transaction (the rules
        are `hitl_graphs.storage.syncing`'s, shared with SQLite)."""
        now = time.time()
        with self._settling(thread_id) as (c, queued):  # the run's checkpoint first; what it recorded, answered below
            if new is not None:
                self._insert_thread(c, thread_id, new, None, None, now,  # its start first in the history
                                    keep_input=keeps_input(status))
            # the reviews, the thread and its audit lock (the lock order), in one round trip
            reviews = c.execute("SELECT review_id, status, request FROM hitl_reviews WHERE thread_id = %s "
                                "ORDER BY created_at, review_id FOR UPDATE", (thread_id,))
            locked = c.execute(f"SELECT {_THREAD} FROM hitl_threads WHERE thread_id = %s FOR UPDATE", (thread_id,))
            lock(c, thread_id, self.key)
            known = {r["review_id"]: (r["status"], r["request"]) for r in reviews.fetchall()}
            got = locked.fetchone()
            if got is None:
                raise UnknownThreadError(f"thread {thread_id!r} does not exist")
            prev = ThreadRow(**got)
            plan = plan_sync(known, pending, status=status, outcome=outcome, events=events)
            # the changes, sent with the COMMIT
            for rid in plan.applied:
                c.execute("UPDATE hitl_reviews SET status = 'applied', applied_at = %s WHERE thread_id = %s AND "
                          "review_id = %s", (now, thread_id, rid))
            for rid, new_status in plan.closed:
                c.execute("UPDATE hitl_reviews SET status = %s WHERE thread_id = %s AND review_id = %s",
                          (new_status, thread_id, rid))
            for r, ck in plan.added:
                c.execute(
                    "INSERT INTO hitl_reviews (thread_id, review_id, workflow, status, checkpoint_id, request, "
                    "created_at, deadline, required_role) VALUES (%s, %s, %s, 'pending', %s, %s, %s, %s, %s)",
                    (thread_id, r.review_id, r.workflow, ck, r.model_dump_json(), r.created_at.timestamp(),
                     r.deadline.timestamp() if r.deadline else None, r.required_role),
                )
            c.execute("UPDATE hitl_threads SET status = %s, outcome = %s, error = %s, owner = NULL, "
                      "lease_until = NULL, updated_at = %s WHERE thread_id = %s", (status, outcome, error, now, thread_id))
            if not keeps_input(status):  # its latest checkpoint holds the input now
                c.execute("DELETE FROM hitl_inputs WHERE thread_id = %s", (thread_id,))
            if (plan.decided and status == "paused") or any(r.deadline is not None for r, _ in plan.added):
                c.execute("SELECT pg_notify(%s, %s)", (CHANNEL, thread_id))  # sent when this commits
            self._append(c, thread_id, [*_history_events(queued), *plan.events,
                                        *ended(prev.status, prev.outcome, status, outcome, error)], now)
        return synced(plan, replace(prev, status=status, outcome=outcome, error=error, owner=None, lease_until=None,
                                    updated_at=now))

    def threads_with_decided_reviews(self) -> list[str]:
        return [r["thread_id"] for r in self._read(
            "SELECT DISTINCT thread_id FROM hitl_reviews WHERE status = 'decided' ORDER BY thread_id")]

    def threads_in(self, status: ThreadStatus) -> list[ThreadRow]:
        return [ThreadRow(**r) for r in self._read(f"SELECT {_THREAD} FROM hitl_threads WHERE status = %s", (status,))]

    def fail_thread(self, thread_id: str, error: str, events: Sequence[Event] = ()) -> None:
        now = time.time()
        with self._settling(thread_id) as (c, queued):
            c.execute("UPDATE hitl_threads SET status = 'failed', error = %s, owner = NULL, lease_until = NULL, "
                      "updated_at = %s WHERE thread_id = %s", (error, now, thread_id))
            self._append(c, thread_id, [*_history_events(queued), *events, Event("failed", data={"error": error})], now)

    def release(self, thread_id: str, review_id: str, reason: str) -> None:
        now = time.time()
        error = f"the graph raised {reason} on the decision's resume value; `hitl recover` asks again"
        with self._settling(thread_id) as (c, queued):
            c.execute("UPDATE hitl_reviews SET status = 'superseded' WHERE thread_id = %s AND review_id = %s "
                      "AND status = 'decided'", (thread_id, review_id))
            c.execute("UPDATE hitl_threads SET status = 'failed', outcome = NULL, error = %s, owner = NULL, "
                      "lease_until = NULL, updated_at = %s WHERE thread_id = %s", (error, now, thread_id))
            self._append(c, thread_id, [*_history_events(queued), Event("released", review_id, data={"error": reason})],
                         now)

    def threads_outside(self) -> list[str]:
        return [r["thread_id"] for r in self._read(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' AND thread_id NOT IN "
            "(SELECT thread_id FROM hitl_threads) ORDER BY thread_id")]

    def recover_attempts(self, thread_id: str) -> int:
        rows = self._read(
            "SELECT count(*) AS n FROM hitl_events WHERE thread_id = %s AND event = 'recovering' AND seq > coalesce(("
            "SELECT max(seq) FROM hitl_events WHERE thread_id = %s AND event IN ('started', 'decided', 'retry_requested')"
            "), 0)", (thread_id, thread_id))
        return int(rows[0]["n"])

    def add_events(self, thread_id: str, events: Sequence[Event]) -> None:
        with self._tx(durable=False) as c:
            self._append(c, thread_id, events, time.time())

    def started_input(self, thread_id: str) -> Any:
        kept = self._read("SELECT input FROM hitl_inputs WHERE thread_id = %s", (thread_id,))
        if kept:
            return json.loads(kept[0]["input"])
        # a thread started before inputs left the audit log keeps its input in its `started` entry
        rows = self._read("SELECT data FROM hitl_events WHERE thread_id = %s AND event = 'started' ORDER BY seq LIMIT 1",
                          (thread_id,))
        return json.loads(rows[0]["data"]).get("input") if rows else None

    def history(self, thread_id: str) -> list[HistoryEntry]:
        return self._entries(f"{_ENTRIES} WHERE e.thread_id = %s ORDER BY e.seq", (thread_id,))

    def events_after(self, seq: int, *, limit: int = 100) -> list[HistoryEntry]:
        # appends hold the chain's lock until they commit, so seq order is commit order: a
        # follower reading past its cursor never skips an entry committed later with a lower seq.
        # What it reads may be a moment from the disk (`commits`): flushed before it is handed on
        # (a webhook, the event stream), so a server crash cannot take back an entry announced.
        entries = self._entries(f"{_ENTRIES} WHERE e.seq > %s ORDER BY e.seq LIMIT %s", (seq, limit))
        if entries:
            with self.pool.connection() as c:
                flush(c)
        return entries

    def _entries(self, sql: str, args: Sequence[Any]) -> list[HistoryEntry]:
        return [HistoryEntry(seq=r["seq"], thread_id=r["thread_id"], review_id=r["review_id"], event=r["event"],
                             actor=r["actor"], data=with_payload(r["event"], json.loads(r["data"]), r["request"]),
                             at=datetime.fromtimestamp(r["at"], UTC))
                for r in self._read(sql, args)]


# a review's payload is stored once, in its ledger row; its `review_requested` entry gets it back here
_ENTRIES = ("SELECT e.seq, e.thread_id, e.review_id, e.event, e.actor, e.data, e.at, r.request FROM hitl_events e "
            "LEFT JOIN hitl_reviews r ON e.event = 'review_requested' AND r.thread_id = e.thread_id "
            "AND r.review_id = e.review_id")


Queued = list[tuple[History, "psycopg.Cursor[DictRow]"]]


def _queue_history(c: Conn, thread_id: str, history: Sequence[History]) -> Queued:
    """Queue a run's waiting history entries' keys (`record_event`: each once per thread; a replay
    of the node finds its key); `_history_events` reads which were new once the transaction's next
    answer has come (no round trip of their own)."""
    return [(h, c.execute("INSERT INTO hitl_effects (thread_id, key, result, at) VALUES (%s, %s, %s, %s) "
                          "ON CONFLICT DO NOTHING RETURNING key", (thread_id, h.key, RECORDED, h.at)))
            for h in history]


def _history_events(queued: Queued) -> list[Event]:
    return [Event(h.event, data=h.data) for h, added in queued if added.fetchone() is not None]


def _length(lease_until: float | None, now: float) -> float | None:
    """How long a lease the caller asked for (on its clock), to add to the database's clock
    (NULL plus anything stays NULL: no lease)."""
    return None if lease_until is None else max(lease_until - now, 0.0)


def _review_row(r: DictRow) -> ReviewRow:
    return ReviewRow(request=ReviewRequest.model_validate_json(r["request"]), status=r["status"],
                     checkpoint_id=r["checkpoint_id"], decision=json.loads(r["decision"]) if r["decision"] else None,
                     decided_at=r["decided_at"])


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
