"""LangGraph's `PostgresSaver` on the store's pool, serving async graphs too.

`PostgresSaver` is sync only (`AsyncPostgresSaver` needs an async pool of its own). The runner runs
`async def` nodes on an event loop of its own, so, as SQLite's saver does, the async methods run the
sync ones on a worker thread: one saver, one pool, one schema for `invoke` and `ainvoke`.

A run under `durability="exit"` (the runner marks it with `DEFER_KEY`) writes its checkpoint where
it stops, and the runner then records that stop in the ledger with a flushed commit. That
checkpoint commits without waiting for the disk (`Pool.relaxed`): the ledger's flush right after
makes it durable too (the WAL is flushed in order), before the caller hears back. Other
checkpoints commit as `PostgresSaver` commits them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres import PostgresSaver

from hitl_graphs.storage.base import DEFER_KEY, note_written
from hitl_graphs.storage.postgres.commits import Pool
from hitl_graphs.storage.threaded import ThreadedAsync


class HitlPostgresSaver(ThreadedAsync, PostgresSaver):
    """`PostgresSaver` with the async methods (the sync ones on a worker thread)."""

    commits_with_ledger = False
    """A run's checkpoints commit in the saver's own transactions, before the ledger's record of
    where the run stopped: the runner records a thread's start first, so a crash between the two
    leaves a thread the ledger knows as running, which `recover` settles from its checkpoint once
    the run's lease ends (see the README, PostgreSQL)."""

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        if not self._rides_on_ledger(config):
            written = super().put(config, checkpoint, metadata, new_versions)
        else:
            with self.conn.relaxed():  # type: ignore[union-attr]
                written = super().put(config, checkpoint, metadata, new_versions)
        note_written(config, checkpoint["id"])
        return written

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        if not self._rides_on_ledger(config):
            return super().put_writes(config, writes, task_id, task_path)
        with self.conn.relaxed():  # type: ignore[union-attr]
            return super().put_writes(config, writes, task_id, task_path)

    def _rides_on_ledger(self, config: RunnableConfig) -> bool:
        return isinstance(self.conn, Pool) and bool(config.get("configurable", {}).get(DEFER_KEY))
