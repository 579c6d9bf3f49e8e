"""One way to open a PostgreSQL connection, set up as LangGraph's `PostgresSaver` needs it.

`PostgresSaver` runs `CREATE INDEX CONCURRENTLY` in `setup()` and relies on each statement
committing by itself, so its connections need `autocommit=True`; `prepare_threshold=0` keeps psycopg
from preparing statements, which breaks behind a transaction-mode pooler (PgBouncer) and across the
saver's pipelines; `row_factory=dict_row` is what its queries read rows with. Everything of ours that
talks to the server opens connections here, so the settings cannot drift apart.

A wrong URL or a server that is down is one `StorageError` line naming the URL (password hidden)
and what to check, not psycopg's multi-line traceback.
"""

from __future__ import annotations

import re
from typing import Any, Final

import psycopg
from psycopg.rows import DictRow, dict_row

from hitl_graphs.errors import StorageError

#: What `PostgresSaver` needs of a connection (or of a `psycopg_pool` pool's `kwargs`).
CONNECTION_KWARGS: Final[dict[str, Any]] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


def connect(url: str, *, connect_timeout: int = 10) -> psycopg.Connection[DictRow]:
    """Open a connection to `url` (`postgresql://user@host:port/db`) for PostgresSaver and our tables.

    Args:
        url: a libpq connection URL.
        connect_timeout: seconds to wait for the server before giving up: a server that is down
            should be an error quickly, not a hang.

    Raises:
        StorageError: the URL is malformed, the server is unreachable, or it refused us.

    Example::

        with connect("postgresql://postgres@127.0.0.1:5432/hitl") as conn:
            conn.execute("SELECT 1").fetchone()   # {'?column?': 1}
    """
    try:
        return psycopg.connect(url, connect_timeout=connect_timeout, **CONNECTION_KWARGS)
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise StorageError(
            f"cannot connect to PostgreSQL at {redact(url)}: {reason}; "
            "check the URL (postgresql://user@host:port/db) and that the server is running"
        ) from exc


def redact(url: str) -> str:
    """`url` with its password replaced by `***`, fit for an error message or a log line."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
