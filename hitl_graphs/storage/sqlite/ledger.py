"""The ledger on SQLite: threads, reviews and history beside LangGraph's checkpoints.

LangGraph's savers have no index of "waiting for a person", no claim on a decision and no record
of who decided what. The ledger keeps three tables (created by `schema`):

- `hitl_threads`: one row per thread started through the runner: workflow, status, and while a
  process runs it, that process (`owner`) and a lease, so a crash can be told from a long run.
- `hitl_reviews`: one row per review: pending -> decided -> applied (or superseded / cancelled),
  the request shown and the decision taken. Listing pending reviews is an index range scan.
- `hitl_events`: the append-only, hash-chained history of every thread (see `audit`).

Claiming a decision is one `BEGIN IMMEDIATE` transaction that moves a review from `pending` to
`decided` only if it still is pending: across processes, exactly one claim wins.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from hitl_graphs.audit import Event
from hitl_graphs.errors import (
    AlreadyDecidedError,
    NoPendingReviewError,
    ReviewExpiredError,
    ReviewNotPendingError,
    ThreadBusyError,
    ThreadExistsError,
    UnknownReviewError,
    UnknownThreadError,
)
from hitl_graphs.reviews import Outcome, ReviewRequest, ThreadStatus
from hitl_graphs.storage.base import NewThread, ReviewRow, Synced, ThreadRow
from hitl_graphs.storage.syncing import ended, keeps_input, plan_sync, synced
from hitl_graphs.storage.sqlite.audit import append
from hitl_graphs.storage.sqlite.connection import events_waiting, write_pending, write_transaction
from hitl_graphs.storage.sqlite.history import HistoryReads
from hitl_graphs.storage.sqlite.liveness import RunMarks
from hitl_graphs.storage.sqlite.packing import REQUEST, pack_request, request_json
from hitl_graphs.storage.sqlite.schema import LIVE


class SqliteLedger(HistoryReads):
    """SQL for the ledger tables. Every method is one transaction."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, marks: RunMarks | None = None) -> None:
        self.conn = conn
        self.lock = lock
        self.marks = marks if marks is not None else RunMarks(None)

    def alive(self, row: ThreadRow) -> bool:
        """Whether a live run holds the thread (see `hitl_graphs.liveness`)."""
        return row.status == "running" and self.marks.alive(row.owner, row.lease_until, time.time())

    @contextmanager
    def _tx(self, *, flush: bool = False, pending_first: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction. Only a decision waits for the disk flush on its own; the other
        rows keep books and are flushed by the next flushed commit (see `write_transaction`)."""
        with write_transaction(self.conn, self.lock, flush=flush, pending_first=pending_first) as c:
            yield c

    # -- threads ---------------------------------------------------------------------------

    def create_thread(
        self, thread_id: str, workflow: str, *, owner: str, lease_until: float, data: dict[str, Any], actor: str | None = None,
        input: Any = None,
    ) -> None:
        """Record a thread about to start; refuses an id already used."""
        with self._tx() as c:
            self._insert_thread(c, thread_id, NewThread(workflow, actor, data, input), owner, lease_until, time.time())

    @staticmethod
    def _insert_thread(c: sqlite3.Connection, thread_id: str, new: NewThread, owner: str | None,
                       lease_until: float | None, now: float, *, keep_input: bool = True, record: bool = True,
                       status: ThreadStatus = "running", outcome: Outcome | None = None, error: str | None = None) -> ThreadRow:
        """Insert the thread's row (and its input, if kept); with `record`, its `started` entry
        too (else the caller appends `_started(new)` in its own batch). Returns the row.

        `status` (and `outcome`, `error`) is where a thread recorded after its first run already
        stands (`sync` with `new`): written at once, not updated in the same transaction (which
        would dirty a second page of the status index)."""
        try:  # one statement: the primary key refuses an id already used
            c.execute("INSERT INTO hitl_threads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (thread_id, new.workflow, status, outcome, error, owner, lease_until, now, now, new.started_by))
        except sqlite3.IntegrityError:
            got = c.execute("SELECT status FROM hitl_threads WHERE thread_id = ?", (thread_id,)).fetchone()
            if got is None:
                raise
            raise ThreadExistsError(f"thread {thread_id!r} already exists (status {got[0]}); resume it or start with another id") from None
        if keep_input and new.input is not None:
            c.execute("INSERT OR REPLACE INTO hitl_inputs VALUES (?, ?)", (thread_id, json.dumps(new.input)))
        if record:
            append(c, thread_id, [_started(new)], now)
        return ThreadRow(thread_id, new.workflow, status, outcome, error, owner, lease_until, now, now, new.started_by)

    def thread(self, thread_id: str) -> ThreadRow | None:
        rows = self._read("SELECT * FROM hitl_threads WHERE thread_id = ?", (thread_id,))
        return ThreadRow(*rows[0]) if rows else None

    def take_thread(
        self, thread_id: str, *, owner: str, lease_until: float, expect: Sequence[ThreadStatus] | None = None
    ) -> ThreadRow:
        """Mark a thread as run by `owner` unless a live process already runs it.

        With `expect`, only a thread in one of those statuses, read under the write lock (so a
        run that finished a moment ago is not taken for the paused thread it was).

        Raises:
            ThreadBusyError: a live run holds it.
            NoPendingReviewError: its status is not one of `expect`.
        """
        now = time.time()
        with self._tx() as c:
            row = self._thread_for_update(c, thread_id, owner, now)
            if expect is not None and row.status not in expect:
                ended = f" ({row.outcome})" if row.outcome else ""
                raise NoPendingReviewError(
                    f"thread {thread_id!r} is {row.status}{ended}, not {' or '.join(expect)}; nothing was changed"
                )
            c.execute(
                "UPDATE hitl_threads SET status = 'running', owner = ?, lease_until = ?, updated_at = ? WHERE thread_id = ?",
                (owner, lease_until, now, thread_id),
            )
            return row

    def _thread_for_update(self, c: sqlite3.Connection, thread_id: str, owner: str, now: float) -> ThreadRow:
        return self._check_owner(thread_id, c.execute("SELECT * FROM hitl_threads WHERE thread_id = ?", (thread_id,)).fetchone(),
                                 owner, now)

    def _check_owner(self, thread_id: str, got: Sequence[Any] | None, owner: str, now: float) -> ThreadRow:
        if got is None:
            raise UnknownThreadError(f"thread {thread_id!r} does not exist")
        row = ThreadRow(*got)
        if row.status == "running" and row.owner != owner and self.marks.alive(row.owner, row.lease_until, now):
            raise ThreadBusyError(
                f"thread {thread_id!r} is being run by another process ({row.owner}); retry once it pauses"
            )
        return row

    # -- reviews ---------------------------------------------------------------------------

    def claim(
        self,
        thread_id: str,
        review_id: str,
        decision: Mapping[str, Any],
        *,
        owner: str,
        lease_until: float,
        by_deadline: bool = False,
        record: dict[str, Any] | None = None,
    ) -> None:
        """Record a decision if the review is still pending; exactly one caller wins.

        A person's decision is refused once the review's deadline has passed, and the sweep's
        (`by_deadline`) before it: so a person and the sweep racing at the deadline cannot both win.
        `record` is extra audit data (e.g. the values a `Modify` replaced).

        Raises:
            AlreadyDecidedError: someone decided it first (names who and what).
            ReviewNotPendingError: no such pending review.
            ThreadBusyError: another live process runs the thread right now.
        """
        now = time.time()
        with self._tx(flush=True) as c:
            got = c.execute(  # the review and its thread's row, in one statement
                "SELECT r.status, r.decision, r.deadline, t.* FROM hitl_reviews r LEFT JOIN hitl_threads t "
                "ON t.thread_id = r.thread_id WHERE r.thread_id = ? AND r.review_id = ?",
                (thread_id, review_id),
            ).fetchone()
            if got is None:
                raise UnknownReviewError(f"thread {thread_id!r} has no review {review_id!r}")
            status, prior, deadline = got[:3]
            if status in ("decided", "applied"):
                raise AlreadyDecidedError(_already(thread_id, review_id, status, prior))
            if status != "pending":
                raise ReviewNotPendingError(f"review {review_id!r} of thread {thread_id!r} is {status}, not pending")
            if deadline is not None and not by_deadline and now >= deadline:
                raise ReviewExpiredError(
                    f"review {review_id!r} of thread {thread_id!r} expired at {_iso(deadline)}; its default decision "
                    "applies at the next sweep (`hitl sweep`)"
                )
            if by_deadline and (deadline is None or now < deadline):
                raise ReviewNotPendingError(f"review {review_id!r} of thread {thread_id!r} has not expired")
            self._check_owner(thread_id, got[3:] if got[3] is not None else None, owner, now)
            c.execute(
                "UPDATE hitl_reviews SET status = 'decided', decision = ?, decided_at = ? "
                "WHERE thread_id = ? AND review_id = ?",
                (json.dumps(decision, separators=(",", ":")), now, thread_id, review_id),
            )
            c.execute(
                "UPDATE hitl_threads SET status = 'running', owner = ?, lease_until = ?, updated_at = ? WHERE thread_id = ?",
                (owner, lease_until, now, thread_id),
            )
            data = {**decision, **(record or {}), "by": "deadline" if by_deadline else "person"}
            append(c, thread_id, [Event("decided", review_id, decision.get("actor"), data)], now)

    def reviews(self, thread_id: str, statuses: Iterable[str] = ("pending",)) -> list[ReviewRow]:
        wanted = tuple(statuses)
        marks = ",".join("?" * len(wanted))
        rows = self._read(
            f"SELECT {_REVIEW} FROM hitl_reviews WHERE thread_id = ? AND status IN ({marks}) ORDER BY created_at, review_id",
            (thread_id, *wanted),
        )
        return [_review_row(r) for r in rows]

    def pending(
        self, *, workflow: str | None = None, roles: Sequence[str] | None = None, limit: int = 50, offset: int = 0
    ) -> list[ReviewRequest]:
        """Pending reviews, oldest first: an index range scan, whatever the number of threads.

        With `roles`, only reviews that need no role or one of `roles`.
        """
        where, args = ["status = 'pending'"], []
        if workflow is not None:
            where.append("workflow = ?")
            args.append(workflow)
        if roles is not None:
            marks = ",".join("?" * len(roles))
            where.append(f"(required_role IS NULL OR required_role IN ({marks}))" if roles else "required_role IS NULL")
            args.extend(roles)
        rows = self._read(
            f"SELECT {REQUEST} FROM hitl_reviews WHERE {' AND '.join(where)} ORDER BY created_at, review_id LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return [ReviewRequest.model_validate_json(request_json(*r)) for r in rows]

    def due(self, now: float, *, limit: int = 500) -> list[ReviewRow]:
        """Pending reviews whose deadline has passed (uses the partial deadline index)."""
        rows = self._read(
            f"SELECT {_REVIEW} FROM hitl_reviews "
            "WHERE status = 'pending' AND deadline IS NOT NULL AND deadline <= ? ORDER BY deadline LIMIT ?",
            (now, limit),
        )
        return [_review_row(r) for r in rows]

    def review(self, thread_id: str, review_id: str) -> ReviewRow | None:
        rows = self._read(
            f"SELECT {_REVIEW} FROM hitl_reviews WHERE thread_id = ? AND review_id = ?",
            (thread_id, review_id),
        )
        return _review_row(rows[0]) if rows else None

    # -- syncing from a checkpoint ---------------------------------------------------------

    def sync(
        self,
        thread_id: str,
        *,
        status: ThreadStatus,
        outcome: Outcome | None,
        error: str | None,
        pending: Sequence[tuple[ReviewRequest, str | None]],
        events: Sequence[Event] = (),
        new: NewThread | None = None,
    ) -> Synced:
        """Make the ledger agree with the thread's latest checkpoint, in one transaction.

        `pending` is what the checkpoint shows as waiting (each with the checkpoint id it was
        raised on). New reviews are added; decided reviews no longer waiting become `applied` once
        the run has settled (paused again or done; a run that stopped mid-way keeps them `decided`
        for `recover`); pending ones no longer waiting were answered outside the runner and become
        `superseded`. `new` records the thread's start in the same transaction (a thread whose
        id nobody knows before its first run returns). Returns what changed and where the thread
        now stands, so the caller needs no second read.
        """
        now = time.time()
        with self._tx(pending_first=new is None) as c:
            first: list[Event] = []
            prev: ThreadRow | None = None
            if new is not None:  # a thread created here has no reviews, and its row is inserted as it ends up
                self._insert_thread(c, thread_id, new, None, None, now, keep_input=keeps_input(status), record=False,
                                    status=status, outcome=outcome, error=error)
                prev = ThreadRow(thread_id, new.workflow, "running", None, None, None, None, now, now, new.started_by)
                first.append(_started(new))
                if events_waiting(c):  # what the run recorded goes after its start in the history
                    append(c, thread_id, first, now)
                    first = []
                write_pending(c)
                known: dict[str, tuple[str, str]] = {}
            else:
                known = {r[2]: (st, request_json(*r)) for st, *r in c.execute(
                    f"SELECT status, {REQUEST} FROM hitl_reviews WHERE thread_id = ? ORDER BY created_at, review_id",
                    (thread_id,)).fetchall()}
            plan = plan_sync(known, pending, status=status, outcome=outcome, events=events)
            c.executemany("UPDATE hitl_reviews SET status = 'applied', applied_at = ? WHERE thread_id = ? AND review_id = ?",
                          [(now, thread_id, rid) for rid in plan.applied])
            c.executemany("UPDATE hitl_reviews SET status = ? WHERE thread_id = ? AND review_id = ?",
                          [(st, thread_id, rid) for rid, st in plan.closed])
            c.executemany(
                "INSERT INTO hitl_reviews (thread_id, review_id, workflow, status, checkpoint_id, request, created_at, "
                "deadline, required_role) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
                [(thread_id, r.review_id, r.workflow, ck, pack_request(r), r.created_at.timestamp(),
                  r.deadline.timestamp() if r.deadline else None, r.required_role) for r, ck in plan.added],
            )
            if prev is None:
                got = c.execute("SELECT * FROM hitl_threads WHERE thread_id = ?", (thread_id,)).fetchone()
                if got is None:
                    raise UnknownThreadError(f"thread {thread_id!r} does not exist")
                prev = ThreadRow(*got)
                c.execute(
                    "UPDATE hitl_threads SET status = ?, outcome = ?, error = ?, owner = NULL, lease_until = NULL, "
                    "updated_at = ? WHERE thread_id = ?",
                    (status, outcome, error, now, thread_id),
                )
            if not keeps_input(status) and new is None:  # the checkpoint committed with this holds the input now
                c.execute("DELETE FROM hitl_inputs WHERE thread_id = ?", (thread_id,))
            append(c, thread_id, [*first, *plan.events, *ended(prev.status, prev.outcome, status, outcome, error)], now)
        return synced(plan, replace(prev, status=status, outcome=outcome, error=error, owner=None, lease_until=None,
                                    updated_at=now))

    def threads_with_decided_reviews(self) -> list[str]:
        """Thread ids holding a decision not applied yet (uses the partial index of those)."""
        return [r[0] for r in self._read("SELECT DISTINCT thread_id FROM hitl_reviews WHERE status = 'decided'")]

    def threads_in(self, status: ThreadStatus) -> list[ThreadRow]:
        """Threads whose status is `status` (through the index of threads not done, unless `done`)."""
        live = f" AND {LIVE}" if status != "done" else ""
        return [ThreadRow(*r) for r in self._read(f"SELECT * FROM hitl_threads WHERE status = ?{live}", (status,))]

    def release(self, thread_id: str, review_id: str, reason: str) -> None:
        """Take back a decision the graph refused (`ResumeRefusedError`): the review becomes
        `superseded` and the thread `failed` until the graph asks again (what the caller does
        next; if it dies first, `recover` does it)."""
        now = time.time()
        error = f"the graph raised {reason} on the decision's resume value; `hitl recover` asks again"
        with self._tx(flush=True) as c:
            c.execute("UPDATE hitl_reviews SET status = 'superseded' WHERE thread_id = ? AND review_id = ? "
                      "AND status = 'decided'", (thread_id, review_id))
            c.execute("UPDATE hitl_threads SET status = 'failed', outcome = NULL, error = ?, owner = NULL, "
                      "lease_until = NULL, updated_at = ? WHERE thread_id = ?", (error, now, thread_id))
            append(c, thread_id, [Event("released", review_id, data={"error": reason})], now)

    def threads_outside(self) -> list[str]:
        """Thread ids with checkpoints in this file (LangGraph's `checkpoints` table) that the
        ledger does not know: run by plain LangGraph, before or around the runner (`adopt`)."""
        return [r[0] for r in self._read(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' AND thread_id NOT IN "
            "(SELECT thread_id FROM hitl_threads) ORDER BY thread_id")]

    def fail_thread(self, thread_id: str, error: str, events: Sequence[Event] = ()) -> None:
        """Mark a thread failed with `error` (nobody runs it any more), recording `events`."""
        now = time.time()
        with self._tx(flush=True) as c:
            c.execute("UPDATE hitl_threads SET status = 'failed', error = ?, owner = NULL, lease_until = NULL, updated_at = ? "
                      "WHERE thread_id = ?", (error, now, thread_id))
            append(c, thread_id, [*events, Event("failed", data={"error": error})], now)

    def add_events(self, thread_id: str, events: Sequence[Event]) -> None:
        with self._tx() as c:
            append(c, thread_id, events, time.time())

def _started(new: NewThread) -> Event:
    return Event("started", actor=new.started_by, data=new.data)


_REVIEW = f"status, checkpoint_id, decision, decided_at, {REQUEST}"


def _review_row(row: tuple[Any, ...]) -> ReviewRow:
    status, checkpoint_id, decision, decided_at, *request = row
    return ReviewRow(
        request=ReviewRequest.model_validate_json(request_json(*request)),
        status=status,
        checkpoint_id=checkpoint_id,
        decision=json.loads(decision) if decision else None,
        decided_at=decided_at,
    )


def _already(thread_id: str, review_id: str, status: str, prior: str | None) -> str:
    d = json.loads(prior) if prior else {}
    who = f" by {d['actor']}" if d.get("actor") else ""
    return (
        f"review {review_id!r} of thread {thread_id!r} was already decided ({d.get('kind', '?')}{who}); "
        f"it is {status} and cannot be decided again"
    )


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
