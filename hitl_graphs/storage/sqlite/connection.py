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

**The flush happens after the write lock is released.** With `synchronous="FULL"` on a WAL
file, SQLite itself runs with `NORMAL` and the connection flushes the WAL (`fdatasync`) after
each commit that must reach the disk, once the write lock and the writers' queue (`writers`) are
released, and before the caller goes on. A flushed commit still reaches the disk before its
writer hears back or acts on it (a decision before the graph runs, an effect's result before the
node goes on), exactly as with SQLite's own `FULL`; the WAL is written in order, so a flush
covers every commit before it. What changes is only that the write lock is not held through the
disk's flush: another process writes meanwhile, and may read the commit during the flush (a few
milliseconds) before it is on disk. Whatever that process writes because of it is flushed by its
own commit, which covers ours; only what it shows from a read alone (a listing, "already decided")
can be undone by a power cut within those milliseconds, as if the cut had come before our commit.
LangGraph's own commits on the connection (runs with a checkpoint per step) are flushed the same way.

**Flushes are shared** (group commit). Threads that commit on the connection at about the same
time (an event loop resuming many threads, a server's worker threads) need not each wait for a
flush of their own: since the WAL is written in order, one `fdatasync` started after a commit
covers it and every commit before it. A thread whose commit a flush already running does not
cover waits for that flush to end, then starts one for all who waited meanwhile.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, Protocol

from hitl_graphs.errors import ConfigError, DatabaseBusyError
from hitl_graphs.storage.sqlite.writers import WriterQueue

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
        self.hitl_writers = WriterQueue(None)
        """Where this file's writers queue before `BEGIN IMMEDIATE` (`writers`); none until the store sets it."""
        self.hitl_wal: str | None = None
        """The WAL file this connection flushes itself after a commit (`synchronous="FULL"` on WAL), else None."""
        self.hitl_flushes = 0
        """How many flushes this connection has made itself (`hitl_wal`)."""
        self._hitl_after: list[Callable[[bool], None]] = []
        self._hitl_in_tx = False
        self._hitl_flush_due = 0
        self._hitl_commits = 0  # commits made on the connection: the WAL holds them up to this count
        self._hitl_flushed = 0  # the count the last finished flush covers
        self._hitl_flushing = False
        self._hitl_flush_lock = threading.Lock()  # over the three counts above (taken as is, no Python call)
        self._hitl_flush_cond = threading.Condition(self._hitl_flush_lock)  # woken only when someone waits
        self._hitl_flush_waiters = 0

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
        wrote = self.in_transaction
        self._hitl_done(self._hitl_commit)
        if not wrote:
            return
        with self._hitl_flush_lock:
            self._hitl_commits += 1
            seq = self._hitl_commits
        if self.hitl_wal is not None and not self.hitl_relaxed:
            if self._hitl_in_tx:
                self._hitl_flush_due = seq  # `write_transaction` flushes once the lock is released
            else:
                self.hitl_flush(seq)

    def hitl_flush(self, upto: int | None = None) -> None:
        """Flush the WAL to disk: every commit made so far on the file is then durable.

        With `upto` (a commit's number on this connection), return as soon as a flush covers
        that commit, sharing a flush with the threads that committed meanwhile (see the module)."""
        if self.hitl_wal is None:
            return
        with self._hitl_flush_lock:
            if upto is None:
                upto = self._hitl_commits
            while self._hitl_flushing:
                self._hitl_flush_waiters += 1
                try:
                    self._hitl_flush_cond.wait()
                finally:
                    self._hitl_flush_waiters -= 1
            if self._hitl_flushed >= upto:
                return  # a flush that started after our commit has covered it
            self._hitl_flushing = True
            covers = self._hitl_commits  # every commit counted here is in the WAL already
        try:
            try:
                fd = os.open(self.hitl_wal, os.O_RDONLY)
            except FileNotFoundError:  # no WAL any more (another program changed the journal mode): the file itself
                fd = os.open(self.hitl_wal.removesuffix("-wal"), os.O_RDONLY)
            try:
                _datasync(fd)
            finally:
                os.close(fd)
        except BaseException:
            self._hitl_flush_done(0)
            raise
        self._hitl_flush_done(covers)

    def _hitl_flush_done(self, covers: int) -> None:
        with self._hitl_flush_lock:
            if covers:
                self._hitl_flushed = max(self._hitl_flushed, covers)
                self.hitl_flushes += 1
            self._hitl_flushing = False
            if self._hitl_flush_waiters:
                self._hitl_flush_cond.notify_all()

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
    flush_due = 0
    with lock:
        hitl = conn if isinstance(conn, HitlConnection) else None
        relaxed = not flush and hitl is not None and hitl.hitl_synchronous == "FULL" and not hitl.hitl_durable_waiting()
        toggled = relaxed and hitl is not None and hitl.hitl_wal is None  # SQLite flushes: skip it for this commit
        if toggled:
            conn.execute("PRAGMA synchronous=NORMAL")
        if hitl is not None:
            hitl.hitl_relaxed = relaxed
            hitl._hitl_in_tx = True
        timeout = _timeout_of(conn)
        writers = hitl.hitl_writers if hitl is not None else WriterQueue(None)
        try:
            with writers.hold(timeout=timeout, busy_message=busy_message(timeout)), busy_as_error(timeout):
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
                flush_due, hitl._hitl_flush_due = hitl._hitl_flush_due, 0
                hitl.hitl_relaxed = False
                hitl._hitl_in_tx = False
            if toggled:
                conn.execute("PRAGMA synchronous=FULL")
    if flush_due and hitl is not None:  # the write lock and the queue are free: others write during our flush
        hitl.hitl_flush(flush_due)


_datasync = getattr(os, "fdatasync", os.fsync)  # as SQLite: the data and the size, not the timestamps


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


def events_waiting(conn: sqlite3.Connection) -> bool:
    """Whether history entries (rows that are not durable) wait to join the next transaction."""
    return isinstance(conn, HitlConnection) and any(not p.durable and p.waiting() for p in conn.hitl_pending)


def write_pending(conn: sqlite3.Connection) -> None:
    """Write the rows waiting for a commit into the open transaction (see `HitlConnection`)."""
    if isinstance(conn, HitlConnection):
        conn.hitl_write_pending()
