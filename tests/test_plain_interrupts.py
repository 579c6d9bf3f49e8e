"""A graph written for plain LangGraph: its node does `answer = interrupt(...); answer["approved"]`.

The toolkit resumes such an `interrupt()` with the shape the workflow names (`resume_value`), and
a graph that raises on the value it got never leaves the thread stuck with a used-up decision.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from hitl_graphs import (
    Approve,
    ConfigError,
    InvalidDecisionError,
    Modify,
    Reject,
    ResumeRefusedError,
    Runner,
    Workflow,
    request_review,
)
from tests.conftest import fingerprint
from tests.plain_graphs import SHIP, SHIP_RAW, ship_graph
from tests.workflows import effects


@pytest.mark.parametrize(("decision", "result", "shipped"), [
    (Approve(actor="ana"), "shipped", ["ship:o-1"]),
    (Reject(actor="ana", reason="no stock"), "held", []),
], ids=["approve", "reject"])
def test_resume_value_gives_the_interrupt_its_own_shape(db: str, effects_file: Path, decision: Approve | Reject,
                                                        result: str, shipped: list[str]) -> None:
    with Runner.open(db, workflows=[SHIP]) as runner:
        paused = runner.start("ship", {"item": "o-1"}, thread_id="o-1")
        assert (paused.reviews[0].kind, paused.reviews[0].payload) == ("custom", {"question": "ship o-1?"})
        done = runner.resume("o-1", decision)
        assert (done.status, done.state["result"]) == ("done", result)
        assert effects() == shipped


def test_a_graph_that_refuses_the_value_gets_the_decision_released(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[SHIP_RAW]) as runner:
        first = runner.start("ship-raw", {"item": "o-1"}, thread_id="o-1").reviews[0]
        with pytest.raises(ResumeRefusedError, match=r"node 'ask' of thread 'o-1' raised KeyError: 'approved' .*"
                           r"Workflow\(resume_value=lambda d: \.\.\.\).*the decision was released: it asks again"):
            runner.resume("o-1", Approve(actor="ana"))
        view = runner.show("o-1")
        # not stuck: the same question waits again, under a new review, and nothing was shipped
        assert (view.status, view.awaiting_recovery, len(view.reviews)) == ("paused", (), 1)
        assert view.reviews[0].review_id != first.review_id and view.reviews[0].payload == first.payload
        assert [r.thread_id for r in runner.pending()] == ["o-1"]
        assert runner.recover() == []  # nothing left for recover to apply again and again
        events = [e.event for e in runner.history("o-1")]
        assert events[-4:] == ["decided", "released", "review_requested", "refused"]
        assert effects() == []
    # the workflow is told the shape its interrupt() expects; the same thread goes on
    with Runner.open(db, workflows=[Workflow("ship-raw", ship_graph, resume_value=SHIP.resume_value)]) as fixed:
        done = fixed.resume("o-1", Approve(actor="ana"))
        assert (done.status, done.state["result"]) == ("done", "shipped")
        assert effects() == ["ship:o-1"]
        assert fixed.audit_verify().ok


def test_a_resume_value_that_raises_refuses_the_decision_before_anything_is_written(db: str) -> None:
    def strict(decision: object) -> dict[str, bool]:
        if isinstance(decision, Modify):
            raise ValueError("this graph takes yes or no")
        return {"approved": True}

    with Runner.open(db, workflows=[Workflow("ship", ship_graph, resume_value=strict)]) as runner:
        runner.start("ship", {"item": "o-1"}, thread_id="o-1")
        before = fingerprint(db, "o-1")
        with pytest.raises(InvalidDecisionError, match="resume_value raised ValueError: this graph takes yes or no on "
                                                       "this 'modify' decision; nothing was recorded"):
            runner.resume("o-1", Modify(patch={"item": "o-2"}))
        assert fingerprint(db, "o-1") == before


def test_request_review_refuses_the_kind_plain_interrupts_are_listed_as() -> None:
    class S(TypedDict, total=False):
        x: int

    def node(state: S) -> S:
        request_review("custom", {"x": 1})
        return {}

    graph = StateGraph(S)
    graph.add_node("n", node)
    graph.add_edge(START, "n")
    graph.add_edge("n", END)
    with pytest.raises(ConfigError, match="kind 'custom' is how a plain interrupt\\(\\) is listed"):
        graph.compile().invoke({})


def test_a_reader_who_stops_a_resume_stream_does_not_release_the_decision(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[SHIP]) as runner:
        runner.start("ship", {"item": "o-1"}, thread_id="o-1")
        with runner.stream_resume("o-1", Approve(actor="ana"), stream_mode="debug") as stream:
            next(stream)  # the task starts; the reader walks away
        assert "released" not in [e.event for e in runner.history("o-1")]
        assert runner.show("o-1").awaiting_recovery  # the decision stands; recover applies it
        [done] = runner.recover()
        assert (done.status, done.state["result"]) == ("done", "shipped")
        assert effects() == ["ship:o-1"]
