"""`HitlSqliteSaver` and `HitlPostgresSaver` through LangGraph's checkpointer conformance suite
(vendored: see README.md).

Each capability is its own test, on both write paths: `direct` (a plain LangGraph checkpointer:
every `put` commits) and `deferred` (the runner's `DEFER_KEY` in every config: rows, or on
PostgreSQL the statements `PostgresSaver` builds, wait for the ledger's next commit, and
`get_tuple`, `list`, ... must see them as if they were written). PostgreSQL's run against a
real server, a database of their own each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata

from hitl_graphs.storage import HitlSqliteSaver, SqliteStore
from hitl_graphs.storage.base import DEFER_KEY
from hitl_graphs.storage.postgres import PostgresStore
from hitl_graphs.storage.postgres.saver import HitlPostgresSaver
from tests.saver_contract.conformance import checkpointer_test, validate
from tests.saver_contract.conformance.capabilities import DetectedCapabilities
from tests.saver_contract.conformance.initializer import RegisteredCheckpointer

SERVED = ["put", "put_writes", "get_tuple", "list", "delete_thread", "delta_channel_history"]
"""The capabilities our saver implements; the others (copy_thread, delete_for_runs, prune) are
LangGraph's optional extensions that `SqliteSaver` does not have either."""


def _deferring(config: RunnableConfig) -> RunnableConfig:
    return {**config, "configurable": {**config["configurable"], DEFER_KEY: True}}


class Deferring(BaseCheckpointSaver[Any]):
    """Mix in before one of our savers: every write carries `DEFER_KEY`, as the runner drives it."""

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        return super().put(_deferring(config), checkpoint, metadata, new_versions)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        super().put_writes(_deferring(config), writes, task_id, task_path)


class DeferringSaver(Deferring, HitlSqliteSaver):
    """The SQLite saver as the runner drives it."""


class DeferringPostgresSaver(Deferring, HitlPostgresSaver):
    """The PostgreSQL saver as the runner drives it."""


def _registered_postgres(mode: str, url: str) -> RegisteredCheckpointer:
    async def factory() -> AsyncIterator[HitlPostgresSaver]:
        with PostgresStore(url) as store:
            if mode == "direct":
                yield store.saver
            else:
                saver = DeferringPostgresSaver(store.pool, serde=store.saver.serde)
                yield saver
                saver.commit_deferred()

    return checkpointer_test(name=f"HitlPostgresSaver ({mode})")(factory)


def _registered(mode: str, folder: Path) -> RegisteredCheckpointer:
    count = 0

    async def factory() -> AsyncIterator[HitlSqliteSaver]:
        nonlocal count
        count += 1  # a fresh database per capability suite, as upstream's own savers get
        with SqliteStore(folder / f"{mode}-{count}.sqlite") as store:
            if mode == "direct":
                yield store.saver
            else:
                saver = DeferringSaver(store.conn, serde=store.saver.serde)
                saver.is_setup = True
                yield saver
                saver.commit_deferred()

    return checkpointer_test(name=f"HitlSqliteSaver ({mode})")(factory)


async def _passes(registered: RegisteredCheckpointer, mode: str, capability: str) -> None:
    report = await validate(registered, capabilities={capability})
    result = report.results[capability]
    assert result.detected, f"the suite does not see {capability!r} on our saver"
    if not (result.passed and result.tests_passed > 0 and result.tests_failed == 0):
        pytest.fail(f"{capability} ({mode}): {result.tests_failed} of {result.tests_passed + result.tests_failed} "
                    "upstream cases failed:\n" + "\n".join(result.failures))


@pytest.mark.parametrize("capability", SERVED)
@pytest.mark.parametrize("mode", ["direct", "deferred"])
async def test_upstream_conformance(tmp_path: Path, mode: str, capability: str) -> None:
    await _passes(_registered(mode, tmp_path), mode, capability)


@pytest.mark.parametrize("capability", SERVED)
@pytest.mark.parametrize("mode", ["direct", "deferred"])
async def test_upstream_conformance_on_postgres(pg_db_url: str, mode: str, capability: str) -> None:
    await _passes(_registered_postgres(mode, pg_db_url), mode, capability)


def test_served_capabilities_are_what_the_suite_detects(tmp_path: Path) -> None:
    """A capability added to the saver (say `prune`) must join `SERVED`, so the suite runs it."""
    with SqliteStore(tmp_path / "c.sqlite") as store:
        detected = DetectedCapabilities.from_instance(store.saver).detected
    assert sorted(c.value for c in detected) == sorted(SERVED)
