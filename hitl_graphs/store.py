"""The database: one SQLite file holding LangGraph's checkpoints and our ledger side by side.

One connection serves both, behind one lock, so a process never races itself. Several processes
share the file safely: WAL mode lets readers run beside a writer, and a busy timeout makes a
writer wait for the lock instead of failing.

`HitlSqliteSaver` is LangGraph's `SqliteSaver` with the async methods filled in (run on a worker
thread), so the same saver serves `invoke` and `ainvoke`; one schema, not two.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from hitl_graphs.errors import ConfigError

DEFAULT_DB = Path("checkpoints") / "hitl.sqlite"
DB_ENV = "HITL_DB"

Synchronous = Literal["FULL", "NORMAL"]


def default_db_path() -> Path:
    """`$HITL_DB` if set, else `checkpoints/hitl.sqlite` (relative to the working directory).

    Example:
        >>> str(default_db_path()).endswith(".sqlite")
        True"""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


class HitlSqliteSaver(SqliteSaver):
    """`SqliteSaver` that also serves LangGraph's async API, on a worker thread.

    Example:
        >>> import sqlite3
        >>> saver = HitlSqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
        >>> import asyncio
        >>> asyncio.run(saver.aget_tuple({"configurable": {"thread_id": "none"}})) is None
        True

    SQLite calls are short and serialised by the saver's lock; running them off the event loop
    keeps `ainvoke` responsive while another process holds the write lock.
    """

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Mapping[str, Any]:
        return await asyncio.to_thread(lambda: self.get_delta_channel_history(config=config, channels=channels))


class SqliteStore(AbstractContextManager["SqliteStore"]):
    """An open SQLite database: the LangGraph saver plus a connection for the ledger.

    Args:
        path: The database file; created with its folder if missing. Defaults to `$HITL_DB` or
            `checkpoints/hitl.sqlite`. `":memory:"` works for a single process.
        busy_timeout: Seconds a writer waits for another process's lock before failing.
        synchronous: `FULL` (default) flushes the WAL on every commit, surviving power loss;
            `NORMAL` survives a process crash (SIGKILL) but may lose the last commits on power loss.

    Example:
        >>> with SqliteStore(":memory:") as store:
        ...     store.conn.execute("PRAGMA journal_mode").fetchone()[0] in {"wal", "memory"}
        True
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout: float = 30.0,
        synchronous: Synchronous = "FULL",
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ConfigError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = str(path) if path is not None else str(default_db_path())
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, check_same_thread=False, timeout=busy_timeout)
        self.conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.saver = HitlSqliteSaver(self.conn)
        self.saver.setup()
        self.lock = self.saver.lock

    def close(self) -> None:
        """Close the connection. Safe to call twice."""
        with self.lock:
            self.conn.close()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def iter_thread_ids(self) -> Iterator[str]:
        """Every thread id that has a checkpoint (a full scan: used only by `reconcile`)."""
        with self.lock:
            rows = self.conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
        for (thread_id,) in rows:
            yield thread_id
