"""The database: one SQLite file holding LangGraph's checkpoints and our ledger side by side.

One connection serves both, behind one lock, so a process never races itself. Several processes
share the file safely: WAL mode lets readers run beside a writer, and a busy timeout makes a
writer wait for the lock instead of failing.

`HitlSqliteSaver` is LangGraph's `SqliteSaver` with the async methods filled in (run on a worker
thread), so the same saver serves `invoke` and `ainvoke`; one schema, not two.

Grouped commits (`SqliteStore(group_commits=True)`): plain `SqliteSaver` commits every
checkpoint and every task's writes on its own, each commit waiting on a disk flush (eleven for one
pause+resume of a three-node graph). With grouped commits the saver commits once per graph step,
with the checkpoint LangGraph writes after each step (which holds what the step's tasks returned);
everything else (the input and `__start__` checkpoints, the tasks' writes, the resume / interrupt /
error writes) is kept in memory and joins the next commit on the connection: the next step's, a
`run_once` effect record's, or the ledger transaction the runner makes after every run. A pause is
thus committed together with its ledger row, atomically.

What a SIGKILL can lose, and why it is safe:

- A decision: never. The ledger commits the claim before the graph runs, and `recover()` applies a
  decided review again from the last committed checkpoint.
- A finished step: never, with `durability="sync"`, which makes LangGraph wait for the step's
  checkpoint (here: its commit) before the next step starts, as with plain `SqliteSaver`. With
  LangGraph's default `"async"` the step's checkpoint is committed in the background while the
  next step runs, in plain LangGraph and here alike, so a kill can make a finished step run again.
  Within one step, a task that finished while a sibling still runs is committed with the step (in
  plain LangGraph, by a background commit of its own); an approved effect in such a task belongs
  in `effects.run_once`, whose record commits at once.
- Rows since the last commit: the input checkpoint of a start run killed before its first step
  finished (the thread fails; nothing was decided), and a pause (its interrupt) killed before the
  ledger's commit. Then the thread shows as failed, stopped before the gate's step, and
  `hitl recover` runs that step again up to its pause (a gate has no side effect before it) and
  lists the review; plain `SqliteSaver` would have committed the pause and the runner would have
  found it by itself. `hitl recover` never runs a committed step again.

Reads through the saver (`get_tuple`, so `get_state`) see the rows not yet committed. Grouped
commits need a runner (or something else) committing on the connection after each run: used on
its own, the last rows of a run wait in memory until the next commit or `close()`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes, pending_writes_sql

from hitl_graphs.errors import ConfigError

DEFAULT_DB = Path("checkpoints") / "hitl.sqlite"
DB_ENV = "HITL_DB"

Synchronous = Literal["FULL", "NORMAL"]

_CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
_WRITE_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value"


@contextmanager
def write_transaction(
    conn: sqlite3.Connection, lock: threading.Lock, *, relaxed: bool = False
) -> Iterator[sqlite3.Connection]:
    """One `BEGIN IMMEDIATE` ... `COMMIT` on the shared connection, rolled back on error.

    `relaxed` commits without waiting for the disk flush (`synchronous=NORMAL` for this commit
    only). That loses nothing to a process crash, only to power loss, and the ledger rows it is
    used for are followed by a graph run whose own checkpoint commit (`FULL`) flushes the WAL,
    these rows included, before the caller hears back. What a power cut could still drop is the
    ledger's record after the run's last checkpoint, which `reconcile` rebuilds from the
    checkpoints. So a durable cycle costs the disk flushes plain LangGraph pays, and no more.
    """
    with lock:
        if relaxed:
            conn.execute("PRAGMA synchronous=NORMAL")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
        finally:
            if relaxed:
                conn.execute("PRAGMA synchronous=FULL")


def default_db_path() -> Path:
    """`$HITL_DB` if set, else `checkpoints/hitl.sqlite` (relative to the working directory).

    Example:
        >>> str(default_db_path()).endswith(".sqlite")
        True"""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


class _Connection(sqlite3.Connection):
    """A connection whose `commit()` first writes the saver's deferred rows into the transaction."""

    hitl_before_commit: Callable[[], Callable[[bool], None] | None] | None = None

    def commit(self) -> None:
        before = self.hitl_before_commit
        after = before() if before is not None else None
        try:
            super().commit()
        except BaseException:
            if after is not None:
                after(False)
            raise
        if after is not None:
            after(True)


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

    With `group_commits=True` (the connection must come from `SqliteStore`), it commits once per
    graph step and lets everything else join the next commit on the connection; see the module
    docstring for what that means after a crash.
    """

    def __init__(self, conn: sqlite3.Connection, *, serde: Any = None, group_commits: bool = False) -> None:
        super().__init__(conn, serde=serde)
        self.group_commits = group_commits
        self._deferred_checkpoints: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        self._deferred_writes: dict[tuple[str, str, str, str, int], tuple[bool, tuple[Any, ...]]] = {}
        self._deferred_lock = threading.Lock()
        if group_commits:
            if not isinstance(conn, _Connection):
                raise ConfigError("group_commits needs the connection SqliteStore opens")
            conn.hitl_before_commit = self._write_deferred

    # -- grouped commits -------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if not self.group_commits:
            return super().put(config, checkpoint, metadata, new_versions)
        thread_id = str(config["configurable"]["thread_id"])
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
        row = (thread_id, checkpoint_ns, checkpoint["id"], config["configurable"].get("checkpoint_id"), type_, blob, meta)
        with self._deferred_lock:
            self._deferred_checkpoints[(thread_id, checkpoint_ns, checkpoint["id"])] = row
        if metadata.get("source") == "loop" and metadata.get("step", 0) >= 1:
            # the checkpoint after a step of real tasks (step 0 follows only the input): commit it
            # with everything waiting, before LangGraph (with durability="sync") starts the next step
            with self.lock:
                self.setup()
                self.conn.commit()
        return {"configurable": {"thread_id": config["configurable"]["thread_id"], "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not self.group_commits:
            return super().put_writes(config, writes, task_id, task_path)
        replace = all(w[0] in WRITES_IDX_MAP for w in writes)  # as SqliteSaver: REPLACE, else IGNORE
        thread_id = str(config["configurable"]["thread_id"])
        checkpoint_ns = str(config["configurable"]["checkpoint_ns"])
        checkpoint_id = str(config["configurable"]["checkpoint_id"])
        rows = [
            (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel,
             *self.serde.dumps_typed(value))
            for idx, (channel, value) in enumerate(writes)
        ]
        with self._deferred_lock:
            for row in rows:
                key = (thread_id, checkpoint_ns, checkpoint_id, task_id, row[5])
                if replace or key not in self._deferred_writes:
                    self._deferred_writes[key] = (replace, row)

    def commit_deferred(self) -> None:
        """Commit the rows waiting for the next commit, if any (`close()` does it too)."""
        if self._deferred_checkpoints or self._deferred_writes:
            with self.lock:
                self.conn.commit()

    def _write_deferred(self) -> Callable[[bool], None] | None:
        """Called by the connection just before it commits: add the deferred rows to the transaction."""
        with self._deferred_lock:
            if not self._deferred_checkpoints and not self._deferred_writes:
                return None
            checkpoints, writes = self._deferred_checkpoints, self._deferred_writes
            self._deferred_checkpoints, self._deferred_writes = {}, {}

        def restore() -> None:
            with self._deferred_lock:
                for k, v in checkpoints.items():
                    self._deferred_checkpoints.setdefault(k, v)
                for k, w in writes.items():
                    self._deferred_writes.setdefault(k, w)

        try:
            if checkpoints:
                self.conn.executemany(
                    f"INSERT OR REPLACE INTO checkpoints ({_CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    list(checkpoints.values()),
                )
            for replace in (True, False):
                rows = [row for r, row in writes.values() if r is replace]
                if rows:
                    self.conn.executemany(
                        f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO writes ({_WRITE_COLUMNS}) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        rows,
                    )
        except BaseException:
            self.conn.rollback()  # the commit fails as a whole: nothing half-written stays open
            restore()
            raise

        def after(committed: bool) -> None:
            if not committed:
                restore()

        return after

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if not (self._deferred_checkpoints or self._deferred_writes):
            return super().get_tuple(config)
        thread_id = str(config["configurable"]["thread_id"])
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        with self._deferred_lock:
            checkpoints = {k[2]: row for k, row in self._deferred_checkpoints.items()
                           if k[0] == thread_id and k[1] == checkpoint_ns}
            writes = [w for k, w in self._deferred_writes.items() if k[0] == thread_id and k[1] == checkpoint_ns]
        if not checkpoints and not writes:
            return super().get_tuple(config)
        wanted = get_checkpoint_id(config)
        with self.cursor(transaction=False) as cur:
            row = checkpoints.get(wanted) if wanted else None
            if row is None:
                if wanted:
                    cur.execute(f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                                "AND checkpoint_id = ?", (thread_id, checkpoint_ns, wanted))
                else:
                    cur.execute(f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                                "ORDER BY checkpoint_id DESC LIMIT 1", (thread_id, checkpoint_ns))
                row = cur.fetchone()
                if not wanted and checkpoints and (row is None or max(checkpoints) > row[2]):
                    row = checkpoints[max(checkpoints)]
            if row is None:
                return None
            checkpoint_id = row[2]
            cur.execute(pending_writes_sql(self._has_task_path), (thread_id, checkpoint_ns, checkpoint_id))
            merged = {(r[0], r[5]): r for r in cur.fetchall()}
        for replace, w in writes:
            if w[2] == checkpoint_id and (replace or (w[3], w[5]) not in merged):
                merged[(w[3], w[5])] = (w[3], w[6], w[7], w[8], w[4], w[5])  # task_id, channel, type, value, path, idx
        _, _, _, parent_id, type_, blob, metadata = row
        if not wanted:
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}}
        return CheckpointTuple(
            config,
            self.serde.loads_typed((type_, blob)),
            cast(CheckpointMetadata, json.loads(metadata) if metadata is not None else {}),
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": parent_id}}
            if parent_id else None,
            load_pending_writes(merged.values(), self.serde),
        )

    def latest_checkpoint_id(self, thread_id: str, checkpoint_ns: str = "") -> str | None:
        """The id of the thread's latest checkpoint, None if it has none: one index lookup, no
        deserialising (`get_state` costs ten times more). Sees rows waiting for a commit."""
        with self._deferred_lock:
            waiting = [k[2] for k in self._deferred_checkpoints if k[0] == thread_id and k[1] == checkpoint_ns]
        with self.cursor(transaction=False) as cur:
            cur.execute("SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?",
                        (thread_id, checkpoint_ns))
            (stored,) = cur.fetchone()
        return max([i for i in (stored, *waiting) if i], default=None)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        self.commit_deferred()
        yield from super().list(config, filter=filter, before=before, limit=limit)

    def delete_thread(self, thread_id: str) -> None:
        self.commit_deferred()
        super().delete_thread(thread_id)

    def get_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Mapping[str, Any]:
        self.commit_deferred()
        return super().get_delta_channel_history(config=config, channels=channels)

    # -- async: the sync methods on a worker thread ------------------------------------------

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
        group_commits: Commit LangGraph's rows once per graph step, and a pause or an end
            together with the runner's ledger transaction, instead of every checkpoint and every
            task's writes on its own: fewer disk flushes per run; after a crash the same decisions
            and (with `durability="sync"`) the same finished steps are kept (see the module
            docstring). Off by default.

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
        group_commits: bool = False,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ConfigError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = str(path) if path is not None else str(default_db_path())
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, check_same_thread=False, timeout=busy_timeout, factory=_Connection)
        self.conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.synchronous = synchronous
        self.saver = HitlSqliteSaver(self.conn, group_commits=group_commits)
        # our own rows may skip the disk flush when LangGraph's next checkpoint commit flushes them
        # (see `write_transaction`); not when a pause's checkpoint rides on our commit
        self.relaxed_ledger = synchronous == "FULL" and not group_commits
        self.saver.setup()
        self.lock = self.saver.lock

    def close(self) -> None:
        """Commit what waits for a commit, then close the connection. Safe to call twice."""
        try:
            self.saver.commit_deferred()
        except sqlite3.ProgrammingError:  # already closed
            pass
        with self.lock:
            self.conn.close()

    def __exit__(self, *exc: object) -> None:
        self.close()
