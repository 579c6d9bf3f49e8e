"""`SqliteStore`: one SQLite file holding LangGraph's checkpoints and our tables (the default store).

It opens the connection (`connection`), brings the schema up to date (`schema`), and hands out
the ledger, effects, audit and feedback (`hitl_graphs.storage.base` says what each promises).
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

from hitl_graphs.audit import key_from_env
from hitl_graphs.errors import ConfigError, DatabaseBusyError
from hitl_graphs.locations import default_db_path
from hitl_graphs.serde import GuardedSerializer
from hitl_graphs.storage.base import AtDecision
from hitl_graphs.storage.sqlite.audit import SqliteAudit
from hitl_graphs.storage.sqlite.connection import HitlConnection, Synchronous, busy_message, is_busy, busy_as_error
from hitl_graphs.storage.sqlite.effects import SqliteEffects
from hitl_graphs.storage.sqlite.feedback import SqliteFeedback
from hitl_graphs.storage.sqlite.ledger import SqliteLedger
from hitl_graphs.storage.sqlite.liveness import RunMarks
from hitl_graphs.storage.sqlite.queue import SqliteQueue
from hitl_graphs.storage.sqlite.saver import HitlSqliteSaver
from hitl_graphs.storage.sqlite.schema import ensure_schema
from hitl_graphs.storage.sqlite.tokens import SqliteTokens
from hitl_graphs.storage.sqlite.webhooks import SqliteWebhooks
from hitl_graphs.storage.sqlite.writers import WriterQueue



class SqliteStore(AbstractContextManager["SqliteStore"]):
    """An open SQLite database: LangGraph's saver and our tables on one connection (a `Store`).

    Args:
        path: The database file; created with its folder if missing. Defaults to `$HITL_DB` or
            `checkpoints/hitl.sqlite`. `":memory:"` works for a single process.
        busy_timeout: Seconds a writer waits for another process's lock before failing.
        synchronous: `FULL` (default) flushes the WAL after every commit that must survive power
            loss, before the caller goes on, and after the write lock is released, so other
            processes write meanwhile (see `connection`); `NORMAL` survives a process crash
            (SIGKILL) but may lose the last commits on power loss.
        audit_key: A secret the audit log's entries are keyed with (HMAC), so a chain rebuilt
            without it is detected; defaults to `$HITL_AUDIT_KEY` (none when unset).

    Example:
        >>> with SqliteStore(":memory:") as store:
        ...     store.conn.execute("PRAGMA journal_mode").fetchone()[0] in {"wal", "memory"}
        ...     store.ledger.pending()
        True
        []
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout: float = 30.0,
        synchronous: Synchronous = "FULL",
        audit_key: str | bytes | None = None,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ConfigError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = str(path) if path is not None else str(default_db_path())
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.location = self.path
        self.conn = sqlite3.connect(self.path, check_same_thread=False, timeout=busy_timeout, factory=HitlConnection)
        self.busy_timeout = busy_timeout
        self.conn.hitl_busy_timeout = busy_timeout
        key = audit_key.encode() if isinstance(audit_key, str) else audit_key
        self.audit_key = key if key is not None else key_from_env()
        """The secret the audit log's entries are keyed with (`$HITL_AUDIT_KEY`); see `hitl_graphs.audit`."""
        self.conn.hitl_audit_key = self.audit_key
        self.marks = RunMarks(None if self.path == ":memory:" else self.path)
        """Which runs hold a thread right now (see `hitl_graphs.liveness`)."""
        self.conn.hitl_writers = WriterQueue(None if self.path == ":memory:" else self.path)
        try:
            self.conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            wal = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
            if synchronous == "FULL" and wal:  # flushed by the connection, outside the write lock (`connection`)
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.hitl_wal = os.path.abspath(self.path) + "-wal"  # a later chdir changes nothing
            else:
                self.conn.execute(f"PRAGMA synchronous={synchronous}")
            self.conn.hitl_synchronous = synchronous
            self.synchronous = synchronous
            self.saver = HitlSqliteSaver(self.conn, serde=GuardedSerializer())
            self.lock = self.saver.lock
            with busy_as_error(busy_timeout):
                ensure_schema(self.conn, self.lock, self.path, self.saver.setup)
            self.saver.is_setup = True  # our schema version says LangGraph's tables are there
            self.ledger = SqliteLedger(self.conn, self.lock, self.marks)
            self.effects = SqliteEffects(self.conn, self.lock)
            self.audit = SqliteAudit(self.conn, self.lock)
            self.feedback = SqliteFeedback(self.conn, self.lock)
            self.tokens = SqliteTokens(self.conn, self.lock, self.path)
            self.webhooks = SqliteWebhooks(self.conn, self.lock, self.marks)
            self.queue = SqliteQueue(self.conn, self.lock, self.marks)
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
                raise DatabaseBusyError(busy_message(busy_timeout)) from None
            raise ConfigError(f"{self.path} is not a hitl_graphs database (SQLite says: {exc})") from None
        except BaseException:
            self.conn.close()
            raise

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        """The id of the thread's latest checkpoint, None if it has none (one index lookup)."""
        return self.saver.latest_checkpoint_id(thread_id)

    def at_decision(self, thread_id: str) -> AtDecision:
        """The three reads a decision starts with (in process, so no round trip to save)."""
        return AtDecision(self.ledger.thread(thread_id), self.ledger.reviews(thread_id, ("pending",)),
                          self.saver.latest_checkpoint_id(thread_id))

    def close(self) -> None:
        """Commit what waits for a commit, then close the connection. Safe to call twice."""
        try:
            self.saver.commit_deferred()
        except sqlite3.ProgrammingError:  # already closed
            pass
        self.tokens.close()
        with self.lock:
            self.conn.close()

    def __exit__(self, *exc: object) -> None:
        self.close()
