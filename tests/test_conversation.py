"""The conversation turn read as a person would: the agent answers, the person replies, redirects,
takes over or ends it, and every answer is given exactly once, also across processes."""

from __future__ import annotations

import doctest
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import (
    Approve,
    ConfigError,
    Decision,
    Escalate,
    InvalidDecisionError,
    Modify,
    Reject,
    Respond,
    Runner,
    Workflow,
    create_conversation_graph,
)
from hitl_graphs.examples import conversation as conversation_example
from hitl_graphs.templates import conversation
from tests.conftest import fingerprint, hitl
from tests.drivers import Driven
from tests.staged_workflows import STAGED
from tests.workflows import effects


@pytest.fixture
def workflows() -> list[Workflow]:
    """What the shared `runner` fixture (both drivers) runs in this module."""
    return STAGED


@dataclass(frozen=True)
class Case:
    id: str
    decisions: Sequence[Decision]
    outcome: str
    messages: list[tuple[str, str, str | None]]
    """(role, content, by) of the whole conversation at the end."""
    ended: dict[str, Any]


CASES = [
    Case("end-at-once", [Approve(actor="ana")], "completed",
         [("user", "hello", None), ("assistant", "answer 1 to 'hello'", "agent")],
         {"by": "ana", "how": "approve", "reason": None}),
    Case("reply-then-end", [Respond(text="focus on type hints", actor="ana"), Approve(actor="ana", comment="thanks")],
         "completed",
         [("user", "hello", None), ("assistant", "answer 1 to 'hello'", "agent"),
          ("user", "focus on type hints", "ana"),
          ("assistant", "answer 2 to 'focus on type hints'; after: answer 1 to 'hello'", "agent")],
         {"by": "ana", "how": "approve", "reason": "thanks"}),
    Case("redirect-twice", [Respond(text="no, write docs instead", actor="ana"), Respond(text="shorter", actor="bo"),
                            Approve(actor="bo")], "completed",
         [("user", "hello", None), ("assistant", "answer 1 to 'hello'", "agent"),
          ("user", "no, write docs instead", "ana"),
          ("assistant", "answer 2 to 'no, write docs instead'; after: answer 1 to 'hello'", "agent"),
          ("user", "shorter", "bo"),
          ("assistant", "answer 3 to 'shorter'; after: answer 2 to 'no, write docs instead'", "agent")],
         {"by": "bo", "how": "approve", "reason": None}),
    Case("take-over-a-turn", [Modify(patch={"answer": "Use int | float."}, actor="ana"), Respond(text="and?", actor="ana"),
                              Approve(actor="ana")], "completed",
         [("user", "hello", None), ("assistant", "Use int | float.", "ana"), ("user", "and?", "ana"),
          ("assistant", "answer 2 to 'and?'; after: Use int | float.", "agent")],
         {"by": "ana", "how": "approve", "reason": None}),
    Case("reject-ends", [Reject(reason="off topic", actor="ana")], "rejected",
         [("user", "hello", None), ("assistant", "answer 1 to 'hello'", "agent")],
         {"by": "ana", "how": "reject", "reason": "off topic"}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_turn_decision(runner: Driven, case: Case) -> None:
    view = runner.start("chat-fx", {"task": "hello"})
    for decision in case.decisions:
        assert view.status == "paused"
        (review,) = view.reviews
        assert review.kind == "reply"
        view = runner.resume(view.thread_id, decision)
    assert (view.status, view.outcome, view.reviews) == ("done", case.outcome, ())
    assert [(m["role"], m["content"], m["by"]) for m in view.state["messages"]] == case.messages
    assert view.state["ended"] == case.ended
    answers = sum(role == "assistant" for role, _, _ in case.messages)  # a taken-over answer was given once too
    assert effects() == [f"answer:{n}" for n in range(1, answers + 1)]


def test_the_person_sees_the_answer_and_what_they_may_do(runner: Driven) -> None:
    view = runner.start("chat-fx", {"task": "hello"})
    (review,) = view.reviews
    assert (review.kind, review.node, review.position) == ("reply", "human", "before")
    assert review.payload == {"answer": "answer 1 to 'hello'", "turn": 1,
                              "messages": [{"role": "user", "content": "hello", "by": None},
                                           {"role": "assistant", "content": "answer 1 to 'hello'", "by": "agent"}]}
    assert review.title == "Turn 1: answer 1 to 'hello' (respond to reply, approve to end)"
    assert (review.allowed, review.editable) == (("respond", "modify", "approve", "reject"), ("answer",))


def test_a_take_over_keeps_the_pause_for_the_reply(runner: Driven) -> None:
    view = runner.start("chat-fx", {"task": "hello"})
    view = runner.resume(view.thread_id, Modify(patch={"answer": "mine"}, actor="ana"))
    assert view.status == "paused"
    assert view.reviews[0].payload["answer"] == "mine"
    assert effects() == ["answer:1"]


def test_refused_decisions_change_nothing(runner: Driven, db: str) -> None:
    view = runner.start("chat-fx", {"task": "hello"})
    before = fingerprint(db, view.thread_id)
    with pytest.raises(InvalidDecisionError, match="does not allow 'escalate'"):
        runner.resume(view.thread_id, Escalate(reason="boss"))
    with pytest.raises(InvalidDecisionError, match="text: Field required"):
        runner.resume(view.thread_id, {"kind": "respond"})
    assert fingerprint(db, view.thread_id) == before


def test_the_conversation_continues_in_another_process(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[conversation_example.conversation_workflow()]) as runner:
        view = runner.start("conversation", {"task": "Please review add(a, b)"}, thread_id="chat-proc")
        assert view.reviews[0].payload["answer"].startswith('Review 1: noted "Please review add(a, b)"')
    replied = hitl(db, "respond", "chat-proc", "--text", "Focus on type hints", "--actor", "ana", "--json")
    assert replied.returncode == 0, replied.stderr
    answer = json.loads(replied.stdout)["reviews"][0]["payload"]["answer"]
    assert answer == 'Review 2: noted "Focus on type hints". Consider type hints and a docstring.'
    with Runner.open(db, workflows=[conversation_example.conversation_workflow()]) as runner:
        done = runner.resume("chat-proc", Approve(actor="ana"))
        assert [(m["role"], m["by"]) for m in done.state["messages"]] == [
            ("user", None), ("assistant", "agent"), ("user", "ana"), ("assistant", "agent")]
        decided = [(e.actor, e.data["kind"]) for e in runner.history("chat-proc") if e.event == "decided"]
    assert decided == [("ana", "respond"), ("ana", "approve")]


def test_an_opening_message_is_needed(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=STAGED) as runner:
        with pytest.raises(ConfigError, match='the conversation needs an opening message: start it with {"task": "..."}'):
            runner.start("chat-fx", {})


def test_an_agent_must_be_a_model_or_a_callable() -> None:
    with pytest.raises(ConfigError, match="agent must be a LangChain chat model or a callable, got int"):
        create_conversation_graph(42)  # type: ignore[arg-type]


def test_starts_from_given_messages(db: str, effects_file: Path) -> None:
    graph = create_conversation_graph(lambda messages: f"{len(messages)} messages so far")
    with Runner.open(db, workflows=[Workflow("chat-given", graph)]) as runner:
        view = runner.start("chat-given", {"messages": [{"role": "user", "content": "a", "by": "ana"},
                                                        {"role": "assistant", "content": "b", "by": "agent"},
                                                        {"role": "user", "content": "c", "by": "ana"}]})
    assert view.reviews[0].payload["answer"] == "3 messages so far"


@pytest.mark.parametrize("module", [conversation, conversation_example], ids=lambda m: m.__name__)
def test_docstring_examples_run(module: Any) -> None:
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0
