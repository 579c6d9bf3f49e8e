"""Old import path of the SQLite schema: see `hitl_graphs.storage.sqlite.schema`."""

from hitl_graphs.storage.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, ensure_schema, read_version

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "ensure_schema", "read_version"]
