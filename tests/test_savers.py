"""A LangGraph user's own saver: never replaced silently, never a cryptic error."""

from __future__ import annotations

import re
import sqlite3
import warnings
from contextlib import closing
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from hitl_graphs import Approve, CheckpointerReplacedWarning, ConfigError, Runner, Workflow
from tests.plain_graphs import approved, ship_graph


async def test_runner_given_an_async_sqlite_saver_says_what_to_write(db: str) -> None:
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        with pytest.raises(ConfigError, match=re.escape(
                "Runner takes a store (SqliteStore, PostgresStore), got AsyncSqliteSaver: the runner brings its own saver, "
                "on the same database as its ledger; use Runner.open(PATH) on the file it writes and the async methods")):
            Runner(saver)  # type: ignore[arg-type]


def test_runner_given_a_sqlite_saver_names_its_file(db: str) -> None:
    with SqliteSaver.from_conn_string(db) as saver:
        with pytest.raises(ConfigError, match=re.escape(f"use Runner.open({db!r}). Threads your saver already paused")):
            Runner(saver)  # type: ignore[arg-type]


def test_a_graph_compiled_with_its_own_saver_is_run_on_the_runners_and_says_so(tmp_path: Path, db: str) -> None:
    theirs = str(tmp_path / "theirs.sqlite")
    with SqliteSaver.from_conn_string(theirs) as saver:
        compiled = ship_graph().compile(checkpointer=saver)
        with Runner.open(db, workflows=[Workflow("ship", compiled, resume_value=approved)]) as runner:
            with pytest.warns(CheckpointerReplacedWarning, match="compiled with checkpointer=SqliteSaver, which the "
                              "runner replaces with its own HitlSqliteSaver"):
                runner.start("ship", {"item": "o-1"}, thread_id="o-1")
            assert runner.resume("o-1", Approve()).state["result"] == "shipped"
    # the checkpoints went to the runner's database, with its ledger; the user's saver was never used
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 'o-1'").fetchone()[0] > 0
    with closing(sqlite3.connect(theirs)) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'checkpoints'").fetchall() == []
    # compiled on the runner's own saver: nothing is replaced, nothing to say
    with Runner.open(db, workflows=[]) as probe:
        runner = Runner(probe.store, workflows=[Workflow("ship", ship_graph().compile(checkpointer=probe.store.saver))])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert runner.start("ship", {"item": "o-2"}).status == "paused"

