"""`SqliteStore(group_commits=True)`: fewer commits, the same results, and what a SIGKILL leaves.

The runners here use `durability="sync"`: with LangGraph's default (`"async"`) a finished task's
writes are committed on a background thread while the next task already runs, so a kill can make
a finished task run again, with or without grouped commits.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from hitl_graphs import Approve, Runner, SqliteStore, Workflow, request_review
from tests.conftest import python
from tests.workflows import WORKFLOWS, effect, effects, maybe_die


def _count(a: int | None, b: int | None) -> int:
    return (a or 0) + (b or 0)


class StepsState(TypedDict, total=False):
    done: Annotated[int, _count]


def _gate(state: StepsState) -> StepsState:
    request_review("gate", {"steps": 2}, title="Run both steps?", allowed=("approve", "reject"))
    return {}


def _step(name: str) -> Any:
    def node(state: StepsState) -> StepsState:
        maybe_die(name)
        effect(name)
        return {"done": 1}

    return node


def steps_graph() -> StateGraph[StepsState]:
    """gate -> one -> two: each step its own task, committed when it finishes."""
    g = StateGraph(StepsState)
    g.add_node("gate", _gate)
    g.add_node("one", _step("one"))
    g.add_node("two", _step("two"))
    g.add_edge(START, "gate")
    g.add_edge("gate", "one")
    g.add_edge("one", "two")
    g.add_edge("two", END)
    return g


ALL = [*WORKFLOWS, Workflow("steps", steps_graph)]
GROUPED = "from hitl_graphs import Runner, SqliteStore, Approve\nimport tests.test_group_commits as t\n" \
          "def grouped():\n    return Runner(SqliteStore(group_commits=True), workflows=t.ALL, owns_store=True, " \
          "durability='sync')\n"


def grouped(db: str) -> Runner:
    return Runner(SqliteStore(db, group_commits=True), workflows=ALL, owns_store=True, durability="sync")


def commits(runner: Runner) -> list[str]:
    seen: list[str] = []
    runner.store.conn.set_trace_callback(lambda s: seen.append(s) if s.startswith("COMMIT") else None)
    return seen


def test_same_results_with_fewer_commits(tmp_path: Path, effects_file: Path) -> None:
    outcomes = {}
    counted = {}
    for mode in ("default", "grouped"):
        db = str(tmp_path / f"{mode}.sqlite")
        runner = grouped(db) if mode == "grouped" else Runner.open(db, workflows=ALL, durability="sync")
        with runner:
            seen = commits(runner)
            results = []
            for name, decision in [("pay", Approve(actor="ana")), ("approval", Approve(actor="ana")),
                                   ("steps", Approve(actor="ana"))]:
                paused = runner.start(name, thread_id=f"{name}-1")
                done = runner.resume(paused.thread_id, decision)
                history = [e.event for e in runner.history(paused.thread_id)]
                results.append((paused.status, [r.kind for r in paused.reviews], done.status, done.outcome, done.state,
                                history))
            outcomes[mode] = results
            counted[mode] = len(seen)
            assert runner.audit_verify().ok
    assert outcomes["grouped"] == outcomes["default"]
    assert counted["grouped"] < counted["default"]


def test_reads_see_rows_waiting_for_a_commit(tmp_path: Path) -> None:
    db = str(tmp_path / "g.sqlite")
    with SqliteStore(db, group_commits=True) as store:
        graph = steps_graph().compile(checkpointer=store.saver)
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke({}, config)
        snapshot = graph.get_state(config)  # this connection sees the pause
        assert snapshot.interrupts and snapshot.next == ("gate",)
        assert store.saver.latest_checkpoint_id("t") == snapshot.config["configurable"]["checkpoint_id"]
        assert store.saver.latest_checkpoint_id("nobody") is None
        assert graph.get_state(snapshot.parent_config).next  # by checkpoint id too
        other = sqlite3.connect(db)
        try:
            waiting = other.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
            store.saver.commit_deferred()
            assert other.execute("SELECT count(*) FROM checkpoints").fetchone()[0] > waiting
        finally:
            other.close()
        assert [s.next for s in graph.get_state_history(config)]


async def test_async_runner_with_grouped_commits(tmp_path: Path, effects_file: Path) -> None:
    with grouped(str(tmp_path / "a.sqlite")) as runner:
        paused = await runner.astart("steps")
        done = await runner.aresume(paused.thread_id, Approve())
        assert (done.status, done.state["done"]) == ("done", 2)
    assert effects() == ["one", "two"]


def test_kill_between_steps_runs_no_finished_step_again(db: str, effects_file: Path) -> None:
    with grouped(db) as runner:
        thread_id = runner.start("steps").thread_id
    crashed = python(db, GROUPED + f"with grouped() as r: r.resume({thread_id!r}, Approve(actor='ana'))",
                     HITL_TEST_DIE="two")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert effects() == ["one"]
    with grouped(db) as runner:
        assert runner.pending() == []  # the decision is not asked again
        (recovered,) = runner.recover()
        assert (recovered.status, recovered.state["done"]) == ("done", 2)
        assert [e.event for e in runner.history(thread_id)].count("decided") == 1
    assert effects() == ["one", "two"]  # step one ran once


def test_kill_before_the_ledger_hears_of_the_end(db: str, effects_file: Path) -> None:
    """The last step's checkpoint is committed before the ledger's transaction: killed between
    them, the thread is found finished and the payment does not run again."""
    with grouped(db) as runner:
        thread_id = runner.start("pay").thread_id
    crashed = python(db, GROUPED + KILL_ON_SYNC + f"with grouped() as r: r.resume({thread_id!r}, Approve())")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert effects() == ["prepare", "pay:acme:120"]
    with grouped(db) as runner:
        assert runner.pending() == []
        runner.recover()
        view = runner.show(thread_id)
        assert (view.status, view.outcome, view.state["status"]) == ("done", "completed", "paid")
        assert runner.recover() == []
    assert effects() == ["prepare", "pay:acme:120"]


def test_kill_before_the_ledger_hears_of_the_pause(db: str, effects_file: Path) -> None:
    """A pause joins the ledger's commit: killed before it, nothing is pending until `recover`
    runs the gate's step again (not the step before it) and the review is listed."""
    crashed = python(db, GROUPED + KILL_ON_SYNC + "with grouped() as r: r.start('pay', thread_id='t-crash')")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    with grouped(db) as runner:
        assert runner.pending() == []
        assert runner.show("t-crash").status == "failed"
        (recovered,) = runner.recover()
        assert recovered.status == "paused"
        (review,) = runner.pending()
        assert review.thread_id == "t-crash"
        assert runner.resume("t-crash", Approve()).outcome == "completed"
    assert effects() == ["prepare", "pay:acme:120"]


KILL_ON_SYNC = ("import os, signal\nfrom hitl_graphs.ledger import Ledger\n"
                "Ledger.sync = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n")


def test_run_once_effect_commits_and_survives_a_kill(db: str, effects_file: Path) -> None:
    with grouped(db) as runner:
        thread_id = runner.start("charge", {"amount": 7}).thread_id
    crashed = python(db, GROUPED + f"with grouped() as r: r.resume({thread_id!r}, Approve())", HITL_TEST_DIE="charged")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    with grouped(db) as runner:
        (recovered,) = runner.recover()
        assert recovered.state["receipt"] == {"id": "rcpt-1", "amount": 7}
    assert effects() == ["charge:7"]
