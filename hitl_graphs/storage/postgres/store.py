"""`PostgresStore`: LangGraph's checkpoints and our tables in one PostgreSQL database, on one pool.

For a team whose reviews and runs spread over processes and machines (SQLite stays the embedded
default). Opening it brings the schema up to date through `migrate` (safe when many processes
open at once) unless it already is, and refuses a database written by a newer hitl_graphs.

Every part (the saver, the ledger, effects, audit, feedback) takes connections from one
`psycopg_pool.ConnectionPool`, set up as `PostgresSaver` needs (`connection.CONNECTION_KWARGS`);
each of our methods is one transaction on one pooled connection. (A run's checkpoint that rides on
the ledger's next flushed commit goes through a second, small pool of the same pool object:
`commits.Pool`.)
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from psycopg_pool import PoolTimeout

from hitl_graphs.audit import key_from_env
from hitl_graphs.errors import StorageError
from hitl_graphs.serde import GuardedSerializer
from hitl_graphs.storage.postgres import schema
from hitl_graphs.storage.postgres.audit import PostgresAudit
from hitl_graphs.storage.postgres.commits import Pool, flush
from hitl_graphs.storage.postgres.connection import CONNECTION_KWARGS, connect, redact
from hitl_graphs.storage.postgres.effects import PostgresEffects
from hitl_graphs.storage.postgres.feedback import PostgresFeedback
from hitl_graphs.storage.base import AtDecision
from hitl_graphs.storage.postgres.ledger import LATEST_CHECKPOINT, PostgresLedger
from hitl_graphs.storage.postgres.liveness import LeaseMarks
from hitl_graphs.storage.postgres.migrate import migrate
from hitl_graphs.storage.postgres.queue import PostgresQueue
from hitl_graphs.storage.postgres.saver import HitlPostgresSaver
from hitl_graphs.storage.postgres.tokens import PostgresTokens
from hitl_graphs.storage.postgres.webhooks import PostgresWebhooks


class PostgresStore(AbstractContextManager["PostgresStore"]):
    """An open PostgreSQL database (a `Store`).

    Args:
        url: `postgresql://user[:password]@host:port/db`.
        max_connections: the pool's size: the most statements this process runs at once.
        audit_key: the secret the audit log's entries are keyed with (HMAC); defaults to
            `$HITL_AUDIT_KEY` (none when unset). See `hitl_graphs.audit`.

    Raises:
        StorageError: the server cannot be reached, or refused us.
        SchemaVersionError: the database was written by a newer hitl_graphs.

    Example::

        with PostgresStore("postgresql://postgres@127.0.0.1:5432/hitl") as store:
            store.ledger.pending()
    """

    def __init__(self, url: str, *, max_connections: int = 10, audit_key: str | bytes | None = None) -> None:
        self.location = redact(url)
        with connect(url) as conn:
            version = schema.read_version(conn)
            schema.refuse_newer(version, url)
        if version != schema.SCHEMA_VERSION:
            migrate(url)
        key = audit_key.encode() if isinstance(audit_key, str) else audit_key
        self.audit_key = key if key is not None else key_from_env()
        self.pool: Pool = Pool(
            url, kwargs=CONNECTION_KWARGS, min_size=1, max_size=max_connections, open=False,
            name=f"hitl {self.location}",
        )
        try:
            self.pool.open(wait=True, timeout=10)
        except PoolTimeout as exc:
            self.pool.close()
            raise StorageError(f"cannot open connections to PostgreSQL at {self.location}: {exc}") from exc
        self.saver = HitlPostgresSaver(self.pool, serde=GuardedSerializer())
        self.marks = LeaseMarks()
        self.ledger = PostgresLedger(self.pool, self.marks, self.audit_key, self.saver.deferred)
        self.effects = PostgresEffects(self.pool, self.audit_key, self.saver.deferred)
        self.audit = PostgresAudit(self.pool, self.audit_key)
        self.feedback = PostgresFeedback(self.pool)
        self.tokens = PostgresTokens(self.pool)
        self.webhooks = PostgresWebhooks(self.pool, self.marks)
        self.queue = PostgresQueue(self.pool, url)

    def latest_checkpoint_id(self, thread_id: str) -> str | None:
        """The id of the thread's latest top-level checkpoint, None if it has none (nothing loaded)."""
        self.saver.commit_deferred(thread_id)
        with self.pool.connection() as c:
            row = c.execute(LATEST_CHECKPOINT, (thread_id,)).fetchone()
        return row["id"] if row else None

    def at_decision(self, thread_id: str) -> AtDecision:
        """The reads a decision starts with, in one round trip (`PostgresLedger.at_decision`)."""
        self.saver.commit_deferred(thread_id)  # none wait unless a run of this process failed to settle
        return self.ledger.at_decision(thread_id)

    def flush(self) -> None:
        """Make every commit made so far durable (on disk), by this process or any other.

        The store flushes what it promises by itself (see `commits`); this is for a caller that
        wants a history entry (`ledger.add_events`), which only keeps books, on disk now.
        """
        with self.pool.connection() as c:
            flush(c)

    def close(self) -> None:
        """Commit what waits for a commit, then close the pool's connections (and a worker's
        listening one). Safe to call twice."""
        try:
            if not self.pool.closed:
                self.ledger.commit_waiting()
        finally:
            self.queue.close()
            self.pool.close()

    def __exit__(self, *exc: object) -> None:
        self.close()
