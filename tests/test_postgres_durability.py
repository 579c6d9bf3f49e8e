"""PostgreSQL: what a call promises is on disk when it returns, though the chain's lock is not held
through the flush (hitl_graphs/storage/postgres/commits.py).

A server of its own, with PostgreSQL's durable defaults (fsync, synchronous commit) and a WAL writer
that sleeps 10 s, so a commit nobody flushed stays in memory; right after a call returns the server
is stopped as a power cut would stop it (`pg_ctl stop -m immediate`) and started again. What the
caller heard about must be there; a history entry nobody was told of may not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from hitl_graphs import Approve, Runner, Workflow
from hitl_graphs.audit import Event
from hitl_graphs.storage.postgres import PostgresStore
from hitl_graphs.templates import plan_review
from tests import pg_server

pytestmark = pytest.mark.slow  # a server of its own, with fsync on, stopped and started again

EXECUTED: list[str] = []


def _executor(step: str, context: Any) -> str:
    EXECUTED.append(step)
    return f"done: {step}"


WORKFLOW = Workflow("crash-plan", lambda: plan_review.create_plan_review_graph(lambda context: ["step 1"], _executor),
                    durability=plan_review.DURABILITY)


@pytest.fixture(scope="module")
def server() -> Iterator[pg_server.PgServer]:
    server = pg_server.start_server(durable=True, options="-c wal_writer_delay=10s")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def url(server: pg_server.PgServer) -> str:
    return pg_server.create_database(server)


def _open(url: str) -> Runner:
    return Runner.open(url, workflows=[WORKFLOW])


def test_a_pause_a_decision_its_effect_and_the_end_survive_a_power_cut_right_after_the_call(
        server: pg_server.PgServer, url: str) -> None:
    EXECUTED.clear()
    with _open(url) as runner:
        paused = runner.start("crash-plan", {"task": "ship it"})
    server.crash_and_restart()

    with _open(url) as runner:  # the start, the pause's checkpoint and its review: all there
        [review] = runner.pending()
        assert review.thread_id == paused.thread_id and runner.show(paused.thread_id).status == "paused"
        done = runner.resume(paused.thread_id, Approve(actor="ana"), review_id=review.review_id)
        assert done.status == "done" and EXECUTED == ["step 1"]
    server.crash_and_restart()

    with _open(url) as runner:  # the decision, the step's recorded result and the end
        view = runner.show(paused.thread_id)
        assert (view.status, view.outcome) == ("done", "completed")
        assert [r["result"] for r in view.state["results"]] == ["done: step 1"]
        events = [e.event for e in runner.history(paused.thread_id)]
        assert events == ["started", "review_requested", "decided", "step_executed", "applied", "completed"]
        assert runner.recover() == [] and EXECUTED == ["step 1"]  # nothing left to run again
        assert runner.store.audit.verify().ok


def test_a_deferred_decision_is_on_disk_when_decide_returns(server: pg_server.PgServer, url: str) -> None:
    with _open(url) as runner:
        paused = runner.start("crash-plan", {"task": "ship it"})
        runner.decide(paused.thread_id, Approve(actor="bo"))
    server.crash_and_restart()

    with _open(url) as runner:
        assert runner.pending() == []  # decided: not asked again
        assert runner.stranded() == [paused.thread_id]  # a worker applies it
        [decided] = [e for e in runner.history(paused.thread_id) if e.event == "decided"]
        assert decided.actor == "bo" and runner.store.audit.verify().ok


def test_a_history_entry_keeps_books_and_rides_on_the_next_flushed_commit(server: pg_server.PgServer, url: str) -> None:
    """A history entry alone is not flushed (nobody waits for the disk for it): a power cut may
    take it back, and the chain stays whole; once a flushed commit follows, it is on disk."""
    with PostgresStore(url) as store:
        store.ledger.add_events("t", [Event("note", data={"n": 1})])
    server.crash_and_restart()
    with PostgresStore(url) as store:
        assert [e.data for e in store.ledger.history("t")] in ([], [{"n": 1}])  # in memory only: may be gone
        assert store.audit.verify().ok
        store.ledger.add_events("t", [Event("note", data={"n": 2})])
        store.flush()  # what a decision, a pause or an end does before its caller goes on
    server.crash_and_restart()
    with PostgresStore(url) as store:
        assert [e.data for e in store.ledger.history("t")][-1] == {"n": 2}
        assert store.audit.verify().ok


def test_a_cycle_waits_for_four_disk_flushes_the_pause_the_decision_the_effect_and_the_end(
        server: pg_server.PgServer, url: str) -> None:
    """The thread's start, the run's checkpoints and history entries ride on those four; before,
    every commit waited for its own flush (8 per cycle)."""
    with _open(url) as runner:
        runner.start("crash-plan", {"task": "warm up"})  # the schema's first rows and checkpoint
    before = _flushes(server)
    with _open(url) as runner:
        paused = runner.start("crash-plan", {"task": "ship it"})
        runner.resume(paused.thread_id, Approve(actor="ana"))
    assert _flushes(server) - before <= 4


def _flushes(server: pg_server.PgServer) -> int:
    """The server's WAL flushes so far (`pg_stat_wal`; a session's count is reported when it ends:
    read after the runner closed its connections)."""
    with psycopg.connect(server.url("postgres"), autocommit=True) as admin:
        return int(admin.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()[0])  # type: ignore[index]
