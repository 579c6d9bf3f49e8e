"""Streaming through the runner, as a LangGraph user writes it: `for chunk in runner.stream(...)`.

The chunks are compared with what plain LangGraph streams for the same graph on its own saver,
and the ledger must say what `start` / `resume` would have said.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from hitl_graphs import AlreadyDecidedError, Approve, Runner, ThreadExistsError, UnknownThreadError
from hitl_graphs.examples import email_workflow
from hitl_graphs.examples.basics import email_graph

INPUT = {"to": "ana@example.com", "topic": "lunch"}


def plain_langgraph(stream_mode: Any, thread: str = "plain") -> tuple[list[Any], list[Any]]:
    """What LangGraph itself streams for the same graph: the start, then the resume."""
    from langgraph.types import Command

    graph = email_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread}}
    first = list(graph.stream(INPUT, config, stream_mode=stream_mode))
    interrupt_id = graph.get_state(config).interrupts[0].id
    second = list(graph.stream(Command(resume={interrupt_id: {"kind": "approve", "actor": "ana"}}), config,
                               stream_mode=stream_mode))
    return first, second


def without_ids(chunks: list[Any]) -> list[Any]:
    """Interrupt ids differ between two runs; everything else must not."""
    return [repr(c).split("id='")[0] if "__interrupt__" in repr(c) else c for c in chunks]


@pytest.mark.parametrize("stream_mode", ["updates", "values", ["updates", "values"]], ids=str)
def test_stream_yields_langgraphs_chunks_and_the_ledger_records_the_run(db: str, stream_mode: Any) -> None:
    plain_first, plain_second = plain_langgraph(stream_mode)
    with Runner.open(db, workflows=[email_workflow()]) as runner:
        stream = runner.stream("email", INPUT, thread_id="t1", stream_mode=stream_mode)
        first = list(stream)
        assert without_ids(first) == without_ids(plain_first)
        assert stream.view.status == "paused"
        # what start would have recorded: the thread, its review, the audit entries
        assert [r.thread_id for r in runner.pending()] == ["t1"]
        assert runner.show("t1").reviews == stream.view.reviews
        assert [e.event for e in runner.history("t1")] == ["started", "review_requested"]

        done = runner.stream_resume("t1", Approve(actor="ana"), stream_mode=stream_mode)
        second = list(done)
        assert without_ids(second)[1:] == without_ids(plain_second)[1:]  # the first is the gate's own update
        assert (done.view.status, done.view.outcome, done.view.state["sent"]) == ("done", "completed", True)
        assert runner.show("t1").status == "done"
        assert [e.event for e in runner.history("t1")][-3:] == ["decided", "applied", "completed"]


def test_stream_resume_claims_once(db: str) -> None:
    with Runner.open(db, workflows=[email_workflow()]) as runner:
        view = runner.start("email", INPUT)
        list(runner.stream_resume(view.thread_id, Approve(actor="ana")))
        again = runner.stream_resume(view.thread_id, Approve(actor="bob"))
        with pytest.raises(AlreadyDecidedError, match="already decided"):
            next(again)
        assert runner.show(view.thread_id).state["sent"] is True


def test_view_before_the_end_says_to_read_on(db: str) -> None:
    with Runner.open(db, workflows=[email_workflow()]) as runner:
        stream = runner.stream("email", INPUT, stream_mode="updates")
        next(stream)
        with pytest.raises(RuntimeError, match="iterate it to its end"):
            stream.view
        list(stream)
        assert stream.view.status == "paused"


def test_a_stream_stopped_early_leaves_the_thread_for_recover(db: str) -> None:
    with Runner.open(db, workflows=[email_workflow()]) as runner:
        view = runner.start("email", INPUT, thread_id="t1")
        with runner.stream_resume("t1", Approve(actor="ana"), stream_mode="updates") as stream:
            next(stream)  # the gate's update; then the reader walks away
        stopped = runner.show("t1")
        assert stopped.status == "failed" and "stopped reading the stream" in (stopped.error or "")
        assert stopped.awaiting_recovery == (view.reviews[0].review_id,)
        [recovered] = runner.recover()
        assert (recovered.status, recovered.state["sent"]) == ("done", True)


async def test_astream_and_astream_resume(db: str) -> None:
    plain_first, plain_second = plain_langgraph("updates")
    with Runner.open(db, workflows=[email_workflow()]) as runner:
        stream = runner.astream("email", INPUT, thread_id="t1", stream_mode="updates")
        first = [chunk async for chunk in stream]
        assert without_ids(first) == without_ids(plain_first)
        assert (await runner.apending())[0].thread_id == "t1"
        async with runner.astream_resume("t1", Approve(actor="ana"), stream_mode="updates") as done:
            second = [chunk async for chunk in done]
        assert without_ids(second)[1:] == without_ids(plain_second)[1:]
        assert done.view.status == "done" and (await runner.ashow("t1")).outcome == "completed"


def test_a_thread_streamed_around_the_runner_points_to_adopt_and_stream(db: str) -> None:
    with Runner.open(db, workflows=[email_workflow()]) as runner:
        list(runner.graph("email").stream(INPUT, {"configurable": {"thread_id": "t9"}}))
        with pytest.raises(UnknownThreadError, match=r"run outside the runner.*runner.adopt\('t9', WORKFLOW\).*runner.stream"):
            runner.show("t9")


def test_start_with_the_id_of_a_thread_run_outside_names_adopt(db: str) -> None:
    with Runner.open(db, workflows=[email_workflow()]) as runner:
        runner.graph("email").invoke(INPUT, {"configurable": {"thread_id": "t9"}})
        with pytest.raises(ThreadExistsError, match=r"run outside the runner.*hitl adopt --workflow WORKFLOW t9"):
            runner.start("email", INPUT, thread_id="t9")


def test_a_graph_with_async_nodes_streams_from_sync_code(db: str) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from hitl_graphs import Workflow, request_review

    class S(TypedDict, total=False):
        n: int

    async def bump(state: S) -> S:
        request_review("gate", {"n": state["n"]})
        return {"n": state["n"] + 1}

    graph = StateGraph(S)
    graph.add_node("bump", bump)
    graph.add_edge(START, "bump")
    graph.add_edge("bump", END)
    with Runner.open(db, workflows=[Workflow("async-bump", graph)]) as runner:
        stream = runner.stream("async-bump", {"n": 1}, stream_mode=["values", "updates"], subgraphs=True)
        chunks = list(stream)
        assert chunks[0] == ((), "values", {"n": 1}) and stream.view.status == "paused"
        done = runner.stream_resume(stream.view.thread_id, Approve(actor="ana"), stream_mode="values")
        assert list(done)[-1] == {"n": 2} and done.view.state == {"n": 2}
