"""Where threads, reviews, checkpoints and the audit log are kept.

`Store` is the boundary (`hitl_graphs.storage.base`); `SqliteStore` the embedded default.
`open_store` picks one from a location, as `Runner.open`, `--db` and `$HITL_DB` do.
"""

from __future__ import annotations

import os
from typing import Any

from hitl_graphs.errors import ConfigError
from hitl_graphs.locations import default_location
from hitl_graphs.storage.base import (
    AtDecision,
    AuditStore,
    DeliveryRow,
    EffectStore,
    FeedbackStore,
    LedgerStore,
    Liveness,
    NewThread,
    ReviewRow,
    Store,
    Synced,
    ThreadRow,
    TokenRow,
    TokenStore,
    WebhookRow,
    WebhookStore,
    WorkQueue,
)
from hitl_graphs.storage.sqlite import DB_ENV, HitlSqliteSaver, SqliteStore, default_db_path

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""A location starting with one of these opens the PostgreSQL store (`pip install 'hitl-graphs[postgres]'`)."""


def open_store(location: str | os.PathLike[str] | None = None, **options: Any) -> Store:
    """Open the store at `location`: a SQLite file path (default `$HITL_DB`, else
    `checkpoints/hitl.sqlite`), `":memory:"`, or a `postgresql://` URL (the PostgreSQL store,
    `hitl_graphs.storage.postgres`). `options` go to the store's constructor.

    Example:
        >>> with open_store(":memory:") as store:
        ...     store.ledger.pending()
        []

    Raises:
        ConfigError: a URL of a database this release cannot open.
    """
    text = os.fspath(location) if location is not None else default_location()
    if text.startswith(POSTGRES_SCHEMES):
        from hitl_graphs.storage.postgres import PostgresStore  # needs the postgres extra

        return PostgresStore(text, **options)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise ConfigError(f"cannot open {scheme}:// databases: pass a SQLite file path or a postgresql:// URL")
    return SqliteStore(text, **options)


def migrate(location: str | os.PathLike[str] | None = None) -> None:
    """Create or upgrade the schema at `location` (as `open_store` reads it), then close: what
    `hitl db migrate` runs, and what a worker or server may run at its start. Safe from many
    processes at once on either store (PostgreSQL: under an advisory lock taken by polling, see
    `hitl_graphs.storage.postgres.migrate`; SQLite: under its write lock). A no-op when up to date.

    Example:
        >>> import tempfile, os
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     migrate(os.path.join(tmp, "hitl.sqlite"))
        ...     os.path.exists(os.path.join(tmp, "hitl.sqlite"))
        True

    Raises:
        SchemaVersionError: the database was written by a newer hitl_graphs (nothing changed).
        StorageError: the server cannot be reached.
    """
    text = os.fspath(location) if location is not None else default_location()
    if text.startswith(POSTGRES_SCHEMES):
        from hitl_graphs.storage.postgres import migrate as migrate_postgres  # needs the postgres extra

        migrate_postgres(text)
        return
    open_store(text).close()  # opening a file brings its schema up to date


__all__ = [
    "AtDecision",
    "DB_ENV",
    "AuditStore",
    "DeliveryRow",
    "EffectStore",
    "FeedbackStore",
    "HitlSqliteSaver",
    "LedgerStore",
    "Liveness",
    "NewThread",
    "ReviewRow",
    "SqliteStore",
    "Store",
    "Synced",
    "ThreadRow",
    "TokenRow",
    "TokenStore",
    "WebhookRow",
    "WebhookStore",
    "WorkQueue",
    "default_db_path",
    "migrate",
    "open_store",
]
