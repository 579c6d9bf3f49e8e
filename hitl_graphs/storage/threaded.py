"""The async half of a sync LangGraph saver: each async method runs its sync twin on a worker
thread. Both stores' savers use it, so one saver (one connection or pool, one schema) serves
`invoke` and `ainvoke` alike; `AsyncSqliteSaver` / `AsyncPostgresSaver` would each need a
connection of their own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple


class ThreadedAsync(BaseCheckpointSaver[str]):
    """Mix in before the sync saver (`class S(ThreadedAsync, SqliteSaver)`)."""

    def _inline(self, config: RunnableConfig) -> bool:
        """True when a write touches no disk (kept in memory for the next commit): run it on the
        caller's loop, no hop to a thread."""
        return False

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

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        if self._inline(config):
            return self.put(config, checkpoint, metadata, new_versions)
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        if self._inline(config):
            return self.put_writes(config, writes, task_id, task_path)
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Mapping[str, Any]:
        return await asyncio.to_thread(lambda: self.get_delta_channel_history(config=config, channels=channels))
