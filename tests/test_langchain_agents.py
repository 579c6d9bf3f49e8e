"""A LangChain v1 agent (`create_agent` + `HumanInTheLoopMiddleware`), registered as a plain
`Workflow`, reviewed through the runner, the CLI and the HTTP API: each tool call its own review,
each tool run exactly as decided. Real LangChain, real LangGraph, real SQLite; the model is the
scripted one (three tool calls in one turn: `tests.langchain_agents`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hitl_graphs import (
    AlreadyDecidedError,
    Approve,
    Decision,
    Escalate,
    InvalidDecisionError,
    Modify,
    PatchError,
    Reject,
    Respond,
    Runner,
    Workflow,
)
from hitl_graphs.interop import langchain_agents
from hitl_graphs.server import create_app
from tests.conftest import fingerprint, hitl
from tests.drivers import Driven
from tests.langchain_agents import BATCHED, INPUT, PER_CALL, WORKFLOWS
from tests.workflows import effects

APP = "tests.langchain_agents"
SEND, DELETE = "call_send", "call_delete"


@pytest.fixture
def workflows() -> list[Workflow]:
    return WORKFLOWS


def tool_messages(state: dict[str, Any]) -> dict[str, str]:
    """What the model was told per tool call: call id -> the tool message's text."""
    return {m["tool_call_id"]: m["content"] for m in state["messages"] if m.get("type") == "tool"}


# -- batched (the middleware's default): one interrupt, one review per tool call ----------------------


def test_a_batch_of_tool_calls_is_one_review_per_call_keyed_by_its_id(runner: Driven) -> None:
    view = runner.start(BATCHED.name, INPUT)
    assert view.status == "paused"
    assert [r.key for r in view.reviews] == [SEND, DELETE]   # the model's order; `lookup` is not gated
    send, delete = view.reviews
    assert send.payload == {"tool": "send_email", "args": {"to": "ana@example.com", "body": "hi"}, "call_id": SEND,
                            "description": send.payload["description"]}  # type: ignore[index]
    assert send.allowed == ("approve", "modify", "reject", "respond") and send.editable == ("args",)
    assert delete.allowed == ("approve", "reject") and delete.editable == ()
    assert send.middleware is not None and delete.middleware is not None
    assert send.middleware.interrupt_id == delete.middleware.interrupt_id and send.review_id != delete.review_id
    assert [r.key for r in runner.pending()] == [SEND, DELETE]
    assert effects() == []   # nothing runs before every gated call has its decision


@dataclass(frozen=True)
class Case:
    id: str
    send: Decision
    delete: Decision
    ran: list[str]
    told: dict[str, str]   # call id -> a part of what the model was told instead of / with the result


CASES = [
    Case("approve both", Approve(), Approve(),
         ["send_email:ana@example.com:hi", "lookup:weather", "delete_file:/srv/report.pdf"],
         {SEND: "sent to ana@example.com", DELETE: "deleted /srv/report.pdf"}),
    Case("edit one argument, reject the other", Modify({"args": {"to": "bo@example.com"}}), Reject("keep the report"),
         ["send_email:bo@example.com:hi", "lookup:weather"],
         {SEND: "sent to bo@example.com", DELETE: "keep the report"}),
    Case("respond instead of running", Respond("Ana is on holiday; mail nobody"), Approve(),
         ["lookup:weather", "delete_file:/srv/report.pdf"],
         {SEND: "Ana is on holiday; mail nobody", DELETE: "deleted /srv/report.pdf"}),
    Case("reject both", Reject(), Reject("no"), ["lookup:weather"],
         {SEND: "The tool was not executed", DELETE: "with reason: no"}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_each_call_is_decided_on_its_own_and_runs_as_decided(runner: Driven, case: Case) -> None:
    thread = runner.start(BATCHED.name, INPUT).thread_id
    # the second action first: answers are matched by tool call id, never by position
    half = runner.resume(thread, case.delete, review_id=DELETE)
    assert half.status == "paused" and [r.key for r in half.reviews] == [SEND]
    assert half.awaiting_recovery == ()   # kept for the batch, not a crash's leftovers
    assert effects() == []   # the middleware gets its decisions all at once
    done = runner.resume(thread, case.send, review_id=SEND)
    assert (done.status, done.outcome) == ("done", "completed")
    assert sorted(effects()) == sorted(case.ran)   # each tool exactly as decided, once
    told = tool_messages(done.state)
    for call_id, text in case.told.items():
        assert text in told[call_id]
    decided = [(e.event, e.review_id) for e in runner.history(thread) if e.event in ("decided", "applied")]
    assert [e for e, _ in decided] == ["decided", "decided", "applied", "applied"]


def test_decisions_given_survive_a_restart_and_are_claimed_once(db: str, effects_file: object) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as first:
        thread = first.start(BATCHED.name, INPUT).thread_id
        first.resume(thread, Modify({"args": {"body": "see you"}}, actor="ana"), review_id=SEND)
    with Runner.open(db, workflows=WORKFLOWS) as second:   # another process, later
        assert [r.key for r in second.pending()] == [DELETE]
        assert second.recover() == [] and effects() == []   # a half-decided batch is nobody's crash
        with pytest.raises(AlreadyDecidedError, match=r"already decided \(modify by ana\)"):
            second.resume(thread, Approve(actor="bo"), review_id=SEND)
        done = second.resume(thread, Approve(actor="bo"), review_id=DELETE)
    assert done.status == "done"
    assert sorted(effects()) == ["delete_file:/srv/report.pdf", "lookup:weather", "send_email:ana@example.com:see you"]


@pytest.mark.parametrize(("ref", "decision", "error", "message"), [
    (SEND, Modify({"args": {"to": 5}}), PatchError, r"field 'args.to' expects string: 5 is not of type 'string'"),
    (SEND, Modify({"args": {"cc": "boss@example.com"}}), PatchError, r"Additional properties are not allowed \('cc'"),
    (SEND, Modify({"to": "bo@example.com"}), PatchError, r"field 'to' may not be changed in this review; editable fields: args"),
    (SEND, Escalate("over my head"), InvalidDecisionError, r"does not allow 'escalate'; allowed: approve, modify, reject, respond"),
    (DELETE, Modify({"args": {"path": "/tmp/x"}}), InvalidDecisionError, r"review 'call_delete' does not allow 'modify'; allowed: approve, reject"),
    (DELETE, Respond("done by hand"), InvalidDecisionError, r"does not allow 'respond'"),
], ids=["bad argument type", "unknown argument", "not an argument", "escalate", "edit not allowed", "respond not allowed"])
def test_a_refused_decision_changes_nothing(runner: Driven, db: str, ref: str, decision: Decision,
                                            error: type[Exception], message: str) -> None:
    thread = runner.start(BATCHED.name, INPUT).thread_id
    runner.resume(thread, Approve(), review_id=SEND if ref == DELETE else DELETE)   # one decision already given
    before = fingerprint(db, thread)
    with pytest.raises(error, match=message):
        runner.resume(thread, decision, review_id=ref)
    assert fingerprint(db, thread) == before
    assert effects() == []
    assert [r.key for r in runner.pending()] == [ref]


# -- per call: one interrupt per tool call, LangGraph's response_schema honoured ------------------------


def test_per_call_each_interrupt_is_one_review_and_runs_on_its_own(runner: Driven) -> None:
    view = runner.start(PER_CALL.name, INPUT)
    assert [r.key for r in view.reviews] == [SEND, DELETE]
    assert effects() == ["lookup:weather"]   # not gated: the middleware ran it without asking
    send, delete = view.reviews
    assert send.middleware is not None and send.middleware.mode == "per_call"
    assert send.review_id == send.middleware.interrupt_id   # LangGraph's own interrupt id
    assert send.middleware.response_schema is not None   # as LangGraph attached it
    assert delete.allowed == ("approve", "reject")       # what the response_schema allows
    half = runner.resume(view.thread_id, Modify({"args": {"to": "bo@example.com"}}), review_id=SEND)
    assert half.status == "paused" and [r.key for r in half.reviews] == [DELETE]
    assert effects() == ["lookup:weather", "send_email:bo@example.com:hi"]
    done = runner.resume(view.thread_id, Reject("keep it"), review_id=DELETE)
    assert done.status == "done"
    assert effects() == ["lookup:weather", "send_email:bo@example.com:hi"]
    assert "keep it" in tool_messages(done.state)[DELETE]


def test_per_call_decisions_are_checked_against_the_response_schema(runner: Driven) -> None:
    send = runner.start(PER_CALL.name, INPUT).reviews[0]
    assert langchain_agents.answer(send, Modify({"args": {"to": "bo@example.com", "body": "hi"}})) == {
        "type": "edit", "edited_action": {"name": "send_email", "args": {"to": "bo@example.com", "body": "hi"}}}
    # what LangGraph would refuse on resume is refused before anything is recorded
    with pytest.raises(InvalidDecisionError, match=r"response_schema for this tool call refuses edited_action.args.to: "
                                                   r"5 is not of type 'string'"):
        langchain_agents.answer(send, Modify({"args": {"to": 5, "body": "hi"}}))


# -- the other interfaces: the HTTP API and the CLI -------------------------------------------------


def test_the_http_api_lists_and_decides_each_call(db: str, effects_file: object) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread = runner.start(BATCHED.name, INPUT).thread_id
        token = runner.tokens.create("ana").token
        with TestClient(create_app(runner, poll=0.05), headers={"Authorization": f"Bearer {token}"}) as client:
            listed = client.get("/api/reviews").json()
            by_key = {r["key"]: r for r in listed}
            assert sorted(by_key) == [DELETE, SEND]
            refused = client.post(f"/api/threads/{thread}/decision",
                                  json={"review_id": by_key[DELETE]["review_id"], "kind": "modify", "patch": {"args": {}}})
            assert refused.status_code == 422, refused.text
            first = client.post(f"/api/threads/{thread}/decision",
                                json={"review_id": by_key[SEND]["review_id"], "kind": "modify",
                                      "patch": {"args": {"to": "bo@example.com"}}})
            assert first.status_code == 200 and first.json()["status"] == "paused", first.text
            second = client.post(f"/api/threads/{thread}/decision",
                                 json={"review_id": by_key[DELETE]["review_id"], "kind": "reject", "reason": "keep it"})
            assert second.status_code == 200 and second.json()["status"] == "done", second.text
    assert sorted(effects()) == ["lookup:weather", "send_email:bo@example.com:hi"]   # tools run in parallel
    assert [e.actor for e in runner_history(db, thread) if e.event == "decided"] == ["ana", "ana"]


def runner_history(db: str, thread: str) -> list[Any]:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        return runner.history(thread)


def test_the_cli_runs_and_decides_an_agent_in_other_processes(db: str, effects_file: object) -> None:
    run = hitl(db, "run", BATCHED.name, "--json", HITL_APP=APP)
    assert run.returncode == 0, run.stderr
    thread = json.loads(run.stdout)["thread_id"]
    listed = hitl(db, "pending", HITL_APP=APP, COLUMNS="200")
    assert SEND in listed.stdout and DELETE in listed.stdout, listed.stdout
    bad = hitl(db, "modify", thread, "--review", DELETE, "--patch", '{"args": {"path": "/"}}', HITL_APP=APP)
    assert bad.returncode == 1 and "does not allow 'modify'" in bad.stderr, bad.stderr
    edit = hitl(db, "modify", thread, "--review", SEND, "--patch", '{"args": {"to": "bo@example.com"}}', "--json",
                HITL_APP=APP)
    assert edit.returncode == 0 and json.loads(edit.stdout)["status"] == "paused", edit.stderr
    assert effects() == []
    done = hitl(db, "reject", thread, "--review", DELETE, "--reason", "keep it", "--json", HITL_APP=APP)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "done"
    assert sorted(effects()) == ["lookup:weather", "send_email:bo@example.com:hi"]   # tools run in parallel
