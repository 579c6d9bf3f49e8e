"""Large states: the audit log never holds a copy of a large value.

A run's input lives in its checkpoints (and, until the first one, in a side table `recover` reads);
the log names its fields. A review's payload lives once, in its ledger row; its `review_requested`
entry keeps the payload's hash, so an edit to the payload still shows in `hitl audit verify`. A
database written before this keeps its entries as they were and upgrades in place.
"""

from __future__ import annotations

import io
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, TypedDict

import psycopg
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from hitl_graphs import Approve, Runner, Workflow
from hitl_graphs.audit import content_hash
from hitl_graphs.storage import open_store
from hitl_graphs.storage.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION
from hitl_graphs.storage.sqlite.schema import SCHEMA_VERSION
from tests.conftest import hitl
from tests.workflows import WORKFLOWS

DOCUMENT = "All work and no play makes a long report. " * 2_500  # ~100 KB


class Doc(TypedDict, total=False):
    document: str
    answer: Any
    published: bool


def _doc_graph() -> StateGraph[Doc]:
    def ask(state: Doc) -> Doc:
        return {"answer": interrupt({"summary": state["document"][:40], "size": len(state["document"])})}

    def publish(state: Doc) -> Doc:
        return {"published": True}

    g = StateGraph(Doc)
    g.add_node("ask", ask)
    g.add_node("publish", publish)
    g.add_edge(START, "ask")
    g.add_edge("ask", "publish")
    g.add_edge("publish", END)
    return g


@pytest.mark.parametrize("durability", ["exit", "sync"])
def test_the_run_input_is_not_copied_into_the_audit_log(db: str, durability: str) -> None:
    """With either way of recording a start (with the first pause, or before the run), the log
    names the input's fields only, and nothing of the input stays outside the checkpoints."""
    with Runner.open(db, workflows=[Workflow("doc", _doc_graph, durability=durability)]) as runner:  # type: ignore[arg-type]
        paused = runner.start("doc", {"document": DOCUMENT})
        assert paused.status == "paused" and paused.state["document"] == DOCUMENT
        done = runner.resume(paused.thread_id, Approve(actor="ana"))
        assert done.state["published"] is True
        out = io.StringIO()
        runner.audit_export(out, thread_id=paused.thread_id)
        assert runner.audit_verify().ok
    assert DOCUMENT[:200] not in out.getvalue() and len(out.getvalue()) < 4_000
    started = json.loads(out.getvalue().splitlines()[0])
    assert started["event"] == "started" and started["data"] == {"input_keys": ["document"]}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM hitl_inputs").fetchone() == (0,)
        (events_bytes,) = conn.execute("SELECT sum(length(data)) FROM hitl_events").fetchone()
    finally:
        conn.close()
    assert events_bytes < 2_000


def test_a_review_payload_is_stored_once_and_an_edit_to_it_is_found_through_its_hash(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay", {"to": "acme", "amount": 7}).thread_id
        (asked,) = [e for e in runner.history(thread_id) if e.event == "review_requested"]
        assert asked.data["payload"] == {"to": "acme", "amount": 7}  # the history reads it back from the ledger
        out = io.StringIO()
        runner.audit_export(out, thread_id=thread_id)
    logged = [json.loads(line)["data"] for line in out.getvalue().splitlines()]
    (requested,) = [d for d in logged if "payload_hash" in d]
    assert "payload" not in requested and requested["payload_hash"] == content_hash({"to": "acme", "amount": 7})
    assert hitl(db, "audit", "verify").returncode == 0

    conn = sqlite3.connect(db)
    (request,) = conn.execute("SELECT request FROM hitl_reviews WHERE thread_id = ?", (thread_id,)).fetchone()
    edited = {**json.loads(request), "payload": {"to": "mallory", "amount": 7}}
    conn.execute("UPDATE hitl_reviews SET request = ? WHERE thread_id = ?", (json.dumps(edited), thread_id))
    conn.commit()
    conn.close()
    verified = hitl(db, "audit", "verify")
    assert verified.returncode == 1
    assert (f"of thread {thread_id!r} shows a payload other than the one the log committed to (its payload_hash): "
            "the ledger was edited") in verified.stderr


def test_a_replanned_review_shows_what_ran_since_the_last_one_not_every_result(db: str, effects_file: Path) -> None:
    """The plan template re-planning after every step: each review lists the steps run since the
    person last looked, and how many ran in all, so its payload does not grow with the run."""
    from hitl_graphs.templates.plan_review import create_plan_review_graph
    from tests.staged_workflows import plan_abc, run_step

    wf = Workflow("plan-every-step", lambda: create_plan_review_graph(plan_abc, run_step, planning_interval=1))
    with Runner.open(db, workflows=[wf]) as runner:
        view = runner.start("plan-every-step", {"task": "ship it"})
        shown = []
        while view.status == "paused":
            (review,) = view.reviews
            shown.append(([d["step"] for d in review.payload["done"]], review.payload["done_count"]))
            view = runner.resume(view.thread_id, Approve(actor="ana"))
        assert [r["step"] for r in view.state["results"]] == ["a", "b (after 1)", "c (after 1) (after 2)"]
    assert shown == [([], 0), (["a"], 1), (["b (after 1)"], 2)]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_database_from_before_upgrades_and_recovers_from_an_input_in_its_log(
        backend: str, db: str, request: pytest.FixtureRequest) -> None:
    """A thread started by the previous release (its input in its `started` entry) that died
    before its first checkpoint: the upgraded database still runs it again from that input."""
    location = db if backend == "sqlite" else request.getfixturevalue("pg_db_url")
    with open_store(location) as store:
        # what the previous release wrote: the input inside the audit entry, no side table
        store.ledger.create_thread("t-old", "doc", owner="gone:1", lease_until=time.time() - 1,
                                   data={"input": {"document": "old report"}})
    previous = "5" if backend == "sqlite" else "3"
    _sql(backend, location, "DROP TABLE hitl_inputs")
    _sql(backend, location, f"UPDATE hitl_meta SET value = '{previous}' WHERE key = 'schema_version'")

    with Runner.open(location, workflows=[Workflow("doc", _doc_graph)]) as runner:
        (recovered,) = runner.recover()
        assert (recovered.thread_id, recovered.status) == ("t-old", "paused")
        assert recovered.state["document"] == "old report"
        new = runner.start("doc", {"document": DOCUMENT})
        assert runner.resume(new.thread_id, Approve(actor="ana")).state["published"] is True
        assert runner.audit_verify().ok
    version = str(SCHEMA_VERSION if backend == "sqlite" else PG_SCHEMA_VERSION)
    assert _sql(backend, location, "SELECT value FROM hitl_meta WHERE key = 'schema_version'") == [(version,)]


def _sql(backend: str, location: str, sql: str) -> list[tuple[Any, ...]]:
    if backend == "sqlite":
        conn = sqlite3.connect(location)
        try:
            rows = conn.execute(sql).fetchall()
            conn.commit()
            return rows
        finally:
            conn.close()
    with psycopg.connect(location, autocommit=True) as pg:
        cur = pg.execute(sql)
        return [tuple(r) for r in cur.fetchall()] if cur.description else []
