"""Where threads, reviews, checkpoints and the audit log are kept.

`Store` is the boundary (`hitl_graphs.storage.base`); `SqliteStore` the embedded default.
`open_store` picks one from a location, as `Runner.open`, `--db` and `$HITL_DB` do.
"""

from __future__ import annotations

import os
from typing import Any

from hitl_graphs.errors import ConfigError
from hitl_graphs.storage.base import (
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
    text = os.fspath(location) if location is not None else None
    if text is not None and text.startswith(POSTGRES_SCHEMES):
        from hitl_graphs.storage.postgres import PostgresStore  # needs the postgres extra

        return PostgresStore(text, **options)
    if text is not None and "://" in text:
        scheme = text.split("://", 1)[0]
        raise ConfigError(f"cannot open {scheme}:// databases: pass a SQLite file path or a postgresql:// URL")
    return SqliteStore(text, **options)


__all__ = [
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
    "default_db_path",
    "open_store",
]
