"""The PostgreSQL store: for a team whose reviews and agent runs spread over processes and machines.

SQLite stays the embedded default; this backend keeps LangGraph's checkpoints (`PostgresSaver`) and,
as it grows, our ledger, effects, audit and feedback tables in one PostgreSQL database. It needs the
`postgres` extra (`pip install 'hitl-graphs[postgres]'`): psycopg 3 and langgraph-checkpoint-postgres.

    store        `PostgresStore(url)`: the `Store` (saver, ledger, effects, audit, feedback) on one pool
    connection   `connect(url)`: a connection set up the way PostgresSaver needs, with clear errors
    migrate      `migrate(url)`: create or upgrade the schema; safe when many processes call it at once
    schema       our tables and their version; ledger, effects, audit, feedback, liveness, saver: the parts
"""

from __future__ import annotations

try:
    import langgraph.checkpoint.postgres  # noqa: F401
    import psycopg  # noqa: F401
except ImportError as exc:  # pragma: no cover - only without the extra
    from hitl_graphs.errors import ConfigError

    raise ConfigError(
        f"the PostgreSQL store needs the postgres extra ({exc.name} is not installed): "
        "pip install 'hitl-graphs[postgres]'"
    ) from exc

from hitl_graphs.storage.postgres.connection import connect
from hitl_graphs.storage.postgres.migrate import migrate
from hitl_graphs.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore", "connect", "migrate"]
