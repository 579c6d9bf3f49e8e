"""A static breakpoint's review shows what the paused node has not seen, not the whole state again.

An agent loop (`tests.loop_graphs`) paused before `tools` at every turn: the first review shows
the whole state, each later one the new messages and the keys that changed; the stored request
stays the same size while the history grows; the whole state is still one request away (`hitl
show`, the API, the web inbox, the console reviewer); reviews stored in the old shape still show.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.messages import HumanMessage
from rich.console import Console

from hitl_graphs import Approve, Modify, Runner, Workflow
from hitl_graphs.errors import DecisionError
from hitl_graphs.pauses import payload_hash
from hitl_graphs.render import render_review
from hitl_graphs.reviewer import ConsoleReviewer
from hitl_graphs.reviews import ReviewRequest
from hitl_graphs.server.present import payload_view
from tests.conftest import hitl
from tests.drivers import DRIVERS, Driven
from tests.live_server import Server, token
from tests.loop_graphs import TURNS, WORKFLOWS

START = {"messages": [HumanMessage(content="find the answer", id="human")], "context": "background " * 200}
APP = ("--app", "tests.loop_graphs")


@pytest.fixture
def workflows() -> list[Workflow]:
    return WORKFLOWS


@pytest.fixture(params=[(store, driver) for store in ("sqlite", "postgres") for driver in DRIVERS],
                ids=lambda p: "-".join(p))
def loop_runner(request: pytest.FixtureRequest, db: str) -> Iterator[tuple[Driven, str]]:
    """A runner over the loop workflows on SQLite and on PostgreSQL, through either driver."""
    location = request.getfixturevalue("pg_db_url") if request.param[0] == "postgres" else db
    with Runner.open(location, workflows=WORKFLOWS) as r:
        driven = Driven(r, request.param[1])
        try:
            yield driven, location
        finally:
            driven.close()


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in items]


def request_bytes(location: str, thread_id: str) -> list[int]:
    """The size of each stored review request of a thread, oldest first, as the database holds it."""
    if "://" in location:
        with psycopg.connect(location) as conn:
            rows = conn.execute("SELECT octet_length(request) FROM hitl_reviews WHERE thread_id = %s ORDER BY created_at",
                                (thread_id,)).fetchall()
    else:
        with sqlite3.connect(location) as conn:
            rows = conn.execute("SELECT length(CAST(request AS BLOB)) FROM hitl_reviews WHERE thread_id = ? "
                                "ORDER BY created_at", (thread_id,)).fetchall()
    return [int(r[0]) for r in rows]


def test_each_pause_before_tools_shows_only_what_tools_has_not_seen(loop_runner: tuple[Driven, str]) -> None:
    runner, _ = loop_runner
    view = runner.start("loop-before", START)
    (first,) = view.reviews
    assert (first.source, first.position, first.node) == ("breakpoint", "before", "tools")
    # tools never ran: everything is new to it
    assert sorted(first.payload["changed"]) == ["context", "messages", "turns"]
    assert ids(first.payload["changed"]["messages"]) == ["human", "ai-001"]
    assert (first.payload["appended"], first.payload["unchanged"], first.payload["next"]) == ({}, [], ["tools"])
    assert first.payload_hash == payload_hash(first.payload)

    view = runner.resume(view.thread_id, Approve())
    (second,) = view.reviews
    # since tools last ran: its own answer and the agent's next call; the context it saw is named only
    assert second.payload == {"changed": {"turns": 2},
                              "appended": {"messages": second.payload["appended"]["messages"]},
                              "unchanged": ["context"], "next": ["tools"]}
    assert ids(second.payload["appended"]["messages"]) == ["tool-call-001", "ai-002"]
    assert second.payload["appended"]["messages"][1]["tool_calls"][0]["args"] == {"q": "query 002"}

    # a Modify is checked against the graph's state as before; refused, it changes nothing
    with pytest.raises(DecisionError, match="context"):
        runner.resume(view.thread_id, Modify(patch={"context": 7}))
    assert runner.show(view.thread_id).reviews == (second,)

    view = runner.resume(view.thread_id, Approve())
    (third,) = view.reviews
    assert ids(third.payload["appended"]["messages"]) == ["tool-call-002", "ai-003"]
    assert (third.payload["changed"], third.payload["unchanged"]) == ({"turns": 3}, ["context"])
    assert len(view.state["messages"]) == 6  # the thread's state is whole


def test_the_stored_request_stays_the_same_size_while_the_history_grows(loop_runner: tuple[Driven, str]) -> None:
    runner, location = loop_runner
    view = runner.start("loop-before", START)
    while view.reviews:
        view = runner.resume(view.thread_id, Approve())
    assert (view.status, len(view.state["messages"])) == ("done", 2 + 2 * TURNS)
    sizes = request_bytes(location, view.thread_id)
    assert len(sizes) == TURNS
    # the first shows the whole state; every later one two new messages and a counter, whatever
    # the history's length (ids and queries are zero-padded; only the counter gains a digit)
    assert max(sizes[1:]) - min(sizes[1:]) <= 1, sizes
    whole = len(json.dumps(view.state, default=str))
    assert sizes[-1] * 8 < whole, (sizes, whole)


def test_a_pause_after_a_node_shows_what_its_step_wrote(runner: Driven) -> None:
    view = runner.start("loop-after", START)
    (first,) = view.reviews
    assert (first.position, first.node) == ("after", "agent")
    assert (first.payload["changed"], first.payload["unchanged"]) == ({"turns": 1}, ["context"])
    assert ids(first.payload["appended"]["messages"]) == ["ai-001"]
    view = runner.resume(view.thread_id, Approve())
    (second,) = view.reviews
    assert ids(second.payload["appended"]["messages"]) == ["ai-002"]  # tools' answer came a step before
    assert (second.payload["changed"], second.payload["unchanged"]) == ({"turns": 2}, ["context"])


def test_hitl_show_gives_the_changes_first_and_the_whole_state_on_request(db: str) -> None:
    started = hitl(db, *APP, "run", "loop-before", "--input", json.dumps({"messages": [{"role": "user", "content": "go", "id": "human"}]}),
                   "--json")
    assert started.returncode == 0, started.stderr
    thread_id = json.loads(started.stdout)["thread_id"]
    assert hitl(db, *APP, "approve", thread_id).returncode == 0
    shown = json.loads(hitl(db, *APP, "show", thread_id, "--json").stdout)
    (review,) = shown["reviews"]
    assert ids(review["payload"]["appended"]["messages"]) == ["tool-call-001", "ai-002"]
    assert ids(shown["state"]["messages"]) == ["human", "ai-001", "tool-call-001", "ai-002"]
    text = hitl(db, *APP, "show", thread_id, "--state", COLUMNS="200")
    assert text.returncode == 0, text.stderr
    changes, _, state = text.stdout.rpartition("\nstate:\n")
    assert "messages: 2 new item(s)" in changes and '"human"' not in changes
    assert f"whole state: hitl show {thread_id} --state" in changes
    assert '"human"' in state and '"ai-002"' in state


def test_the_api_and_the_inbox_show_the_changes_and_the_whole_state(db: str, effects_file: Path) -> None:
    server = Server(db, WORKFLOWS)
    try:
        view = server.runner.start("loop-before", START)
        view = server.runner.resume(view.thread_id, Approve(actor="ana"))
        (review,) = view.reviews
        with server.client(token(server, "ana")) as api:
            got = api.get(f"/api/threads/{view.thread_id}").json()
        (shown,) = got["reviews"]
        assert ids(shown["payload"]["appended"]["messages"]) == ["tool-call-001", "ai-002"]
        assert ids(got["state"]["messages"]) == ["human", "ai-001", "tool-call-001", "ai-002"]

        browser = server.browser()
        form = browser.get("/login")
        nonce = form.text.split('name="nonce" value="')[1].split('"')[0]
        browser.post("/login", data={"token": token(server, "bo"), "nonce": nonce})
        page = browser.get(f"/threads/{view.thread_id}/reviews/{review.review_id}").text
        changes, _, full = page.partition('id="full-state"')
        assert 'id="changes"' in changes and "2 new items" in changes and "Unchanged: context" in changes
        assert "find the answer" not in changes and "find the answer" in full
    finally:
        server.close()


def _review(payload: Any) -> ReviewRequest:
    return ReviewRequest(review_id="r1", thread_id="t1", workflow="loop-before", node="tools", position="before",
                         kind="breakpoint", title="Paused before tools", payload=payload, allowed=("approve", "reject"),
                         editable=(), source="breakpoint", created_at="2026-01-01T00:00:00Z")


def test_the_console_shows_changes_first_and_reviews_stored_in_the_old_shape_still_show() -> None:
    new = _review({"changed": {"turns": 2}, "appended": {"messages": [{"id": "ai-002"}]}, "unchanged": ["context"],
                   "next": ["tools"]})
    old = _review({"state": {"turns": 2, "context": "kept from before"}, "next": ["tools"]})
    out = io.StringIO()
    render_review(new, Console(file=out, width=200))
    assert "messages: 1 new item(s)" in out.getvalue() and "unchanged: context" in out.getvalue()
    out = io.StringIO()
    render_review(old, Console(file=out, width=200))
    assert "kept from before" in out.getvalue()
    assert payload_view("breakpoint", new.payload)["shape"] == "changes"
    assert "kept from before" in payload_view("breakpoint", old.payload)["json"]

    # the console reviewer prints the whole state when asked, then takes the decision
    answers = iter(["state", "approve"])
    out = io.StringIO()
    reviewer = ConsoleReviewer(Console(file=out, width=200), actor="ana", editor="",
                               ask=lambda prompt, choices, default: next(answers))
    decision = reviewer.decide(new, {"messages": [{"id": "human"}], "context": "all of it"})
    assert decision.kind == "approve" and "all of it" in out.getvalue()
