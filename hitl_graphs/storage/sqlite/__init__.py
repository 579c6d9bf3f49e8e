"""The SQLite store: the embedded default, one file (see `SqliteStore`)."""

from hitl_graphs.storage.base import DEFER_KEY
from hitl_graphs.storage.sqlite.saver import HitlSqliteSaver
from hitl_graphs.storage.sqlite.schema import SCHEMA_VERSION
from hitl_graphs.locations import DB_ENV, DEFAULT_DB, default_db_path
from hitl_graphs.storage.sqlite.store import SqliteStore

__all__ = ["DB_ENV", "DEFAULT_DB", "DEFER_KEY", "SCHEMA_VERSION", "HitlSqliteSaver", "SqliteStore", "default_db_path"]
