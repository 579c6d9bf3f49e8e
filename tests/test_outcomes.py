"""One ending for every template: approve, modify and reject per template, read by `outcome()`.

Each template runs as a plain `Workflow` (no `outcome=` reader, no durability) through the
`Runner` on a real SQLite file, so what a person reads is what the template itself writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from hitl_graphs import (
    AgentLevel,
    AlwaysAskPolicy,
    Approve,
    Decision,
    Ending,
    HumanLevel,
    Modify,
    Phase,
    Reject,
    Runner,
    ScriptedChatModel,
    ThreadView,
    Workflow,
    create_conversation_graph,
    create_escalation_graph,
    create_multi_step_graph,
    create_plan_review_graph,
    create_tool_approval_graph,
    outcome,
    request_review,
    tool_call,
)
from hitl_graphs.endings import thread_outcome
from hitl_graphs.examples import examples, plan_review_workflow
from hitl_graphs.templates import conversation, escalation, multi_step, plan_review, tool_approval


def send(to: str) -> str:
    """Send a note."""
    return f"sent to {to}"


def _tools() -> StateGraph[Any]:
    model = ScriptedChatModel(script=[tool_call("send", {"to": "ana"}, id="call-1"), "done"])
    return create_tool_approval_graph(model, [send], default_policy=AlwaysAskPolicy())


def _ladder() -> StateGraph[Any]:
    return create_escalation_graph([AgentLevel("bot", lambda case: {"output": "refund", "confidence": 0.1}),
                                    HumanLevel("support", role="support")])


BUILDERS: dict[str, Callable[[], StateGraph[Any]]] = {
    "plan-review": lambda: create_plan_review_graph(lambda ctx: ["look", "fix"], lambda step, ctx: f"did {step}"),
    "tool-approval": _tools,
    "multi-step": lambda: create_multi_step_graph([Phase("draft", lambda p: "a draft")], max_attempts=1),
    "escalation": _ladder,
    "conversation": lambda: create_conversation_graph(lambda messages: "hello"),
}


@pytest.fixture
def runner(db: str) -> Iterator[Runner]:
    with Runner.open(db, workflows=[Workflow(name, build) for name, build in BUILDERS.items()]) as r:
        yield r


def _end(status: str, at: str, by: str | None = None, reason: str | None = None) -> Ending:
    return {"status": status, "at": at, "by": by, "reason": reason}  # type: ignore[typeddict-item]


@dataclass(frozen=True)
class Case:
    id: str
    workflow: str
    decisions: Sequence[Decision]
    ending: Ending
    outcome: str


ANA = "ana"
CASES = [
    Case("plan-review-approve", "plan-review", [Approve(actor=ANA)], _end("completed", "plan v1", ANA), "completed"),
    Case("plan-review-modify", "plan-review", [Modify(patch={"plan": ["fix"]}, actor=ANA)],
         _end("completed", "plan v2", ANA), "completed"),
    Case("plan-review-reject", "plan-review", [Reject(reason="not now", actor=ANA)],
         _end("rejected", "plan v1", ANA, "not now"), "rejected"),
    # a rejected call does not end the agent: the model is told why and answers; the model ends it
    Case("tool-approval-approve", "tool-approval", [Approve(actor=ANA)], _end("completed", "turn 2"), "completed"),
    Case("tool-approval-modify", "tool-approval", [Modify(patch={"args": {"to": "bo"}}, actor=ANA)],
         _end("completed", "turn 2"), "completed"),
    Case("tool-approval-reject", "tool-approval", [Reject(reason="not now", actor=ANA)],
         _end("completed", "turn 2"), "completed"),
    Case("multi-step-approve", "multi-step", [Approve(actor=ANA)], _end("completed", "draft", ANA), "completed"),
    Case("multi-step-modify", "multi-step", [Modify(patch={"output": "a better draft"}, actor=ANA)],
         _end("completed", "draft", ANA), "completed"),
    Case("multi-step-reject", "multi-step", [Reject(reason="not now", actor=ANA)],
         _end("rejected", "draft", ANA, "not now"), "rejected"),
    Case("escalation-approve", "escalation", [Approve(actor=ANA)], _end("completed", "support", ANA), "completed"),
    Case("escalation-modify", "escalation", [Modify(patch={"output": "no refund"}, actor=ANA)],
         _end("completed", "support", ANA), "completed"),
    Case("escalation-reject", "escalation", [Reject(reason="not now", actor=ANA)],
         _end("rejected", "support", ANA, "not now"), "rejected"),
    Case("conversation-approve", "conversation", [Approve(actor=ANA)], _end("completed", "turn 1", ANA), "completed"),
    # a modify takes over the agent's turn and the pause stays; the approve after it ends the talk
    Case("conversation-modify", "conversation", [Modify(patch={"answer": "hi there"}, actor=ANA), Approve(actor=ANA)],
         _end("completed", "turn 1", ANA), "completed"),
    Case("conversation-reject", "conversation", [Reject(reason="not now", actor=ANA)],
         _end("rejected", "turn 1", ANA, "not now"), "rejected"),
]


def _check(view: ThreadView, case: Case) -> None:
    assert (view.status, view.outcome, view.reviews) == ("done", case.outcome, ())
    assert outcome(view) == case.ending
    assert outcome(view.state) == case.ending  # the state alone says the same
    assert thread_outcome(case.ending) == view.outcome


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_template_ends_with_the_same_record(runner: Runner, case: Case) -> None:
    view = runner.start(case.workflow, {"task": "refund order 7"})
    for decision in case.decisions:
        assert view.status == "paused" and outcome(view) is None
        view = runner.resume(view.thread_id, decision, roles=["support"])
    _check(view, case)
    assert runner.show(view.thread_id).outcome == case.outcome  # what another process reads


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_every_template_ends_with_the_same_record_on_the_async_driver(runner: Runner, case: Case) -> None:
    view = await runner.astart(case.workflow, {"task": "refund order 7"})
    for decision in case.decisions:
        view = await runner.aresume(view.thread_id, decision, roles=["support"])
    _check(view, case)


def test_a_plan_reject_ends_rejected_through_a_plain_workflow_and_the_builtin_one(db: str) -> None:
    """The same Reject used to end `rejected` one way and `cancelled` the other."""
    with Runner.open(db, workflows=[plan_review_workflow(), Workflow("plain-plan", plan_review_workflow().graph)]) as runner:
        ends = []
        for name in ("plan-review", "plain-plan"):
            paused = runner.start(name, {"task": "ship it"})
            done = runner.resume(paused.thread_id, Reject(reason="not this week", actor=ANA))
            ends.append((done.outcome, outcome(done)))
    assert ends[0] == ends[1] == ("rejected", _end("rejected", "plan v1", ANA, "not this week"))


def test_a_cancelled_thread_reads_cancelled(runner: Runner) -> None:
    paused = runner.start("plan-review", {"task": "ship it"})
    view = runner.cancel(paused.thread_id, actor=ANA, reason="moved on")
    assert (view.outcome, outcome(view)) == ("cancelled", _end("cancelled", None))  # type: ignore[arg-type]


def test_a_reject_by_the_deadline_reads_expired(db: str) -> None:
    graph = create_multi_step_graph([Phase("draft", lambda p: "a draft")], max_attempts=1, timeout=0.2)
    with Runner.open(db, workflows=[Workflow("timed", graph)]) as runner:
        runner.start("timed", {"task": "t"})
        time.sleep(0.3)
        (swept,) = runner.sweep()
    assert (swept.outcome, outcome(swept)) == ("rejected", _end("expired", "draft", "hitl:deadline", "no decision before the deadline"))


@pytest.mark.parametrize("name, graph, ending", [
    ("turn-limit", lambda: create_tool_approval_graph(
        ScriptedChatModel(script=[tool_call("send", {"to": "ana"}, id="call-1")]), [send], max_turns=1),
     _end("stopped", "turn 1", reason="turn limit: the model still asked for tools after 1 turns")),
    ("unresolved", lambda: create_escalation_graph([AgentLevel("bot", lambda case: {"output": "?", "confidence": 0.1})]),
     _end("stopped", "bot", reason="low confidence: 0.1 < 0.7")),
], ids=["tool-approval-turn-limit", "escalation-unresolved"])
def test_a_template_that_stops_itself_reads_stopped_with_its_reason(db: str, name: str, graph: Any, ending: Ending) -> None:
    with Runner.open(db, workflows=[Workflow(name, graph)]) as runner:
        done = runner.start(name, {"task": "t", "messages": [("user", "t")]})
    assert (done.status, done.outcome, outcome(done)) == ("done", "completed", ending)


class OwnState(TypedDict, total=False):
    ending: str
    """A key of the user's own that happens to be called `ending`."""


def test_a_state_key_of_your_own_called_ending_is_left_alone(db: str) -> None:
    def gate(state: OwnState) -> OwnState:
        decision = request_review("gate", {}, title="Ship?")
        return {"ending": "shipped" if decision.kind == "approve" else "kept"}

    graph: StateGraph[OwnState] = StateGraph(OwnState)
    graph.add_node("gate", gate)
    graph.add_edge(START, "gate")
    graph.add_edge("gate", END)
    with Runner.open(db, workflows=[Workflow("own", graph)]) as runner:
        done = runner.resume(runner.start("own", {}).thread_id, Approve(actor=ANA))
    assert (done.status, done.outcome, done.state["ending"]) == ("done", "completed", "shipped")
    with pytest.raises(ValueError, match="the state's 'ending' is not an ending record .*rename a key of your own"):
        outcome(done)


def test_the_builtin_workflows_run_with_the_durability_their_template_declares() -> None:
    declared = {"plan-review": plan_review.DURABILITY, "tool-approval": tool_approval.DURABILITY,
                "multi-step": multi_step.DURABILITY, "escalation": escalation.DURABILITY,
                "conversation": conversation.DURABILITY}
    builtin = {wf.name: wf.durability for wf in examples() if wf.name in declared}
    assert builtin == declared
