"""Create or upgrade the PostgreSQL schema, safe when many processes do it at once.

Two parts, in order: LangGraph's checkpoint tables (`PostgresSaver.setup()`, which keeps its own
version table), then ours (`schema`, with a version row; a database from a newer hitl_graphs is
refused with one line and left unchanged).

Workers and servers call `migrate(url)` when they start, so several may run it at the same moment
on an empty database. LangGraph's `PostgresSaver.setup()` is not safe under that race: it reads the
migration version, then inserts it, with no lock, and two callers fail on duplicate keys. So every
caller first takes one PostgreSQL advisory lock, and only its holder runs `setup()`; the others
wait, then find the work done.

Why polled: a caller blocked in `pg_advisory_lock()` sits inside a statement, and so inside a
transaction; `setup()` runs `CREATE INDEX CONCURRENTLY`, which waits for every transaction older
than itself to end: the holder waits for the waiter, the waiter for the holder, forever. Polling
`pg_try_advisory_lock()` on an autocommit connection leaves no transaction open between tries.

The lock is session-level, so it is released when we unlock or when the connection closes,
whatever happens to this process.
"""

from __future__ import annotations

import time
from typing import Final

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import DictRow

from hitl_graphs.errors import DatabaseBusyError, StorageError
from hitl_graphs.storage.postgres import schema
from hitl_graphs.storage.postgres.connection import connect, redact

#: The advisory lock every migration takes: b"hitl" in the high half, 1 ("schema") in the low half.
MIGRATION_LOCK_KEY: Final[int] = (0x6869746C << 32) | 1


def migrate(url: str, *, lock_timeout: float = 120.0, poll_interval: float = 0.05) -> None:
    """Create or upgrade every table the PostgreSQL store needs; a no-op on an up-to-date database.

    Safe to call from many processes at once (each waits its turn on an advisory lock taken by
    polling; see the module docstring for why not a blocking lock).

    Args:
        url: the database, `postgresql://user@host:port/db`.
        lock_timeout: seconds to wait for another process's migration before giving up.
        poll_interval: seconds between tries of the lock.

    Raises:
        StorageError: the server cannot be reached, or a migration failed (nothing half-done is kept
            by LangGraph's migrations, which each run as one statement).
        DatabaseBusyError: another process held the migration lock for `lock_timeout` seconds.

    Example::

        migrate("postgresql://postgres@127.0.0.1:5432/hitl")   # at every worker's start
    """
    with connect(url) as conn:
        _lock(conn, url, lock_timeout=lock_timeout, poll_interval=poll_interval)
        try:
            schema.refuse_newer(schema.read_version(conn), url)
            PostgresSaver(conn).setup()
            schema.apply(conn, url)
        except psycopg.Error as exc:
            raise StorageError(f"migrating {redact(url)} failed: {' '.join(str(exc).split())}") from exc
        finally:
            if not conn.closed and not conn.broken:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))


def _lock(conn: psycopg.Connection[DictRow], url: str, *, lock_timeout: float, poll_interval: float) -> None:
    deadline = time.monotonic() + lock_timeout
    while True:
        row = conn.execute("SELECT pg_try_advisory_lock(%s) AS locked", (MIGRATION_LOCK_KEY,)).fetchone()
        if row is not None and row["locked"]:
            return
        if time.monotonic() >= deadline:
            holder = conn.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND ((classid::bigint << 32) | objid::bigint) = %s",
                (MIGRATION_LOCK_KEY,),
            ).fetchone()
            who = f"server process {holder['pid']}" if holder else "another process"
            raise DatabaseBusyError(
                f"the schema of {redact(url)} is being migrated by {who} for over {lock_timeout:g} s; "
                "wait for it to finish (or end that process), then retry: retrying is safe"
            )
        time.sleep(poll_interval)
