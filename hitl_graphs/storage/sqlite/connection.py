"""The one SQLite connection a store owns, and its write transactions.

One connection serves LangGraph's saver and our tables, behind one lock, so a process never
races itself. Several processes share the file safely: WAL mode lets readers run beside a
writer, and a busy timeout makes a writer wait for the lock instead of failing (past it,
`DatabaseBusyError`, which says retrying is safe).

Rows may wait in memory for the next commit (`PendingRows`: a run's deferred checkpoint, history
entries from `record_event`); every transaction on the connection takes them in, so they commit
atomically with whatever the next writer records.

Rows that only keep books (a thread's start, a history entry) commit without waiting for the
disk flush (`write_transaction(flush=False)`): a process crash loses nothing, and the next flushed
commit, made before the caller hears back, flushes them too.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, Protocol

from hitl_graphs.errors import ConfigError, DatabaseBusyError

Synchronous = Literal["FULL", "NORMAL"]


class PendingRows(Protocol):
    """Rows waiting in memory for the next commit on the connection."""

    durable: bool
    """Whether these rows must reach the disk with a flushed commit (checkpoints) or may ride on
    one that skips the flush (history entries)."""

    def waiting(self) -> bool: ...

    def write(self, conn: sqlite3.Connection) -> Callable[[bool], None] | None:
        """Insert the rows into the open transaction; return what to call once it commits (True)
        or rolls back (False), or None if there was nothing to write."""
        ...


class HitlConnection(sqlite3.Connection):
    """A connection whose transactions take in the rows waiting for a commit.

    They are written at the start of a `write_transaction` (so the history keeps its order) or,
    for LangGraph's own commits, just before the commit.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hitl_pending: list[PendingRows] = []
        self.hitl_relaxed = False
        self.hitl_synchronous: Synchronous = "FULL"
        self.hitl_busy_timeout: float | None = None
        self.hitl_audit_key: bytes | None = None
        self._hitl_after: list[Callable[[bool], None]] = []

    def hitl_durable_waiting(self) -> bool:
        return any(p.durable and p.waiting() for p in self.hitl_pending)

    def hitl_write_pending(self) -> None:
        for pending in self.hitl_pending:
            if self.hitl_relaxed and pending.durable:
                continue  # only a flushed commit may take these; they wait for the next one
            after = pending.write(self)
            if after is not None:
                self._hitl_after.append(after)

    def commit(self) -> None:
        try:
            self.hitl_write_pending()
        except BaseException:
            self.rollback()  # the commit fails as a whole: nothing half-written stays open
            raise
        self._hitl_done(self._hitl_commit)

    def rollback(self) -> None:
        self._hitl_done(super().rollback, committed=False)

    def _hitl_commit(self) -> None:
        super().commit()

    def _hitl_done(self, end: Callable[[], None], committed: bool = True) -> None:
        after, self._hitl_after = self._hitl_after, []
        try:
            end()
        except BaseException:
            for fn in after:
                fn(False)
            raise
        for fn in after:
            fn(committed)


@contextmanager
def write_transaction(
    conn: sqlite3.Connection, lock: threading.Lock, *, flush: bool = True, pending_first: bool = True
) -> Iterator[sqlite3.Connection]:
    """One `BEGIN IMMEDIATE` ... `COMMIT` on the shared connection, rolled back on error.

    `flush=False` commits without waiting for the disk flush (`synchronous=NORMAL` for this
    commit only, when the store is `FULL`), for rows that keep books: that loses nothing to a
    process crash, and the next flushed commit (there is one before the caller hears back: the
    pause's or the end's) flushes them too. It flushes anyway when checkpoints wait to join it.

    Rows waiting for a commit are written first (`pending_first`), so the history keeps its
    order; a caller that passes False calls `write_pending` where they belong.
    """
    with lock:
        hitl = conn if isinstance(conn, HitlConnection) else None
        relaxed = not flush and hitl is not None and hitl.hitl_synchronous == "FULL" and not hitl.hitl_durable_waiting()
        if relaxed:
            conn.execute("PRAGMA synchronous=NORMAL")
        if hitl is not None:
            hitl.hitl_relaxed = relaxed
        try:
            with busy_as_error(_timeout_of(conn)):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if pending_first:
                        write_pending(conn)
                    yield conn
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
        finally:
            if hitl is not None:
                hitl.hitl_relaxed = False
            if relaxed:
                conn.execute("PRAGMA synchronous=FULL")


def is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "database is locked" in text or "database is busy" in text or "database table is locked" in text


def busy_message(timeout: float | None) -> str:
    waited = f"more than {timeout:g} s" if timeout is not None else "too long"
    return (f"the database is busy: another process held its write lock for {waited}; nothing of this request was "
            "kept and retrying is safe (a decision recorded before stays recorded: `hitl recover` applies it)")


def _timeout_of(conn: sqlite3.Connection) -> float | None:
    return conn.hitl_busy_timeout if isinstance(conn, HitlConnection) else None


@contextmanager
def busy_as_error(timeout: float | None) -> Iterator[None]:
    """Turn SQLite's "database is locked" (the busy timeout ran out) into `DatabaseBusyError`."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise DatabaseBusyError(busy_message(timeout)) from None
        raise


def pending_rows(conn: sqlite3.Connection) -> list[PendingRows]:
    """What waits for the next commit on `conn`, to add to (the connection must be `SqliteStore`'s)."""
    if not isinstance(conn, HitlConnection):
        raise ConfigError("rows can wait for a commit only on the connection SqliteStore opens")
    return conn.hitl_pending


def write_pending(conn: sqlite3.Connection) -> None:
    """Write the rows waiting for a commit into the open transaction (see `HitlConnection`)."""
    if isinstance(conn, HitlConnection):
        conn.hitl_write_pending()
