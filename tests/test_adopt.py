"""Threads a team paused with plain LangGraph's `SqliteSaver`, before adopting the toolkit, brought
into the ledger: listed, shown, resumed and audited like the runner's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from hitl_graphs import Approve, ConfigError, Reject, Runner, ThreadExistsError, UnknownThreadError
from tests.conftest import fingerprint, hitl
from tests.plain_graphs import DEPLOY, SHIP, WORKFLOWS, deploy_graph, ship_graph
from tests.workflows import effects


def paused_by_plain_langgraph(db: str) -> None:
    """What the team has: two orders waiting at `interrupt()`, a deploy at its breakpoint, one
    order finished, all in one file written by LangGraph's own saver."""
    with SqliteSaver.from_conn_string(db) as saver:
        ship = ship_graph().compile(checkpointer=saver)
        for order in ("o-1", "o-2", "o-done"):
            ship.invoke({"item": order}, {"configurable": {"thread_id": order}})
        from langgraph.types import Command

        ship.invoke(Command(resume={"approved": False}), {"configurable": {"thread_id": "o-done"}})
        deploy = deploy_graph().compile(checkpointer=saver, interrupt_before=["deploy"])
        deploy.invoke({"service": "api"}, {"configurable": {"thread_id": "d-1"}})


def test_adopted_threads_are_listed_shown_and_resumed(db: str, effects_file: Path) -> None:
    paused_by_plain_langgraph(db)
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        assert runner.pending() == []  # invisible before adoption
        with pytest.raises(UnknownThreadError, match=r"runner.adopt\('o-1', WORKFLOW\)"):
            runner.resume("o-1", Approve())
        assert runner.outside_threads() == ["d-1", "o-1", "o-2", "o-done"]

        order = runner.adopt("o-1", "ship")
        assert (order.status, order.reviews[0].node, order.reviews[0].payload) == ("paused", "ask", {"question": "ship o-1?"})
        deploy = runner.adopt("d-1", "deploy")
        assert (deploy.reviews[0].source, deploy.reviews[0].node) == ("breakpoint", "deploy")
        assert runner.adopt("o-done", "ship").status == "done"
        assert {r.thread_id for r in runner.pending()} == {"o-1", "d-1"}
        assert runner.show("o-1").reviews == order.reviews
        assert runner.outside_threads() == ["o-2"]

        shipped = runner.resume("o-1", Approve(actor="ana"))
        assert (shipped.status, shipped.state["result"]) == ("done", "shipped")
        assert runner.resume("d-1", Approve(actor="ana")).state["deployed"] is True
        assert effects() == ["ship:o-1"]
        assert [e.event for e in runner.history("o-1")] == ["started", "review_requested", "decided", "applied", "completed"]
        assert runner.audit_verify().ok


def test_adopt_refuses_what_it_cannot_take_and_changes_nothing(db: str) -> None:
    paused_by_plain_langgraph(db)
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        before = fingerprint(db, "d-1")
        with pytest.raises(ConfigError, match="ran or stands at node\\(s\\) plan, which workflow 'ship' does not have"):
            runner.adopt("d-1", "ship")
        assert fingerprint(db, "d-1") == before
        with pytest.raises(UnknownThreadError, match="has no checkpoints in this database"):
            runner.adopt("nope", "ship")
        runner.adopt("o-1", "ship")
        with pytest.raises(ThreadExistsError, match="already in the ledger \\(workflow 'ship', status paused\\)"):
            runner.adopt("o-1", "ship")


async def test_aadopt(db: str) -> None:
    paused_by_plain_langgraph(db)
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        view = await runner.aadopt("o-2", "ship")
        done = await runner.aresume("o-2", Reject(reason="out of stock"))
        assert (view.status, done.state["result"]) == ("paused", "held")


def test_hitl_adopt_all_then_approve(db: str, effects_file: Path) -> None:
    with SqliteSaver.from_conn_string(db) as saver:
        ship = ship_graph().compile(checkpointer=saver)
        for order in ("o-1", "o-2"):
            ship.invoke({"item": order}, {"configurable": {"thread_id": order}})
    app = ("--app", "tests.plain_graphs")
    adopted = hitl(db, *app, "adopt", "--workflow", SHIP.name, "--all", "--json")
    assert adopted.returncode == 0, adopted.stderr
    assert [v["thread_id"] for v in json.loads(adopted.stdout)] == ["o-1", "o-2"]
    pending = json.loads(hitl(db, *app, "pending", "--json").stdout)
    assert [(r["thread_id"], r["node"]) for r in pending] == [("o-1", "ask"), ("o-2", "ask")]
    done = hitl(db, *app, "approve", "o-2", "--json")
    assert json.loads(done.stdout)["state"]["result"] == "shipped", done.stderr
    again = hitl(db, *app, "adopt", "--workflow", DEPLOY.name, "--all")
    assert (again.returncode, again.stdout.strip()) == (0, "no thread to adopt: the ledger knows every thread in this file")
    both = hitl(db, *app, "adopt", "--workflow", SHIP.name, "o-1", "--all")
    assert (both.returncode, both.stderr.strip()) == (1, "error: name the threads to adopt, or pass --all (not both)")
