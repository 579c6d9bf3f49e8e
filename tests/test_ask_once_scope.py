"""`AskOncePolicy(scope="workflow")`: an approval remembered for the workflow and the thread's actor."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from hitl_graphs import (
    Approve,
    AskOncePolicy,
    NeverAskPolicy,
    Reject,
    Runner,
    ScriptedChatModel,
    Workflow,
    create_tool_approval_graph,
    tool_call,
)
from hitl_graphs.errors import ConfigError
from hitl_graphs.examples.tool_approval import get_phone_number
from tests.conftest import python


def _model(messages: Sequence[BaseMessage]) -> str | AIMessage:
    if not any(isinstance(m, ToolMessage) for m in messages):
        return tool_call("get_phone_number", {"name": "Alice"})
    return "Alice's number: " + str([m.content for m in messages if isinstance(m, ToolMessage)][-1])


def _workflow(scope: str) -> Workflow:
    return Workflow("phone", lambda: create_tool_approval_graph(
        ScriptedChatModel(responder=_model), [get_phone_number],
        policies={"get_phone_number": AskOncePolicy(scope=scope)}, default_policy=NeverAskPolicy()))  # type: ignore[arg-type]


ASK = {"messages": [{"role": "user", "content": "Alice's phone number?"}]}


def test_an_approval_is_remembered_for_the_workflow_and_its_actor(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[_workflow("workflow")]) as runner:
        first = runner.start("phone", ASK, actor="ana")
        assert [r.payload["tool"] for r in first.reviews] == ["get_phone_number"]
        assert runner.resume(first.thread_id, Approve(actor="ana")).status == "done"
    with Runner.open(db, workflows=[_workflow("workflow")]) as runner:  # another runner, another day
        again = runner.start("phone", ASK, actor="ana")
        assert (again.status, again.reviews) == ("done", ())
        assert again.state["tool_log"][-1]["note"] == "approved before in this workflow for this actor"
        assert runner.start("phone", ASK, actor="bob").reviews  # bob was never asked
        assert runner.start("phone", ASK).reviews  # no actor: nothing to remember it for


def test_a_rejection_is_not_remembered_and_the_default_scope_is_the_thread(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[_workflow("workflow")]) as runner:
        first = runner.start("phone", ASK, actor="ana")
        runner.resume(first.thread_id, Reject(actor="ana", reason="not now"))
        assert runner.start("phone", ASK, actor="ana").reviews
    with Runner.open(db, workflows=[_workflow("thread")]) as runner:
        first = runner.start("phone", ASK, actor="cy")
        runner.resume(first.thread_id, Approve(actor="cy"))
        assert runner.start("phone", ASK, actor="cy").reviews


def test_the_memory_is_in_the_database_for_every_process(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=[_workflow("workflow")]) as runner:
        first = runner.start("phone", ASK, actor="ana")
        runner.resume(first.thread_id, Approve(actor="ana"))
    other = python(db, "from tests.test_ask_once_scope import _workflow, ASK\nfrom hitl_graphs import Runner\n"
                       "with Runner.open(workflows=[_workflow('workflow')]) as r:\n"
                       "    print(r.start('phone', ASK, actor='ana').status)")
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == "done"


def test_an_unknown_scope_is_refused() -> None:
    with pytest.raises(ConfigError, match="scope must be 'thread' or 'workflow'"):
        AskOncePolicy(scope="forever")  # type: ignore[arg-type]


def test_a_decision_on_a_waiting_call_holds_after_another_thread_remembered_the_tool(db: str, effects_file: Path) -> None:
    """Ana's two threads wait on the same tool; she approves in one, rejects in the other: the
    reject holds (the memory decides whether to ask, never overrides an answer once asked)."""
    with Runner.open(db, workflows=[_workflow("workflow")]) as runner:
        first = runner.start("phone", ASK, actor="ana")
        second = runner.start("phone", ASK, actor="ana")
        runner.resume(first.thread_id, Approve(actor="ana"))
        done = runner.resume(second.thread_id, Reject(actor="ana", reason="not for this customer"))
    (entry,) = done.state["tool_log"]
    assert (entry["decision"], entry["ran"]) == ("reject", False)
    assert "not for this customer" in [m for m in done.state["messages"] if m["type"] == "tool"][0]["content"]
