"""The database's schema version: create it once, upgrade it in order, refuse a newer one.

A version row (`hitl_meta`) says which schema a file holds. Opening a file whose schema is
current runs no DDL at all, so opening takes no write lock: a command that only reads, or a
`hitl approve` started while another process runs the thread, never queues behind that writer
before it has looked at the thread. A file from before versioning (no row) is version 1. A file
written by a newer hitl_graphs is refused with one line instead of failing later with a
confusing error (or, worse, half working).

Upgrades run inside one `BEGIN IMMEDIATE` transaction, so two processes opening an old file at
once upgrade it once; every step is idempotent (`IF NOT EXISTS`), so a step interrupted by a
crash simply runs again.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from hitl_graphs.errors import ConfigError, SchemaVersionError

SCHEMA_VERSION = 3
"""The schema this release writes. 1: the tables before versioning; 2: the version row;
3: approvals remembered per workflow and actor (`hitl_remembered`)."""

_META = """
CREATE TABLE IF NOT EXISTS hitl_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""


def _tables() -> str:
    # imported here: these modules import the store, which opens the schema
    from hitl_graphs import audit, effects, feedback, ledger

    return ledger.SCHEMA + audit.SCHEMA + feedback.SCHEMA + effects.SCHEMA


def read_version(conn: sqlite3.Connection) -> int | None:
    """The file's schema version: None for a new (empty) file, 1 for a file from before versioning."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "hitl_meta" in tables:
        row = conn.execute("SELECT value FROM hitl_meta WHERE key = 'schema_version'").fetchone()
        if row is not None:
            try:
                return int(row[0])
            except ValueError:
                raise ConfigError(f"the database's schema version {row[0]!r} is not a number; the file was edited") from None
    return 1 if "hitl_threads" in tables else None


def ensure_schema(conn: sqlite3.Connection, lock: threading.Lock, path: str, setup_saver: Callable[[], None]) -> None:
    """Bring the file to `SCHEMA_VERSION`, creating it if new; refuse a newer file.

    `setup_saver` creates LangGraph's checkpoint tables (the saver's own, idempotent `setup`);
    it commits on its own, so it runs just before our transaction, only when ours runs.

    Raises:
        SchemaVersionError: the file was written by a newer hitl_graphs.
    """
    with lock:
        version = read_version(conn)
        if version == SCHEMA_VERSION:
            return
        _refuse_newer(version, path)
        setup_saver()
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = read_version(conn)  # another process may have upgraded it meanwhile
            _refuse_newer(version, path)
            if version != SCHEMA_VERSION:
                for statement in (_META + _tables()).split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute("INSERT OR REPLACE INTO hitl_meta (key, value) VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def _refuse_newer(version: int | None, path: str) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"database {path} has schema version {version}, newer than this hitl_graphs reads ({SCHEMA_VERSION}); "
            "upgrade hitl-graphs (pip install -U hitl-graphs) to open it"
        )
