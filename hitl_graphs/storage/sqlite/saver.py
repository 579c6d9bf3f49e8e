"""LangGraph's `SqliteSaver`, serving async too and joining the store's transactions.

`HitlSqliteSaver` is LangGraph's `SqliteSaver` with the async methods filled in (run on a worker
thread), so the same saver serves `invoke` and `ainvoke`; one schema, not two.

**Checkpoints at pauses.** The runner runs graphs with LangGraph's `durability="exit"`: a run
writes one checkpoint, where it stops (a pause, the end, an error), instead of one per step.
The saver keeps that checkpoint and its writes in memory (`DEFER_KEY` in the run's config) and
they join the runner's ledger transaction that records the pause: one commit, flushed to disk,
holds the checkpoint, the review and the audit entries, atomically. Plain `SqliteSaver` spends
eleven flushed commits on one pause+resume of a three-node graph; the runner spends four.

Nothing a person or the outside world relies on is lost to a SIGKILL (or, with the default
`synchronous="FULL"`, a power cut), because what matters is committed before anything acts on
it: a decision is committed (`Ledger.claim`) before the graph runs on, an effect's result
(`effects.run_once`) before the node goes on. A run killed mid-way left its last pause's
checkpoint and its recorded decision; `hitl recover` runs it again from there with that decision,
and `run_once` returns recorded results instead of repeating effects. What a kill can cost is
work between two pauses done again (a model call, a step without `run_once`). Pass
`Runner(durability="sync")` for a checkpoint per step, as in plain LangGraph.

Rows that only keep books (a thread's start, a history entry from `record_event`) commit
without waiting for the disk flush (`write_transaction(flush=False)`): a process crash loses
nothing, and the next flushed commit, made before the caller hears back, flushes them too.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes, pending_writes_sql

from hitl_graphs._langgraph_compat import writes_have_task_path
from hitl_graphs.storage.base import DEFER_KEY, note_written
from hitl_graphs.storage.sqlite.connection import HitlConnection
from hitl_graphs.storage.threaded import ThreadedAsync


_CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
_WRITE_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value"


class HitlSqliteSaver(ThreadedAsync, SqliteSaver):
    """`SqliteSaver` that also serves LangGraph's async API (on a worker thread) and can keep a
    run's checkpoints for the next commit.

    Example:
        >>> import sqlite3
        >>> saver = HitlSqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
        >>> import asyncio
        >>> asyncio.run(saver.aget_tuple({"configurable": {"thread_id": "none"}})) is None
        True

    SQLite calls are short and serialised by the saver's lock; running them off the event loop
    keeps `ainvoke` responsive while another process holds the write lock.

    A run whose config carries `DEFER_KEY` (the runner's) has its checkpoints and writes kept in
    memory until the next commit on the connection (the connection must come from
    `SqliteStore`); reads through the saver see them meanwhile. Other runs write as
    `SqliteSaver` does.
    """

    durable = True  # PendingRows: checkpoints only join a flushed commit

    def __init__(self, conn: sqlite3.Connection, *, serde: Any = None) -> None:
        super().__init__(conn, serde=serde)
        self._deferred_checkpoints: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        self._deferred_loaded: dict[tuple[str, str, str], Checkpoint] = {}
        """The checkpoints waiting for a commit as LangGraph handed them over (its own copy), so a
        read before the commit need not decode what this process has just encoded: with a large
        state, that decoding (and the guard's scan of the bytes) cost as much as the run's own save."""
        self._deferred_writes: dict[tuple[str, str, str, str, int], tuple[bool, tuple[Any, ...]]] = {}
        self._deferred_lock = threading.Lock()
        self._can_defer = isinstance(conn, HitlConnection)
        if self._can_defer:
            cast(HitlConnection, conn).hitl_pending.append(self)

    @property
    def commits_with_ledger(self) -> bool:
        """Whether a run's checkpoints can join the ledger's commit (`DEFER_KEY`): on our connection."""
        return self._can_defer

    def _defers(self, config: RunnableConfig) -> bool:
        return self._can_defer and bool(config["configurable"].get(DEFER_KEY))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if not self._defers(config):
            written = super().put(config, checkpoint, metadata, new_versions)
            note_written(config, checkpoint["id"])
            return written
        thread_id = str(config["configurable"]["thread_id"])
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
        row = (thread_id, checkpoint_ns, checkpoint["id"], config["configurable"].get("checkpoint_id"), type_, blob, meta)
        with self._deferred_lock:
            self._deferred_checkpoints[(thread_id, checkpoint_ns, checkpoint["id"])] = row
            self._deferred_loaded[(thread_id, checkpoint_ns, checkpoint["id"])] = checkpoint
        note_written(config, checkpoint["id"])
        return {"configurable": {"thread_id": config["configurable"]["thread_id"], "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not self._defers(config):
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
        """Commit the rows waiting for the next commit, if any (`SqliteStore.close()` does it too)."""
        if self.waiting():
            with self.lock:
                self.conn.commit()

    def waiting(self) -> bool:
        return bool(self._deferred_checkpoints or self._deferred_writes)

    def write(self, conn: sqlite3.Connection) -> Callable[[bool], None] | None:
        """Add the deferred rows to the open transaction (called by the connection)."""
        with self._deferred_lock:
            if not self._deferred_checkpoints and not self._deferred_writes:
                return None
            checkpoints, writes = self._deferred_checkpoints, self._deferred_writes
            self._deferred_checkpoints, self._deferred_writes = {}, {}
            loaded, self._deferred_loaded = self._deferred_loaded, {}

        def after(committed: bool) -> None:
            if committed:
                return
            with self._deferred_lock:  # rolled back: they wait for the next commit again
                for ck, row in checkpoints.items():
                    self._deferred_checkpoints.setdefault(ck, row)
                    if ck in loaded:
                        self._deferred_loaded.setdefault(ck, loaded[ck])
                for wk, write in writes.items():
                    self._deferred_writes.setdefault(wk, write)

        try:
            if checkpoints:
                conn.executemany(
                    f"INSERT OR REPLACE INTO checkpoints ({_CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    list(checkpoints.values()),
                )
            for replace in (True, False):
                rows = [row for r, row in writes.values() if r is replace]
                if rows:
                    conn.executemany(
                        f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO writes ({_WRITE_COLUMNS}) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        rows,
                    )
        except BaseException:
            after(False)
            raise
        return after

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if not (self._deferred_checkpoints or self._deferred_writes):
            return super().get_tuple(config)
        thread_id = str(config["configurable"]["thread_id"])
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        with self._deferred_lock:
            checkpoints = {k[2]: row for k, row in self._deferred_checkpoints.items()
                           if k[0] == thread_id and k[1] == checkpoint_ns}
            loaded = {k[2]: ck for k, ck in self._deferred_loaded.items() if k[0] == thread_id and k[1] == checkpoint_ns}
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
            cur.execute(pending_writes_sql(writes_have_task_path(self)), (thread_id, checkpoint_ns, checkpoint_id))
            merged = {(r[0], r[5]): r for r in cur.fetchall()}
        for replace, w in writes:
            if w[2] == checkpoint_id and (replace or (w[3], w[5]) not in merged):
                merged[(w[3], w[5])] = (w[3], w[6], w[7], w[8], w[4], w[5])  # task_id, channel, type, value, path, idx
        _, _, _, parent_id, type_, blob, metadata = row
        if not wanted:
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}}
        mine = loaded.get(checkpoint_id) if checkpoints.get(checkpoint_id) is row else None
        return CheckpointTuple(
            config,
            copy_checkpoint(mine) if mine is not None else self.serde.loads_typed((type_, blob)),
            cast(CheckpointMetadata, json.loads(metadata) if metadata is not None else {}),
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": parent_id}}
            if parent_id else None,
            load_pending_writes(merged.values(), self.serde),
        )

    def latest_checkpoint_id(self, thread_id: str, checkpoint_ns: str = "") -> str | None:
        """The id of the thread's latest checkpoint, None if it has none: one index lookup, no
        deserialising (`get_state` costs ten times more). Sees rows waiting for a commit, which
        are always the newest (they come from the run that holds the thread)."""
        with self._deferred_lock:
            waiting = [k[2] for k in self._deferred_checkpoints if k[0] == thread_id and k[1] == checkpoint_ns]
        if waiting:
            return max(waiting)
        with self.cursor(transaction=False) as cur:
            cur.execute("SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?",
                        (thread_id, checkpoint_ns))
            (stored,) = cur.fetchone()
        return cast(str | None, stored)

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

    # -- async: `ThreadedAsync` runs the sync methods on a worker thread (rows kept for the next commit: inline)

    def _inline(self, config: RunnableConfig) -> bool:
        return self._defers(config)
