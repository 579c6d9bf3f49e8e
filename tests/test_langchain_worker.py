"""`hitl worker` and a LangChain middleware's batch: decisions recorded one at a time (`decide`,
`--defer`, the HTTP API's deferred path) wait in the ledger until every action of the batch has
one; only then does a worker hand the middleware its `{"decisions": [...]}`. Real LangChain agent,
real SQLite and a real PostgreSQL server."""

from __future__ import annotations

import threading

import pytest

from hitl_graphs import Approve, Modify, Runner
from tests.langchain_agents import BATCHED, INPUT, WORKFLOWS
from tests.workflows import effects

SEND, DELETE = "call_send", "call_delete"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_worker_leaves_a_half_decided_batch_waiting_and_applies_it_once_complete(
    backend: str, request: pytest.FixtureRequest, effects_file: object
) -> None:
    url: str = request.getfixturevalue("db" if backend == "sqlite" else "pg_db_url")
    with Runner.open(url, workflows=WORKFLOWS) as runner:
        thread = runner.start(BATCHED.name, INPUT).thread_id
        runner.decide(thread, Approve(actor="ana"), review_id=DELETE)   # one of the two actions

        # a worker pass over a half-decided batch has nothing to run (as `recover` says); before,
        # the queue handed the same thread back forever. The join only keeps a regression from
        # hanging the suite: a pass that returns at all returns at once.
        stop = threading.Event()
        moved: list[int] = []
        worker = threading.Thread(target=lambda: moved.append(runner.work(once=True, stop=stop)), daemon=True)
        worker.start()
        worker.join(20)
        looping = worker.is_alive()
        stop.set()
        worker.join()
        assert not looping, "the worker kept taking a batch that still waits for a person"
        assert moved == [0] and effects() == []
        assert [r.key for r in runner.pending()] == [SEND]
        assert [e.event for e in runner.history(thread)].count("recovering") == 0

        runner.decide(thread, Modify({"args": {"body": "see you"}}, actor="bo"), review_id=SEND)
        assert runner.work(once=True) == 1
        done = runner.show(thread)
    assert (done.status, done.outcome) == ("done", "completed")
    assert sorted(effects()) == ["delete_file:/srv/report.pdf", "lookup:weather", "send_email:ana@example.com:see you"]
