"""The async twins under concurrency and cancellation, on one event loop: real LangGraph, real SQLite.

The async driver hands a flow to a worker thread for its blocking stretches (ledger calls,
checkpoint reads, the run of a graph of plain functions) and keeps `async def` nodes on the
caller's loop (`hitl_graphs.runtime.driver`, "Hops"). These tests hold it to what a server or an
asyncio application relies on: many decisions at once each applied once, one winner per review, a
decision applied even when its caller stops waiting, and async nodes on the caller's own loop.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from hitl_graphs import AlreadyDecidedError, Approve, Runner, ThreadBusyError, Workflow, review_node
from tests.workflows import WORKFLOWS, effect, effects


class SendState(TypedDict, total=False):
    to: str
    status: str


def _gated(send: Any) -> Any:
    def build() -> StateGraph[SendState]:
        g = StateGraph(SendState)
        g.add_node("review", review_node("gate", lambda s: {"to": s["to"]}, title="Send?", on_approve="send",
                                         on_reject=END), destinations=("send", END))
        g.add_node("send", send)
        g.add_edge(START, "review")
        g.add_edge("send", END)
        return g

    return build


async def test_eight_threads_resumed_at_once_from_one_loop_each_run_once(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        paused = await asyncio.gather(*(runner.astart("pay", {"to": f"v{i}", "amount": i}) for i in range(8)))
        done = await asyncio.gather(*(runner.aresume(v.thread_id, Approve(actor="ana")) for v in paused))
        assert [(d.thread_id, d.status, d.state["status"]) for d in done] == [(v.thread_id, "done", "paid") for v in paused]
        assert sorted(effects()) == sorted(["prepare"] * 8 + [f"pay:v{i}:{i}" for i in range(8)])
        for v in paused:
            assert [e.event for e in await runner.ahistory(v.thread_id)] == [
                "started", "review_requested", "decided", "applied", "completed"]
        assert await runner.apending() == []


async def test_of_decisions_racing_on_one_loop_exactly_one_wins(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        view = await runner.astart("pay", {"to": "acme", "amount": 120})
        results = await asyncio.gather(*(runner.aresume(view.thread_id, Approve(actor=f"p{i}")) for i in range(4)),
                                       return_exceptions=True)
        won = [r for r in results if not isinstance(r, BaseException)]
        lost = [r for r in results if isinstance(r, BaseException)]
        assert len(won) == 1 and won[0].status == "done", results
        assert len(lost) == 3 and all(isinstance(e, (AlreadyDecidedError, ThreadBusyError)) for e in lost), lost
        assert effects() == ["prepare", "pay:acme:120"]
        assert [e.event for e in await runner.ahistory(view.thread_id)].count("decided") == 1


async def test_a_decision_is_applied_even_when_its_caller_stops_waiting(db: str, effects_file: Path) -> None:
    """`asyncio.wait_for(runner.aresume(...), 5)` timing out, or a web client going away, cancels
    the caller; the decision it claimed still runs to the end, as `resume` would have."""
    entered, release = threading.Event(), threading.Event()

    def send(state: SendState) -> SendState:
        entered.set()
        release.wait(60)
        effect(f"send:{state['to']}")
        return {"status": "sent"}

    with Runner.open(db, workflows=[Workflow("slow-send", _gated(send))]) as runner:
        view = await runner.astart("slow-send", {"to": "ana"})
        task = asyncio.create_task(runner.aresume(view.thread_id, Approve(actor="ana")))
        assert await asyncio.to_thread(entered.wait, 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await asyncio.get_running_loop().shutdown_default_executor()  # the decision's run ends in its thread
        after = runner.show(view.thread_id)
        assert (after.status, after.outcome, after.state["status"]) == ("done", "completed", "sent")
        assert effects() == ["send:ana"]
        assert [e.event for e in runner.history(view.thread_id)] == [
            "started", "review_requested", "decided", "applied", "completed"]


async def test_async_nodes_run_on_the_callers_loop(db: str) -> None:
    """A node written `async def` shares the caller's loop (its clients, its locks), as with `ainvoke`."""
    loops: list[asyncio.AbstractEventLoop] = []

    async def send(state: SendState) -> SendState:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return {"status": "sent"}

    with Runner.open(db, workflows=[Workflow("async-send", _gated(send))]) as runner:
        views = await asyncio.gather(*(runner.astart("async-send", {"to": f"u{i}"}) for i in range(3)))
        done = await asyncio.gather(*(runner.aresume(v.thread_id, Approve(actor="ana")) for v in views))
        assert [d.state["status"] for d in done] == ["sent"] * 3
        assert loops == [asyncio.get_running_loop()] * 3


async def test_plain_function_graphs_run_on_the_loops_default_executor(db: str) -> None:
    """How many runs of plain-function graphs proceed at once is the loop's default executor's size,
    as for LangGraph's own `ainvoke` (README): a server whose steps block on a model sizes it."""
    used: list[Any] = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            used.append(fn)
            return super().submit(fn, *args, **kwargs)

    asyncio.get_running_loop().set_default_executor(Counting(max_workers=2))

    def send(state: SendState) -> SendState:
        return {"status": "sent"}

    with Runner.open(db, workflows=[Workflow("send", _gated(send))]) as runner:
        views = await asyncio.gather(*(runner.astart("send", {"to": f"u{i}"}) for i in range(3)))
        before = len(used)
        done = await asyncio.gather(*(runner.aresume(v.thread_id, Approve(actor="ana")) for v in views))
        assert [d.state["status"] for d in done] == ["sent"] * 3
        assert before >= 3 and len(used) >= before + 3  # each start and each resume went through it
