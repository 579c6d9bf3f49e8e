"""`Workflow(durability="exit")`: one checkpoint per pause, committed with the ledger's record.

The same results as a checkpoint per step, fewer commits, and what a SIGKILL at each point leaves:
no decision lost, no `run_once` effect repeated, every thread finished by `recover`.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from hitl_graphs import Approve, Runner, SqliteStore, Workflow, request_review, run_once
from hitl_graphs.storage.sqlite.connection import write_transaction
from hitl_graphs.storage.sqlite.saver import DEFER_KEY
from tests.conftest import python
from tests.drivers import Driven
from tests.workflows import _charge, _single, effect, effects, maybe_die, pay_graph


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
        run_once(name, effect, name)
        return {"done": 1}

    return node


def steps_graph() -> StateGraph[StepsState]:
    """gate -> one -> two, each step's effect through `run_once`."""
    g = StateGraph(StepsState)
    g.add_node("gate", _gate)
    g.add_node("one", _step("one"))
    g.add_node("two", _step("two"))
    g.add_edge(START, "gate")
    g.add_edge("gate", "one")
    g.add_edge("one", "two")
    g.add_edge("two", END)
    return g


def _workflows(durability: Any) -> list[Workflow]:
    return [
        Workflow("steps", steps_graph, durability=durability),
        Workflow("pay", pay_graph, example_input={"to": "acme", "amount": 120}, durability=durability),
        Workflow("charge", _single("charge", _charge), example_input={"amount": 30}, durability=durability),
    ]


EXIT = _workflows("exit")
RUNNER = ("from hitl_graphs import Runner, Approve\nimport tests.test_pause_checkpoints as t\n"
          "def runner():\n    return Runner.open(workflows=t.EXIT)\n")
KILL_ON_SYNC = ("import os, signal\nfrom hitl_graphs.storage.sqlite.ledger import SqliteLedger as Ledger\n"
                "Ledger.sync = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n")


def commits(runner: Runner) -> list[str]:
    seen: list[str] = []
    runner.store.conn.set_trace_callback(lambda s: seen.append(s) if s.startswith("COMMIT") else None)
    return seen


def test_same_results_with_fewer_commits(tmp_path: Path, effects_file: Path) -> None:
    outcomes = {}
    counted = {}
    for durability in ("async", "exit"):
        with Runner.open(str(tmp_path / f"{durability}.sqlite"), workflows=_workflows(durability)) as runner:
            seen = commits(runner)
            results = []
            for name in ("pay", "steps", "charge"):
                paused = runner.start(name)
                done = runner.resume(paused.thread_id, Approve(actor="ana"))
                history = [e.event for e in runner.history(paused.thread_id)]
                results.append((paused.status, [r.kind for r in paused.reviews], done.status, done.outcome, done.state,
                                history))
            outcomes[durability] = results
            counted[durability] = len(seen)
            assert runner.audit_verify().ok
    assert outcomes["exit"] == outcomes["async"]
    assert counted["exit"] * 2 < counted["async"]


def test_a_pause_is_committed_with_its_review(db: str, effects_file: Path) -> None:
    """Where a run stopped and the ledger's record of it are one transaction: after `start`
    returns, another connection sees both."""
    with Runner.open(db, workflows=EXIT) as runner:
        paused = runner.start("pay")
        other = sqlite3.connect(db)
        try:
            checkpoints = other.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (paused.thread_id,)).fetchone()[0]
            reviews = other.execute("SELECT status FROM hitl_reviews WHERE thread_id = ?", (paused.thread_id,)).fetchall()
        finally:
            other.close()
        assert checkpoints == 1 and reviews == [("pending",)]
        assert runner.store.saver.waiting() is False


def test_reads_see_rows_waiting_for_a_commit(db: str) -> None:
    with SqliteStore(db) as store:
        graph = steps_graph().compile(checkpointer=store.saver)
        config: Any = {"configurable": {"thread_id": "t", DEFER_KEY: True}}
        graph.invoke({}, config, durability="exit")
        snapshot = graph.get_state(config)  # this connection sees the pause
        assert snapshot.interrupts and snapshot.next == ("gate",)
        assert store.saver.latest_checkpoint_id("t") == snapshot.config["configurable"]["checkpoint_id"]
        assert store.saver.latest_checkpoint_id("nobody") is None
        assert DEFER_KEY not in snapshot.metadata  # the flag stays out of the checkpoint's metadata
        other = sqlite3.connect(db)
        try:
            assert other.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
            store.saver.commit_deferred()
            assert other.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 1
        finally:
            other.close()


def test_checkpoints_never_ride_a_commit_that_skips_the_flush(db: str) -> None:
    with SqliteStore(db) as store:  # FULL on WAL: the connection flushes the WAL after the commits that need it
        graph = steps_graph().compile(checkpointer=store.saver)
        flushes = store.conn.hitl_flushes
        with write_transaction(store.conn, store.lock, flush=False) as c:
            c.execute("INSERT INTO hitl_effects VALUES ('t', 'k', '1', 0)")
        assert store.conn.hitl_flushes == flushes  # nothing durable waited: no flush
        graph.invoke({}, {"configurable": {"thread_id": "t", DEFER_KEY: True}}, durability="exit")
        assert store.saver.waiting()
        with write_transaction(store.conn, store.lock, flush=False):
            pass
        assert store.conn.hitl_flushes == flushes + 1  # the checkpoint joined it: flushed
        assert not store.saver.waiting()
        with write_transaction(store.conn, store.lock) as c:
            c.execute("INSERT INTO hitl_effects VALUES ('t', 'k2', '1', 0)")
        assert store.conn.hitl_flushes == flushes + 2


def test_checkpoints_never_ride_a_commit_that_skips_the_flush_where_sqlite_flushes(tmp_path: Path) -> None:
    with SqliteStore(str(tmp_path / "journal.sqlite")) as store:
        store.conn.hitl_wal = None  # as on a file that cannot use WAL: SQLite's own FULL flushes every commit
        graph = steps_graph().compile(checkpointer=store.saver)
        store.conn.execute("PRAGMA synchronous=FULL")
        with write_transaction(store.conn, store.lock, flush=False) as c:
            assert c.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL: nothing durable waits
        graph.invoke({}, {"configurable": {"thread_id": "t", DEFER_KEY: True}}, durability="exit")
        assert store.saver.waiting()
        with write_transaction(store.conn, store.lock, flush=False) as c:
            assert c.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: the checkpoint joins it
        assert not store.saver.waiting()
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_a_rolled_back_transaction_keeps_the_rows_waiting(db: str) -> None:
    with SqliteStore(db) as store:
        graph = steps_graph().compile(checkpointer=store.saver)
        graph.invoke({}, {"configurable": {"thread_id": "t", DEFER_KEY: True}}, durability="exit")
        with pytest.raises(RuntimeError), write_transaction(store.conn, store.lock):
            raise RuntimeError("the ledger's transaction failed")
        assert store.saver.waiting()
        assert store.conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
        store.saver.commit_deferred()
        assert store.conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 1


@pytest.mark.parametrize("workflows", [EXIT], ids=["exit"])
def test_both_drivers_pause_and_resume_with_deferred_checkpoints(runner: Driven) -> None:
    paused = runner.start("steps")
    done = runner.resume(paused.thread_id, Approve())
    assert (done.status, done.state["done"]) == ("done", 2)
    assert effects() == ["one", "two"]


def test_interrupt_after_keeps_a_checkpoint_per_step(db: str, effects_file: Path) -> None:
    """A pause after a node is told by the checkpoint before it, so such graphs keep one."""
    from tests.workflows import after_graph

    with Runner.open(db, workflows=[Workflow("after", after_graph, editable=("draft",), durability="exit")]) as runner:
        view = runner.start("after", {})
        (review,) = view.reviews
        assert (review.position, review.node) == ("after", "write")
        assert runner.resume(view.thread_id, Approve()).state["published"] is True


def test_kill_mid_run_repeats_no_effect(db: str, effects_file: Path) -> None:
    """Killed in step two: the run is done again from its pause with the recorded decision, and
    step one's effect is not repeated."""
    with Runner.open(db, workflows=EXIT) as runner:
        thread_id = runner.start("steps").thread_id
    crashed = python(db, RUNNER + f"with runner() as r: r.resume({thread_id!r}, Approve(actor='ana'))", HITL_TEST_DIE="two")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert effects() == ["one"]
    with Runner.open(db, workflows=EXIT) as runner:
        assert runner.pending() == []  # the decision is not asked again
        assert runner.show(thread_id).awaiting_recovery
        (recovered,) = runner.recover()
        assert (recovered.status, recovered.state["done"]) == ("done", 2)
        events = [e.event for e in runner.history(thread_id)]
        assert events.count("decided") == 1 and events.count("recovering") == 1
        assert runner.audit_verify().ok
    assert effects() == ["one", "two"]


def test_kill_before_the_ledger_hears_of_the_end(db: str, effects_file: Path) -> None:
    """The end is committed with the ledger's record: killed before, the decision is applied
    again from the pause and the payment, recorded by `run_once`, is not made again."""
    with Runner.open(db, workflows=EXIT) as runner:
        thread_id = runner.start("charge", {"amount": 7}).thread_id
    crashed = python(db, RUNNER + KILL_ON_SYNC + f"with runner() as r: r.resume({thread_id!r}, Approve())")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert effects() == ["charge:7"]
    with Runner.open(db, workflows=EXIT) as runner:
        assert runner.pending() == []
        (recovered,) = runner.recover()
        assert (recovered.status, recovered.state["receipt"]) == ("done", {"id": "rcpt-1", "amount": 7})
        assert runner.recover() == []
    assert effects() == ["charge:7"]


def test_kill_before_the_first_pause_is_recorded(db: str, effects_file: Path) -> None:
    """A start killed before its pause committed: with an id of our making nothing is left (the
    caller never heard of it); with one given, `recover` runs it again from its input."""
    anonymous = python(db, RUNNER + KILL_ON_SYNC + "with runner() as r: r.start('pay')")
    assert anonymous.returncode == -signal.SIGKILL, anonymous.stderr
    named = python(db, RUNNER + KILL_ON_SYNC + "with runner() as r: r.start('pay', thread_id='t-crash')")
    assert named.returncode == -signal.SIGKILL, named.stderr
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
        assert conn.execute("SELECT thread_id, status FROM hitl_threads").fetchall() == [("t-crash", "running")]
    finally:
        conn.close()
    with Runner.open(db, workflows=EXIT) as runner:
        assert runner.pending() == []
        assert "`hitl recover` runs it again from its input" in (runner.show("t-crash").error or "")
        (recovered,) = runner.recover()
        assert recovered.status == "paused"
        (review,) = runner.pending()
        assert review.thread_id == "t-crash"
        assert runner.resume("t-crash", Approve()).outcome == "completed"
        events = [e.event for e in runner.history("t-crash")]
        assert events[:2] == ["started", "reconciled"] and "recovering" in events
    # the work before the pause ran again for both starts; the payment once, after the approval
    assert effects() == ["prepare", "prepare", "prepare", "pay:acme:120"]


def test_with_full_what_a_guarantee_rests_on_is_flushed_before_anything_acts_on_it(db: str) -> None:
    """The flush runs after the write lock is released, but still before the caller goes on:
    the pause before the runner returns, the decision before the node runs, an effect's result
    before the node goes on, the end before `resume` returns."""
    seen: list[tuple[str, int]] = []
    store = SqliteStore(db)

    def gate(state: StepsState) -> StepsState:
        request_review("gate", {"steps": 1}, title="Act?", allowed=("approve", "reject"))
        seen.append(("the node runs on the decision", store.conn.hitl_flushes - base))
        return {}

    def act(state: StepsState) -> StepsState:
        run_once("act", lambda: "done")
        seen.append(("the node goes on after its effect", store.conn.hitl_flushes - base))
        return {"done": 1}

    def build() -> StateGraph[StepsState]:
        g = StateGraph(StepsState)
        g.add_node("gate", gate)
        g.add_node("act", act)
        g.add_edge(START, "gate")
        g.add_edge("gate", "act")
        g.add_edge("act", END)
        return g

    with Runner(store, [Workflow("act", build, durability="exit")], owns_store=True) as runner:
        base = store.conn.hitl_flushes
        paused = runner.start("act", {})
        assert store.conn.hitl_flushes - base == 1  # the pause, with its checkpoint and review
        runner.resume(paused.thread_id, Approve(actor="ana"))
        assert seen == [("the node runs on the decision", 2), ("the node goes on after its effect", 3)]
        assert store.conn.hitl_flushes - base == 4  # the end


def _outer_graph() -> StateGraph[Any]:
    """The plan-review template as a subgraph: its checkpoints are written under a namespace of their own."""
    from hitl_graphs.templates.plan_review import PlanState, create_plan_review_graph

    g = StateGraph(PlanState)
    g.add_node("work", create_plan_review_graph(lambda c: ["a", "b"], lambda s, c: f"did {s}").compile())
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g


@pytest.mark.parametrize("durability", ["exit", "sync"])
@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_review_is_recorded_at_the_top_level_checkpoint_its_thread_paused_at(
        store: str, durability: Any, request: pytest.FixtureRequest, effects_file: Path) -> None:
    """The runner learns the run's last checkpoint from the saver instead of reading it back: it
    must be the thread's own (not a subgraph's, written under a namespace), or a decision on the
    review would find the checkpoint "moved" and read it all again."""
    url = request.getfixturevalue("db" if store == "sqlite" else "pg_db_url")
    with Runner.open(url, workflows=[Workflow("outer", _outer_graph, durability=durability)]) as runner:
        view = runner.start("outer", {"task": "t"})
        [row] = runner.ledger.reviews(view.thread_id)
        assert row.checkpoint_id == runner.store.latest_checkpoint_id(view.thread_id)
        assert runner.resume(view.thread_id, Approve()).outcome == "completed"
