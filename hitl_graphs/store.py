"""Old import path of the SQLite store: see `hitl_graphs.storage` (kept so existing imports work)."""

from hitl_graphs.storage.sqlite.connection import (
    HitlConnection,
    PendingRows,
    Synchronous,
    busy_as_error,
    pending_rows,
    write_pending,
    write_transaction,
)
from hitl_graphs.storage.base import DEFER_KEY
from hitl_graphs.storage.sqlite.saver import HitlSqliteSaver
from hitl_graphs.locations import DB_ENV, DEFAULT_DB, default_db_path
from hitl_graphs.storage.sqlite.store import SqliteStore

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "DEFER_KEY",
    "HitlConnection",
    "HitlSqliteSaver",
    "PendingRows",
    "SqliteStore",
    "Synchronous",
    "busy_as_error",
    "default_db_path",
    "pending_rows",
    "write_pending",
    "write_transaction",
]
