"""LangGraph's `PostgresSaver` on the store's pool, serving async graphs too, joining the ledger's commits.

`PostgresSaver` is sync only (`AsyncPostgresSaver` needs an async pool of its own). The runner runs
`async def` nodes on an event loop of its own, so, as SQLite's saver does, the async methods run the
sync ones on a worker thread: one saver, one pool, one schema for `invoke` and `ainvoke`.

**A run's checkpoint commits with the ledger's record of where it stopped.** A run under
`durability="exit"` (the runner marks it with `DEFER_KEY`) writes one checkpoint, where it stops.
`PostgresSaver.put` and `put_writes` build their statements as always (the same SQL, the same
serialised values), but they are kept (`Deferred`, by thread) instead of sent, and the ledger's
transaction that records the pause or the end (`PostgresLedger.sync`) sends them first, in its own
round trips: one commit, flushed, holds the checkpoint, the review and the audit entries, as on
SQLite. Before, the checkpoint was a commit of its own on another connection, and a thread's start
a third (the run's checkpoint had to follow a ledger row, so that a crash between the two left a
thread the ledger knew): a cycle committed 16 times, now 11 (reads included).

A read through the saver (`get_tuple`, `list`, ...) of a thread whose statements wait first commits
them on their own (a run that reads its own state before it settles), so every reader sees every
checkpoint; such a commit does not wait for the disk, and the ledger's
flushed commit after it covers it. Runs without `DEFER_KEY` write as `PostgresSaver` does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import DictRow

from hitl_graphs._langgraph_compat import Statement, StatementCapture, capturing
from hitl_graphs.storage.base import DEFER_KEY, note_written
from hitl_graphs.storage.postgres.commits import Pool, transaction
from hitl_graphs.storage.threaded import ThreadedAsync


@dataclass(frozen=True)
class History:
    """A `record_event` entry of a run whose checkpoint waits (`PostgresEffects.record_once`)."""

    key: str
    event: str
    data: dict[str, Any]
    at: float
    """When the node recorded it (the key's row keeps it, as on SQLite)."""


@dataclass
class Waiting:
    """What a thread's run left for the ledger's next transaction on the thread."""

    statements: list[Statement] = field(default_factory=list)
    history: list[History] = field(default_factory=list)


class Deferred:
    """Runs' checkpoints (their statements) and history entries waiting for the ledger's next
    transaction on their thread, by thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_thread: dict[str, Waiting] = {}

    def add(self, thread_id: str, statements: Sequence[Statement]) -> None:
        with self._lock:
            self._by_thread.setdefault(thread_id, Waiting()).statements.extend(statements)

    def add_history(self, thread_id: str, entry: History) -> None:
        """Keep `entry` unless one with its key waits already (a node run again: recorded once)."""
        with self._lock:
            waiting = self._by_thread.setdefault(thread_id, Waiting())
            if all(h.key != entry.key for h in waiting.history):
                waiting.history.append(entry)

    def take(self, thread_id: str) -> Waiting:
        with self._lock:
            return self._by_thread.pop(thread_id, None) or Waiting()

    def take_statements(self, thread_id: str) -> list[Statement]:
        """The checkpoint's statements only (a read needs those); history entries keep waiting."""
        with self._lock:
            waiting = self._by_thread.get(thread_id)
            if waiting is None:
                return []
            statements, waiting.statements = waiting.statements, []
            if not waiting.history:
                del self._by_thread[thread_id]
            return statements

    def put_back(self, thread_id: str, taken: Waiting) -> None:
        """What a transaction took and rolled back: first again, before anything added since."""
        if taken.statements or taken.history:
            with self._lock:
                now = self._by_thread.get(thread_id, Waiting())
                self._by_thread[thread_id] = Waiting([*taken.statements, *now.statements], [*taken.history, *now.history])

    def threads(self) -> list[str]:
        with self._lock:
            return list(self._by_thread)

    def statements_waiting(self, thread_id: str) -> bool:
        waiting = self._by_thread.get(thread_id)  # one key's lookup: no lock needed
        return waiting is not None and bool(waiting.statements)


def send(c: psycopg.Connection[DictRow], statements: Sequence[Statement]) -> None:
    """Queue captured statements on `c`, in order (inside a `commits.transaction`: pipelined)."""
    for query, params, many in statements:
        if many:
            with c.cursor() as cur:
                cur.executemany(query, params)
        else:
            c.execute(query, params)


class HitlPostgresSaver(StatementCapture, ThreadedAsync, PostgresSaver):
    """`PostgresSaver` with the async methods (the sync ones on a worker thread), whose runs under
    `DEFER_KEY` keep their statements for the ledger's commit (`deferred`)."""

    def __init__(self, conn: Any, *, serde: Any = None) -> None:
        super().__init__(conn, serde=serde)
        self.deferred = Deferred()

    @property
    def commits_with_ledger(self) -> bool:
        """Whether a run's checkpoints can join the ledger's commit (`DEFER_KEY`): on the store's pool."""
        return isinstance(self.conn, Pool)

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        if not self._defers(config):
            written = super().put(config, checkpoint, metadata, new_versions)
        else:
            with self._kept(config):
                written = super().put(config, checkpoint, metadata, new_versions)
        note_written(config, checkpoint["id"])
        return written

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        if not self._defers(config):
            return super().put_writes(config, writes, task_id, task_path)
        with self._kept(config):
            super().put_writes(config, writes, task_id, task_path)

    def _defers(self, config: RunnableConfig) -> bool:
        return self.commits_with_ledger and bool(config.get("configurable", {}).get(DEFER_KEY))

    @contextmanager
    def _kept(self, config: RunnableConfig) -> Iterator[None]:
        """Within the block, the saver's statements are kept for the config's thread instead of sent."""
        out: list[Statement] = []
        with capturing(out):
            yield
        self.deferred.add(str(config["configurable"]["thread_id"]), out)

    def commit_deferred(self, thread_id: str | None = None) -> None:
        """Commit the checkpoint statements waiting for `thread_id` (every thread's when None) on
        their own, without waiting for the disk (a flushed commit follows before anyone relies on
        them). History entries keep waiting for the ledger (`PostgresLedger.commit_waiting`)."""
        for thread in [thread_id] if thread_id is not None else self.deferred.threads():
            if not self.deferred.statements_waiting(thread):
                continue
            statements = self.deferred.take_statements(thread)
            try:
                with transaction(self.conn, durable=False) as c:  # type: ignore[arg-type]  # a Pool (commits_with_ledger)
                    send(c, statements)
            except BaseException:
                self.deferred.put_back(thread, Waiting(statements))
                raise

    def _visible(self, config: RunnableConfig | None) -> None:
        """Before a read: commit what waits for the thread the config names (or for all)."""
        thread_id = (config or {}).get("configurable", {}).get("thread_id")
        self.commit_deferred(None if thread_id is None else str(thread_id))

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        self._visible(config)
        return super().get_tuple(config)

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        self._visible(config)
        yield from super().list(config, filter=filter, before=before, limit=limit)

    def delete_thread(self, thread_id: str) -> None:
        self.commit_deferred(thread_id)
        super().delete_thread(thread_id)

    def get_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Mapping[str, Any]:
        self._visible(config)
        return super().get_delta_channel_history(config=config, channels=channels)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for thread_id in thread_ids:
            self.commit_deferred(thread_id)
        super().prune(thread_ids, strategy=strategy)
